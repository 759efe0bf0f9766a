// --native's feedback from the resolver to the sampling thread: the flags a resolved capture
// gives (native_feedback), the lock-free slots they travel in (NativeFeedback), and what a
// thread's capture settings make of them (NativePolicy: the stack copy's growth).
#include <algorithm>
#include <memory>

#include <gtest/gtest.h>

#include "spyglass/sampling/native_capture.hpp"

namespace spyglass::sampling {
namespace {

constexpr std::uint32_t kCut = NativeFeedback::cut;

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

TEST(NativeFeedbackFlags, FromWhatTheUnwindFound) {
    // No registers (a pause refused, --nonblocking), or no frame at all: nothing to learn.
    EXPECT_EQ(native_feedback(UnwindSummary{}), 0u);
    EXPECT_EQ(native_feedback({.unwound = true, .failed = true}), 0u);
    // Unwound to its outermost frame inside the copy: nothing.
    EXPECT_EQ(native_feedback({.unwound = true}), 0u);
    // Ended at the end of the copy: the copy is too small.
    EXPECT_EQ(native_feedback({.unwound = true, .reached_copy_end = true}), kCut);
}

TEST(NativeFeedbackSlots, NoteAndTakePerThread) {
    auto feedback = std::make_unique<NativeFeedback>();
    EXPECT_EQ(feedback->take(7), 0u);
    feedback->note(7, 0); // nothing to say: nothing noted
    EXPECT_EQ(feedback->take(7), 0u);

    feedback->note(7, kCut);
    feedback->note(7, kCut);
    EXPECT_EQ(feedback->take(8), 0u); // another thread's slot
    EXPECT_EQ(feedback->take(7), kCut);
    EXPECT_EQ(feedback->take(7), 0u); // taken once

    // Thread 0 is a thread like any other.
    feedback->note(0, kCut);
    EXPECT_EQ(feedback->take(0), kCut);
}

TEST(NativeFeedbackSlots, ThreadsSharingASlotNeverGetEachOthersFlags) {
    auto feedback = std::make_unique<NativeFeedback>();
    // 4096 slots: 5 and 4101 share one.
    feedback->note(5, kCut);
    EXPECT_EQ(feedback->take(4101), 0u);
    EXPECT_EQ(feedback->take(5), kCut);
    feedback->note(5, kCut);
    feedback->note(4101, kCut); // replaces 5's: 5 hears it with a later capture
    EXPECT_EQ(feedback->take(5), 0u);
    EXPECT_EQ(feedback->take(4101), kCut);
    // Thread numbers past 2^32 / 4096 slots still tell apart.
    const std::uint32_t high = 0xffff'f005u;
    feedback->note(high, kCut);
    EXPECT_EQ(feedback->take(5), 0u);
    EXPECT_EQ(feedback->take(high), kCut);
}

} // namespace
} // namespace spyglass::sampling
