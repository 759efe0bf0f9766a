// --native's feedback from the resolver to the sampling thread: the flags a resolved capture
// gives (native_feedback), the lock-free slots they travel in (NativeFeedback), and what a
// thread's capture settings make of them (NativePolicy: the stack copy's growth, the stop of a
// blocked thread whose unwind without a stop ended early).
#include <algorithm>
#include <memory>

#include <gtest/gtest.h>

#include "spyglass/capture/native_capture.hpp"

namespace spyglass::sampling {
namespace {

constexpr std::uint32_t kCut = NativeFeedback::cut;
constexpr std::uint32_t kShortUnstopped = NativeFeedback::short_unstopped;
constexpr std::uint32_t kShortStopped = NativeFeedback::short_stopped;

TEST(NativePolicy, StackCopyStartsSmallAndGrowsOnceToTheMaximum) {
    NativePolicy policy;
    EXPECT_EQ(policy.stack_copy, native::kMinStackCopy);
    EXPECT_LT(native::kMinStackCopy, native::kMaxStackCopy);

    // Nothing learned: nothing changes, the previous capture may be reused.
    NativePolicy::Change change = policy.learn(0);
    EXPECT_FALSE(change.grown || change.retake);
    EXPECT_EQ(policy.stack_copy, native::kMinStackCopy);

    // A walk that went on to the end of the copy: larger copies, and the thread taken again.
    change = policy.learn(kCut);
    EXPECT_TRUE(change.grown);
    EXPECT_TRUE(change.retake);
    EXPECT_EQ(policy.stack_copy, std::min(2 * native::kMinStackCopy, native::kMaxStackCopy));
    while (policy.stack_copy < native::kMaxStackCopy)
        policy.learn(kCut);
    EXPECT_EQ(policy.stack_copy, native::kMaxStackCopy);

    // At the maximum: no growth, no point in taking the same copy again.
    change = policy.learn(kCut);
    EXPECT_FALSE(change.grown || change.retake);
    EXPECT_EQ(policy.stack_copy, native::kMaxStackCopy);
}

TEST(NativePolicy, ShortUnwindWithoutAStopFallsBackToAStopUntilAStopDoesNotHelp) {
    NativePolicy policy;
    EXPECT_FALSE(policy.stop_when_blocked);

    NativePolicy::Change change = policy.learn(kShortUnstopped);
    EXPECT_TRUE(change.fell_back);
    EXPECT_TRUE(change.retake);
    EXPECT_TRUE(policy.stop_when_blocked);

    // Said again (a capture resolved after the switch): already so.
    change = policy.learn(kShortUnstopped);
    EXPECT_FALSE(change.fell_back || change.retake || change.gave_up);
    EXPECT_TRUE(policy.stop_when_blocked);

    // A stop did not unwind further either: stopping it is given up, for good.
    change = policy.learn(kShortStopped);
    EXPECT_TRUE(change.gave_up);
    EXPECT_FALSE(change.retake);
    EXPECT_FALSE(policy.stop_when_blocked);
    change = policy.learn(kShortUnstopped);
    EXPECT_FALSE(change.fell_back || change.retake);
    EXPECT_FALSE(policy.stop_when_blocked);
}

TEST(NativePolicy, ShortStoppedWithoutTheFallbackChangesNothing) {
    // A blocked thread stopped because it moved while read, its unwind short: not a reason to
    // never fall back later.
    NativePolicy policy;
    NativePolicy::Change change = policy.learn(kShortStopped);
    EXPECT_FALSE(change.gave_up || change.fell_back || change.retake);
    change = policy.learn(kShortUnstopped);
    EXPECT_TRUE(change.fell_back);
}

TEST(NativePolicy, BothAtOnce) {
    NativePolicy policy;
    NativePolicy::Change change = policy.learn(kCut | kShortUnstopped);
    EXPECT_TRUE(change.grown);
    EXPECT_TRUE(change.fell_back);
    EXPECT_TRUE(change.retake);
    // A stop was tried and did not help, and a later no-stop capture said short again: the
    // stop is not tried again.
    change = policy.learn(kShortUnstopped | kShortStopped);
    EXPECT_TRUE(change.gave_up);
    EXPECT_FALSE(policy.stop_when_blocked);
}

UnwindSummary unwound(std::uint32_t evals, std::uint32_t calls, bool copy_end = false) {
    return {.unwound = true,
            .failed = false,
            .reached_copy_end = copy_end,
            .native_evals = evals,
            .python_calls = calls};
}

TEST(NativeFeedbackFlags, FromWhatTheUnwindFound) {
    // No registers (a pause refused, --nonblocking): nothing to learn.
    EXPECT_EQ(native_feedback(UnwindSummary{}, false, false), 0u);
    // Merged: nothing.
    EXPECT_EQ(native_feedback(unwound(3, 3), false, false), 0u);
    EXPECT_EQ(native_feedback(unwound(3, 3), true, true), 0u);
    // One eval call more than the chain (entering or leaving): not short.
    EXPECT_EQ(native_feedback(unwound(4, 3), false, false), 0u);
    // More eval frames than calls (the chain read at another moment): a stop would not help.
    EXPECT_EQ(native_feedback(unwound(5, 0), false, false), 0u);
    // Stopped before the eval frames, the copy not used up: short.
    EXPECT_EQ(native_feedback(unwound(0, 1), false, false), kShortUnstopped);
    EXPECT_EQ(native_feedback(unwound(1, 3), false, false), kShortUnstopped);
    // The same with a stop: of a blocked thread it says the stop did not help; of a running
    // one nothing (running threads are stopped anyway).
    EXPECT_EQ(native_feedback(unwound(0, 1), true, false), kShortStopped);
    EXPECT_EQ(native_feedback(unwound(0, 1), true, true), 0u);
    // Ended at the end of the copy: the copy is too small, whatever the counts.
    EXPECT_EQ(native_feedback(unwound(1, 3, true), false, false), kCut);
    EXPECT_EQ(native_feedback(unwound(3, 3, true), true, true), kCut);
    // No frame at all.
    UnwindSummary failed{.unwound = true, .failed = true};
    EXPECT_EQ(native_feedback(failed, false, false), kShortUnstopped);
    EXPECT_EQ(native_feedback(failed, true, false), kShortStopped);
}

TEST(NativeFeedbackSlots, NoteAndTakePerThread) {
    auto feedback = std::make_unique<NativeFeedback>();
    EXPECT_EQ(feedback->take(7), 0u);
    feedback->note(7, 0); // nothing to say: nothing noted
    EXPECT_EQ(feedback->take(7), 0u);

    feedback->note(7, kCut);
    feedback->note(7, kShortUnstopped);
    EXPECT_EQ(feedback->take(8), 0u); // another thread's slot
    EXPECT_EQ(feedback->take(7), kCut | kShortUnstopped);
    EXPECT_EQ(feedback->take(7), 0u); // taken once

    // Thread 0 is a thread like any other.
    feedback->note(0, kShortStopped);
    EXPECT_EQ(feedback->take(0), kShortStopped);
}

TEST(NativeFeedbackSlots, ThreadsSharingASlotNeverGetEachOthersFlags) {
    auto feedback = std::make_unique<NativeFeedback>();
    // 4096 slots: 5 and 4101 share one.
    feedback->note(5, kCut);
    EXPECT_EQ(feedback->take(4101), 0u);
    EXPECT_EQ(feedback->take(5), kCut);
    feedback->note(5, kCut);
    feedback->note(4101, kShortUnstopped); // replaces 5's: 5 hears it with a later capture
    EXPECT_EQ(feedback->take(5), 0u);
    EXPECT_EQ(feedback->take(4101), kShortUnstopped);
    // Thread numbers past 2^32 / 4096 slots still tell apart.
    const std::uint32_t high = 0xffff'f005u;
    feedback->note(high, kCut);
    EXPECT_EQ(feedback->take(5), 0u);
    EXPECT_EQ(feedback->take(high), kCut);
}

} // namespace
} // namespace spyglass::sampling
