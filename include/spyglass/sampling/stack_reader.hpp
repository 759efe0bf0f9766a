// One thread's stack as interned frames: walk (python layer), check the walk against the target
// and validate the code objects in one batched read, resolve names and lines through caches,
// retry a torn read a bounded number of times.
#pragma once

#include <unordered_map>
#include <vector>

#include "spyglass/python/code.hpp"
#include "spyglass/python/interpreter.hpp"
#include "spyglass/sampling/frame_table.hpp"

namespace spyglass::sampling {

struct StackReadOptions {
    bool function_lines = false; // --function: a frame's line is its function's first line
    bool no_lines = false;       // --nolineno
    int retries = 3;             // extra attempts for a stack that changed while it was read
};

enum class StackOutcome : std::uint8_t {
    ok,
    truncated, // the chain could not be read to its end: frames so far + a <truncated> marker
    torn,      // the thread kept changing its stack while it was read, on every attempt
    gone,      // the process or thread exited
};

const char* stack_outcome_name(StackOutcome outcome) noexcept;

struct StackReadStats {
    std::uint64_t stacks = 0;
    std::uint64_t attempts = 0;
    std::uint64_t torn_attempts = 0;
    // Why attempts were torn: the verification read failed, a link changed, a code object did
    // not validate, an instruction offset was outside its code, the chain ended at a generator
    // or coroutine frame with no caller (it yielded while it was read).
    std::uint64_t torn_unreadable = 0, torn_changed = 0, torn_bad_code = 0, torn_bad_offset = 0,
                  torn_suspended = 0;
    std::uint64_t code_misses = 0;
    std::uint64_t code_stale = 0;    // a cached code object whose address was reused
    std::uint64_t resolved_hits = 0; // stacks whose frames came from the resolved-stack cache
};

class StackReader {
  public:
    StackReader(python::PythonProcess& process, FrameTable& frames, StackReadOptions options);

    // How a stack is read: `thread_stopped` when the thread cannot run meanwhile (paused, or
    // stopped by a signal), so that what is read is one moment of it; `retries` overrides the
    // options' count of extra attempts for a torn read.
    struct Attempt {
        bool thread_stopped = false;
        int retries = -1;
    };

    // Reads the stack of `thread` into `out` (innermost first).
    StackOutcome read(python::ThreadRecord thread, std::vector<FrameId>& out, Attempt attempt);
    StackOutcome read(python::ThreadRecord thread, std::vector<FrameId>& out) {
        return read(thread, out, Attempt{});
    }

    // The raw frames of the last read, aligned with what `out` received for frames that were
    // kept (incomplete frames are skipped): for --locals.
    [[nodiscard]] const python::RawStack& last_raw() const noexcept { return raw_; }
    [[nodiscard]] const std::vector<std::uint32_t>& kept_raw_indexes() const noexcept {
        return kept_;
    }
    // The cached code object at `code`, if any.
    [[nodiscard]] const python::CodeInfo* code(process::Address code) const;
    [[nodiscard]] const StackReadStats& stats() const noexcept { return stats_; }

  private:
    struct CodeEntry {
        python::CodeInfo info;
        StringId function = 0;
        StringId file = 0;
        std::unordered_map<std::int32_t, std::int32_t> lines; // offset -> line
    };
    StackOutcome resolve(std::vector<FrameId>& out, bool thread_stopped);
    static StackOutcome torn(std::uint64_t& reason) noexcept {
        ++reason;
        return StackOutcome::torn;
    }
    CodeEntry* load_code(process::Address address, ReadError& error);
    std::int32_t line_of(CodeEntry& entry, std::int32_t offset);

    python::PythonProcess& process_;
    FrameTable& frames_;
    StackReadOptions options_;
    FrameId truncated_marker_;
    python::RawStack raw_;
    python::VerifyBatch batch_;
    std::vector<process::ReadOp> ops_;
    std::vector<process::Address> unique_codes_;
    std::vector<std::uint8_t> headers_;
    std::vector<std::uint32_t> kept_;
    std::unordered_map<process::Address, CodeEntry> codes_;
    // Raw stacks already resolved: (code, offset, flags) of every frame -> the frames. Valid as
    // long as every code entry it used is; cleared whenever one is dropped.
    struct ResolvedStack {
        std::vector<std::pair<process::Address, std::uint64_t>> raw;
        std::vector<FrameId> frames;
        std::vector<std::uint32_t> kept;
    };
    std::unordered_map<std::uint64_t, ResolvedStack> resolved_;
    void forget_resolved() noexcept { resolved_.clear(); }
    StackReadStats stats_;
};

} // namespace spyglass::sampling
