#include "spyglass/handoff/native_feedback.hpp"

namespace spyglass::sampling {

namespace {
constexpr std::uint64_t kFlagBits = 0xffff'ffffu;
} // namespace

void NativeFeedback::note(std::uint32_t thread, std::uint32_t flags) noexcept {
    if (flags == 0) return;
    std::atomic<std::uint64_t>& slot = slots_[thread % kSlots];
    const std::uint64_t tag = std::uint64_t{thread} << 32;
    std::uint64_t old = slot.load(std::memory_order_relaxed);
    for (;;) {
        // The thread's own flags are added to; another thread's are replaced.
        const std::uint64_t want = (old & ~kFlagBits) == tag ? old | flags : tag | flags;
        if (slot.compare_exchange_weak(old, want, std::memory_order_relaxed)) return;
    }
}

std::uint32_t NativeFeedback::take(std::uint32_t thread) noexcept {
    std::atomic<std::uint64_t>& slot = slots_[thread % kSlots];
    const std::uint64_t tag = std::uint64_t{thread} << 32;
    std::uint64_t old = slot.load(std::memory_order_relaxed);
    while ((old & kFlagBits) != 0 && (old & ~kFlagBits) == tag)
        if (slot.compare_exchange_weak(old, 0, std::memory_order_relaxed))
            return static_cast<std::uint32_t>(old & kFlagBits);
    return 0;
}

std::uint32_t native_feedback(const UnwindSummary& unwind, bool stopped, bool on_cpu) noexcept {
    if (!unwind.unwound) return 0;
    std::uint32_t flags = 0;
    if (unwind.reached_copy_end) flags |= NativeFeedback::cut;
    // Fewer eval frames than the chain has calls, the copy not used up: the walk stopped at a
    // frame it had no register for (an rbp-based frame above a leaf that did not save rbp).
    // More of them is not that (a chain read at another moment): a stop would not help.
    const bool ended_early =
        unwind.failed || (!unwind.reached_copy_end && unwind.native_evals < unwind.python_calls);
    if (ended_early && !stopped) flags |= NativeFeedback::short_unstopped;
    if (ended_early && stopped && !on_cpu) flags |= NativeFeedback::short_stopped;
    return flags;
}

} // namespace spyglass::sampling
