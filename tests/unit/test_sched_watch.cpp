// The scheduler's events from the live kernel (perf_event_open, root or CAP_PERFMON): skipped
// with the reason where the kernel refuses.
#include <atomic>
#include <chrono>
#include <thread>

#include <gtest/gtest.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include "spyglass/process/sched_watch.hpp"

namespace spyglass::process {
namespace {

// Sleeps and wakes on CPU 0 for `how_long`: four switch records a round trip on that CPU's ring.
void churn_on_cpu0(std::chrono::milliseconds how_long) {
    cpu_set_t previous, only0;
    ASSERT_EQ(::sched_getaffinity(0, sizeof previous, &previous), 0);
    CPU_ZERO(&only0);
    CPU_SET(0, &only0);
    ASSERT_EQ(::sched_setaffinity(0, sizeof only0, &only0), 0);
    const auto end = std::chrono::steady_clock::now() + how_long;
    const timespec tiny{0, 1000};
    while (std::chrono::steady_clock::now() < end)
        ::nanosleep(&tiny, nullptr);
    ASSERT_EQ(::sched_setaffinity(0, sizeof previous, &previous), 0);
}

class SchedWatchLive : public ::testing::Test {
  protected:
    void SetUp() override {
        watch_ = SchedWatch::open();
        if (!watch_) GTEST_SKIP() << "perf_event_open refused (needs root or CAP_PERFMON)";
        watch_->follow(::getpid());
    }
    std::unique_ptr<SchedWatch> watch_;
};

TEST_F(SchedWatchLive, AThreadThatSleptAndWokeIsSeenToHaveRun) {
    ASSERT_TRUE(watch_->poll());
    churn_on_cpu0(std::chrono::milliseconds(2));
    ASSERT_TRUE(watch_->poll()) << "a ring with 2 ms of switches on it was taken as overflowed";
    EXPECT_EQ(watch_->seen(::gettid()), SchedWatch::Seen::ran);
    EXPECT_TRUE(watch_->on_cpu_since(::gettid()).has_value());
}

// A ring that filled up has dropped records, and the kernel says so (PERF_RECORD_LOST) only
// after the reader frees room: the poll that finds it full must not take what it read as the
// whole story, and nothing it knew of a thread may survive (a lost switch out would leave the
// thread "on a CPU since T" for good).
TEST_F(SchedWatchLive, AFullRingIsALostPollAndForgetsTheThreads) {
    ASSERT_TRUE(watch_->poll());
    churn_on_cpu0(std::chrono::milliseconds(2));
    ASSERT_TRUE(watch_->poll());
    ASSERT_NE(watch_->seen(::gettid()), SchedWatch::Seen::unknown);
    const std::uint64_t lost_before = watch_->lost_polls();
    churn_on_cpu0(std::chrono::milliseconds(400)); // far more than one CPU's ring holds
    EXPECT_FALSE(watch_->poll());
    EXPECT_EQ(watch_->lost_polls(), lost_before + 1);
    EXPECT_EQ(watch_->seen(::gettid()), SchedWatch::Seen::unknown);
    EXPECT_FALSE(watch_->on_cpu_since(::gettid()).has_value());
}

} // namespace
} // namespace spyglass::process
