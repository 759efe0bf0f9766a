// Capturing one thread's Python stack on the sampling thread: walk the frame chain (python
// layer), then check the walk against the target and read the headers of its code objects in
// one batched read, retrying a torn read a bounded number of times. The result is raw frames
// (code address, instruction offset, flags, a hash of the code object's header): no names, no
// lines, no interning — that is the resolver's, after the thread has run on.
#pragma once

#include <cstdint>
#include <vector>

#include "spyglass/handoff/capture_outcome.hpp"
#include "spyglass/python/code.hpp"
#include "spyglass/python/interpreter.hpp"

namespace spyglass::sampling {

struct CaptureStats {
    std::uint64_t stacks = 0;
    std::uint64_t attempts = 0;
    std::uint64_t torn_attempts = 0;
    // Why attempts were torn: the verification read failed, a link changed, an object that
    // should be a code object was not, an instruction offset was outside its code, the chain
    // ended at a generator or coroutine frame with no caller (it yielded while it was read).
    std::uint64_t torn_unreadable = 0, torn_changed = 0, torn_bad_code = 0, torn_bad_offset = 0,
                  torn_suspended = 0;
};

class StackCapturer {
  public:
    StackCapturer(python::PythonProcess& process, int retries);

    struct Attempt {
        bool thread_stopped = false; // it cannot run meanwhile: what is read is one moment
        int retries = -1;            // overrides the default count of extra attempts
    };

    // Captures the stack of `thread` (innermost first) into raw().
    CaptureOutcome capture(python::ThreadRecord thread, Attempt attempt);
    CaptureOutcome capture(python::ThreadRecord thread) { return capture(thread, Attempt{}); }

    // A stopped thread's capture in two halves: walk_stopped() reads its frame chain while it
    // is stopped (that must be one moment of it); finish_stopped() reads and checks the
    // headers of its code objects once it runs again (a running thread does not change them,
    // and one freed meanwhile fails the check as it would in a running read). Together they
    // are capture(thread, {.thread_stopped = true, .retries = 0}), with one read fewer in the
    // pause.
    void walk_stopped(python::ThreadRecord thread);
    CaptureOutcome finish_stopped();

    // Whether `outcome`, of the latest capture, says the thread changed while it was read:
    // torn, or cut short by a failed read (not by the frame limit, which cuts the same way
    // each time). A frame chain that loops is a race only in a thread that was running: up to
    // 3.10 a frame freed and reused mid-read makes a chain that seems to loop, even twice in a
    // row. Read from a thread that was stopped or asleep, the loop was there at one moment:
    // corruption, which a pause would not read any better.
    [[nodiscard]] bool raced(CaptureOutcome outcome) const noexcept {
        return outcome == CaptureOutcome::torn ||
               (outcome == CaptureOutcome::truncated && raw_.end != python::StackEnd::too_deep &&
                (raw_.end != python::StackEnd::cycle || (running_ && !stopped_read_)));
    }
    // Whether the thread to capture next may run while it is read (the sampler's view of it
    // at this pass; dump does not know and says so of every thread).
    void set_thread_running(bool running) noexcept { running_ = running; }

    [[nodiscard]] const python::RawStack& raw() const noexcept { return raw_; }
    [[nodiscard]] const CaptureStats& stats() const noexcept { return stats_; }

  private:
    CaptureOutcome check(bool thread_stopped);
    static CaptureOutcome torn(std::uint64_t& reason) noexcept {
        ++reason;
        return CaptureOutcome::torn;
    }

    python::PythonProcess& process_;
    int retries_;
    bool running_ = false;      // set_thread_running
    bool stopped_read_ = false; // the latest walk was of a stopped thread
    std::size_t header_size_;
    python::RawStack raw_;
    python::VerifyBatch batch_;
    std::vector<process::ReadOp> ops_;
    std::vector<process::Address> unique_codes_;
    std::vector<std::uint32_t> code_of_frame_; // raw frame -> index in unique_codes_
    std::vector<python::CodeHeader> headers_;  // per unique code
    std::vector<std::uint8_t> header_bytes_;
    CaptureStats stats_;
};

} // namespace spyglass::sampling
