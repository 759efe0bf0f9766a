// The sampling clock (TickClock): ticks a period apart from the start, the duration's end taken
// as the last wake-up, late passes skipping the ticks they missed, jitter within a quarter
// period. Times are given, not read: no sleeping.
#include <gtest/gtest.h>

#include "spyglass/sampling/tick_clock.hpp"

namespace {

using spyglass::sampling::TickClock;

constexpr std::uint64_t kStart = 1'000'000'000;
constexpr std::uint64_t kMs = 1'000'000;

TEST(TickClock, TicksArePeriodsFromTheStart) {
    TickClock clock(10 * kMs, 0, false);
    clock.start(kStart);
    for (std::uint64_t tick = 0; tick < 5; ++tick) {
        ASSERT_EQ(clock.wake_at(), kStart + tick * 10 * kMs);
        // Woken a little late: no tick missed, and never over without a duration.
        EXPECT_FALSE(clock.over(kStart + tick * 10 * kMs + kMs));
        EXPECT_EQ(clock.take(kStart + tick * 10 * kMs + kMs), 0u);
    }
    EXPECT_EQ(clock.tick(), 5u);
}

TEST(TickClock, ALatePassSkipsTheWholeTicksItMissed) {
    TickClock clock(10 * kMs, 0, false);
    clock.start(kStart);
    ASSERT_EQ(clock.wake_at(), kStart);
    // Woken 35 ms after tick 0's deadline: ticks 1, 2 and 3 were missed.
    EXPECT_EQ(clock.take(kStart + 35 * kMs), 3u);
    EXPECT_EQ(clock.wake_at(), kStart + 40 * kMs);
    // Late by less than a period: nothing skipped.
    EXPECT_EQ(clock.take(kStart + 49 * kMs), 0u);
    EXPECT_EQ(clock.wake_at(), kStart + 50 * kMs);
}

TEST(TickClock, TheRecordingEndsAtItsDurationNotAtTheNextTick) {
    TickClock clock(10 * kMs, 25 * kMs, false);
    clock.start(kStart);
    EXPECT_EQ(clock.end_ns(), kStart + 25 * kMs);
    // Tick 0 is always taken, even woken past the end.
    ASSERT_EQ(clock.wake_at(), kStart);
    EXPECT_FALSE(clock.over(kStart + 30 * kMs));
    clock.take(kStart);
    ASSERT_EQ(clock.wake_at(), kStart + 10 * kMs);
    EXPECT_FALSE(clock.over(kStart + 10 * kMs));
    clock.take(kStart + 10 * kMs);
    ASSERT_EQ(clock.wake_at(), kStart + 20 * kMs);
    EXPECT_FALSE(clock.over(kStart + 20 * kMs));
    // Woken late, past the end: over.
    EXPECT_TRUE(clock.over(kStart + 26 * kMs));
    clock.take(kStart + 20 * kMs);
    // Tick 3 (30 ms) is past the end: the wake-up is the end itself, and it ends the recording.
    EXPECT_EQ(clock.wake_at(), kStart + 25 * kMs);
    EXPECT_TRUE(clock.over(kStart + 25 * kMs));
}

TEST(TickClock, JitterStaysWithinAQuarterPeriodAndSpreads) {
    TickClock clock(8 * kMs, 0, true);
    clock.start(kStart);
    EXPECT_EQ(clock.wake_at(), kStart); // tick 0 is not jittered
    clock.take(kStart);
    std::uint64_t earlier = 0, later = 0;
    for (std::uint64_t tick = 1; tick < 200; ++tick) {
        const std::uint64_t due = kStart + tick * 8 * kMs;
        const std::uint64_t wake = clock.wake_at();
        ASSERT_GE(wake, due - 2 * kMs) << "tick " << tick;
        ASSERT_LE(wake, due + 2 * kMs) << "tick " << tick;
        earlier += wake < due;
        later += wake > due;
        EXPECT_EQ(clock.take(wake), 0u);
    }
    EXPECT_GT(earlier, 50u);
    EXPECT_GT(later, 50u);
}

} // namespace
