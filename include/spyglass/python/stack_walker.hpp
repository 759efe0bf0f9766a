// Walking one thread's chain of Python frames into raw (code object, instruction offset) pairs.
// The walker is chosen once per target (by frame model) and never branches on the version per
// frame. It only collects addresses; names and lines are resolved later, through caches.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "spyglass/process/memory.hpp"
#include "spyglass/python/target.hpp"

namespace spyglass::python {

inline constexpr std::uint32_t kMaxFrames = 4096;

struct RawFrame {
    enum Flags : std::uint8_t {
        entry = 1,     // the outermost frame of one C-level call of the eval loop
        generator = 2, // lives in a generator or coroutine object
        args = 4,      // arg_hash holds its first three local slots (3.11+, frames in a chunk)
    };
    Address code = 0;
    Address frame = 0;       // the frame's own address (for --locals and consistency checks)
    std::int32_t offset = 0; // bytes (up to 3.10) or code units (3.11+); -1 = not started
    std::uint8_t flags = 0;
    // A byte of a hash of each of the frame's first three local slots, where its arguments are
    // (3.11+: localsplus[0..2]), as the walk found them: a different byte at the same frame
    // address and offset is another call of the same code (docs/calls.md). The resolver
    // compares only the slots the code's argcount says are arguments.
    std::uint8_t arg_hash[3] = {0, 0, 0};
    // A hash of the code object's header as the capture read it (0 until then): tells the
    // resolver, later, whether the code object at `code` is still the one that ran.
    std::uint64_t code_check = 0;
    // On the entry frame of a run (3.11+), where known: an address on the C stack inside the
    // eval-loop call that ran the run, for --native to find that call's native frame. 3.12+:
    // the C-stack entry frame that closes the run (a local of _PyEval_EvalFrameDefault); 3.11:
    // on the innermost run only, the thread's _PyCFrame (also a local of it), whose `previous`
    // links lead to the outer runs' in a copy of the stack. 0 when not known.
    Address anchor = 0;
};
static_assert(sizeof(RawFrame) == 40, "a RawFrame travels the capture queue by the thousand");

enum class StackEnd : std::uint8_t {
    complete,     // reached the end of the chain
    read_failed,  // a read failed mid-chain (the frames before it are good)
    cycle,        // a frame pointed back into the chain
    too_deep,     // more than kMaxFrames frames
    corrupt,      // a frame failed validation (wrong type, outside its stack chunk)
    inconsistent, // read at a moment the thread's own state did not agree with itself
};

const char* stack_end_name(StackEnd end) noexcept;

struct ThreadRecord;

// One element of the chain as the walk read it, skipped frames included: the consistency check
// after the walk reads these words again.
struct FrameLink {
    Address frame = 0;
    Address previous = 0;
    Address code = 0; // the word as read (tag bits included)
};

struct RawStack {
    std::array<RawFrame, kMaxFrames> frames; // innermost first
    std::uint32_t depth = 0;
    std::array<FrameLink, kMaxFrames> links; // every frame visited, in chain order
    std::uint32_t link_count = 0;
    StackEnd end = StackEnd::complete;
    ReadError error{Errc::bad_address, 0};
    // Where the thread's innermost-frame pointer lives and what the walk started from: up to
    // 3.10 the verification reads it again (a frame that has returned still holds a plausible
    // f_back = NULL, so only the head tells a stale walk from a live one).
    Address head_slot = 0;
    Address head = 0;
    Address tstate = 0; // the thread state walked

    void clear() noexcept {
        depth = 0;
        link_count = 0;
        end = StackEnd::complete;
    }
    [[nodiscard]] bool truncated() const noexcept { return end != StackEnd::complete; }
};

// Reads done after a walk, batched with the resolver's own validation reads: the memory the
// walk's links came from, read again. If a link changed, the walk may mix two states of the
// thread (a torn stack); if none did, the chain was the thread's stack at one moment, even if
// the thread has moved on since.
struct VerifyBatch {
    struct Region {
        Address address;
        std::uint32_t length;
        std::uint32_t offset; // into bytes
    };
    std::vector<Region> regions;
    std::vector<std::uint8_t> bytes; // grows, never shrinks: no zero-filling per sample
    std::size_t used = 0;

    void clear() noexcept {
        regions.clear();
        used = 0;
    }
    // Reserves a region; its bytes are filled by the batch.
    void add(Address address, std::uint32_t length) {
        regions.push_back({address, length, static_cast<std::uint32_t>(used)});
        used += length;
        if (bytes.size() < used) bytes.resize(std::max(used, 2 * bytes.size()));
    }
};

class StackWalker {
  public:
    virtual ~StackWalker() = default;
    // Walks the thread's frame chain into `out` (cleared first). Never fails as a whole: a read
    // error mid-chain ends the stack with StackEnd::read_failed and keeps the frames so far.
    virtual void walk(const ThreadRecord& thread, RawStack& out) = 0;
    // Adds the regions to read again after the walk.
    virtual void add_verification(const RawStack& stack, VerifyBatch& batch) const = 0;
    // After those regions were read: does every link still say what the walk saw?
    [[nodiscard]] virtual bool verify(const RawStack& stack, const VerifyBatch& batch) const = 0;
    // Reads to add to the batch that reads the thread list: the current chunk of each thread
    // walked since the previous batch, where it was then, so that the thread's next walk needs
    // no read of its own when the chunk has not moved. Only for threads whose state that batch
    // reads (`tstates`), after those reads: the chunk is copied after its frame pointer was read.
    virtual void add_prefetch(std::span<const Address> /*tstates*/,
                              std::vector<process::ReadOp>& /*ops*/) {}
    // Whether that batch was read.
    virtual void prefetch_done(bool /*read*/) {}
    // The state of `tstate` was read again since: what the batch holds for it is dropped.
    virtual void prefetch_forget(Address /*tstate*/) {}
};

// The walker for the target's frame model.
std::unique_ptr<StackWalker> make_stack_walker(process::RemoteMemory& memory,
                                               const TargetInfo& target);

} // namespace spyglass::python
