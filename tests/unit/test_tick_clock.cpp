// The sampling clock (TickClock): ticks a period apart from the start, the duration's end taken
// as the last wake-up, late passes skipping the ticks they missed, jitter within a quarter
// period. Times are given, not read: no sleeping.
#include <gtest/gtest.h>

#include "spyglass/sampling/tick_clock.hpp"

namespace {

using spyglass::sampling::TickClock;

constexpr std::uint64_t kClockStart = 1'000'000'000;
constexpr std::uint64_t kTickMs = 1'000'000;

TEST(TickClock, TicksArePeriodsFromTheStart) {
    TickClock clock(10 * kTickMs, 0, false);
    clock.start(kClockStart);
    for (std::uint64_t tick = 0; tick < 5; ++tick) {
        ASSERT_EQ(clock.wake_at(), kClockStart + tick * 10 * kTickMs);
        // Woken a little late: no tick missed, and never over without a duration.
        EXPECT_FALSE(clock.over(kClockStart + tick * 10 * kTickMs + kTickMs));
        EXPECT_EQ(clock.take(kClockStart + tick * 10 * kTickMs + kTickMs), 0u);
    }
    EXPECT_EQ(clock.tick(), 5u);
}

TEST(TickClock, ALatePassSkipsTheWholeTicksItMissed) {
    TickClock clock(10 * kTickMs, 0, false);
    clock.start(kClockStart);
    ASSERT_EQ(clock.wake_at(), kClockStart);
    // Woken 35 ms after tick 0's deadline: ticks 1, 2 and 3 were missed.
    EXPECT_EQ(clock.take(kClockStart + 35 * kTickMs), 3u);
    EXPECT_EQ(clock.wake_at(), kClockStart + 40 * kTickMs);
    // Late by less than a period: nothing skipped.
    EXPECT_EQ(clock.take(kClockStart + 49 * kTickMs), 0u);
    EXPECT_EQ(clock.wake_at(), kClockStart + 50 * kTickMs);
}

TEST(TickClock, TheRecordingEndsAtItsDurationNotAtTheNextTick) {
    TickClock clock(10 * kTickMs, 25 * kTickMs, false);
    clock.start(kClockStart);
    EXPECT_EQ(clock.end_ns(), kClockStart + 25 * kTickMs);
    // Tick 0 is always taken, even woken past the end.
    ASSERT_EQ(clock.wake_at(), kClockStart);
    EXPECT_FALSE(clock.over(kClockStart + 30 * kTickMs));
    clock.take(kClockStart);
    ASSERT_EQ(clock.wake_at(), kClockStart + 10 * kTickMs);
    EXPECT_FALSE(clock.over(kClockStart + 10 * kTickMs));
    clock.take(kClockStart + 10 * kTickMs);
    ASSERT_EQ(clock.wake_at(), kClockStart + 20 * kTickMs);
    EXPECT_FALSE(clock.over(kClockStart + 20 * kTickMs));
    // Woken late, past the end: over.
    EXPECT_TRUE(clock.over(kClockStart + 26 * kTickMs));
    clock.take(kClockStart + 20 * kTickMs);
    // Tick 3 (30 ms) is past the end: the wake-up is the end itself, and it ends the recording.
    EXPECT_EQ(clock.wake_at(), kClockStart + 25 * kTickMs);
    EXPECT_TRUE(clock.over(kClockStart + 25 * kTickMs));
}

TEST(TickClock, JitterStaysWithinAQuarterPeriodAndSpreads) {
    TickClock clock(8 * kTickMs, 0, true);
    clock.start(kClockStart);
    EXPECT_EQ(clock.wake_at(), kClockStart); // tick 0 is not jittered
    clock.take(kClockStart);
    std::uint64_t earlier = 0, later = 0;
    for (std::uint64_t tick = 1; tick < 200; ++tick) {
        const std::uint64_t due = kClockStart + tick * 8 * kTickMs;
        const std::uint64_t wake = clock.wake_at();
        ASSERT_GE(wake, due - 2 * kTickMs) << "tick " << tick;
        ASSERT_LE(wake, due + 2 * kTickMs) << "tick " << tick;
        earlier += wake < due;
        later += wake > due;
        EXPECT_EQ(clock.take(wake), 0u);
    }
    EXPECT_GT(earlier, 50u);
    EXPECT_GT(later, 50u);
}

} // namespace
