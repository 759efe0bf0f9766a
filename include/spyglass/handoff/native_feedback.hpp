// --native: what the resolver learned of a thread's captures, on its way back to the sampling
// thread (the one hand-over against the flow of the capture queue).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

namespace spyglass::sampling {

// What the resolver learned of a thread's latest native captures, left for the sampling
// thread's next capture of that thread: one word per slot holding the thread's session number
// (ThreadCapture::thread, never reused) and the flags. Lock-free; the resolver ORs flags in, the
// sampling thread takes them. Two threads sharing a slot overwrite each other's flags: a flag
// lost that way only comes again with a later capture.
class NativeFeedback {
  public:
    enum Flag : std::uint32_t {
        cut = 1u << 0,             // the unwind went on to the end of the stack copy
        short_unstopped = 1u << 1, // taken without a stop, its unwind ended early
        short_stopped = 1u << 2,   // a blocked thread taken with a stop, its unwind ended early
    };
    void note(std::uint32_t thread, std::uint32_t flags) noexcept;
    // The flags noted for `thread` since it last took them (0: none).
    std::uint32_t take(std::uint32_t thread) noexcept;

  private:
    static constexpr std::size_t kSlots = 4096;
    std::array<std::atomic<std::uint64_t>, kSlots> slots_{};
};

// What the resolver learned of one capture, for its feedback.
struct UnwindSummary {
    bool unwound = false;           // it had registers and the unwinder was asked
    bool failed = false;            // the unwind gave no frame at all
    bool reached_copy_end = false;  // the walk went on to the end of the stack copy
    std::uint32_t native_evals = 0; // eval-loop frames the unwind found
    std::uint32_t python_calls = 0; // eval calls the Python chain ran in
};

// The NativeFeedback flags of a capture. Its unwind ended early when it gave no frame, or
// stopped (not at the end of its copy) before the eval frames its Python frames ran in: only
// registers a stop gives take it further, if anything does.
std::uint32_t native_feedback(const UnwindSummary& unwind, bool stopped, bool on_cpu) noexcept;

} // namespace spyglass::sampling
