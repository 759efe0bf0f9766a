// Whether a thread ran, from its schedstat: a thread that woke and is on a CPU now may show the
// run time it had when it went to sleep (the kernel brings it up to date at its tick or next
// switch), but never the same number of slices. Real threads of this process, real /proc.
#include <atomic>
#include <thread>

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "spyglass/process/procfs.hpp"

namespace {

using spyglass::process::TaskStatReader;

TEST(RunMark, AThreadThatWokeHasMoreSlicesWhateverItsRunTime) {
    int go[2];
    ASSERT_EQ(::pipe(go), 0);
    std::atomic<pid_t> tid{0};
    std::atomic<bool> spinning{false}, stop{false};
    std::thread thread([&] {
        tid = ::gettid();
        char byte;
        if (::read(go[0], &byte, 1) == 1) spinning = true;
        while (!stop.load(std::memory_order_relaxed)) {
        }
    });
    while (tid.load() == 0)
        std::this_thread::yield();
    TaskStatReader reader(::getpid(), tid.load());
    // Asleep in read() first: its state says so.
    for (;;) {
        auto reading = reader.read();
        ASSERT_TRUE(reading.has_value());
        if (reading->state == 'S') break;
        std::this_thread::yield();
    }
    auto asleep = reader.read_run_mark();
    auto again = reader.read_run_mark();
    ASSERT_TRUE(asleep.has_value());
    ASSERT_TRUE(again.has_value());
    EXPECT_EQ(*again, *asleep); // not a single instruction in between
    auto full = reader.read();
    ASSERT_TRUE(full.has_value());
    EXPECT_EQ(full->slices, asleep->slices);
    EXPECT_EQ(full->run_ns, asleep->run_ns);
    // schedstat alone: the same run time, slices and delay as the full reading, no state.
    auto sched = reader.read_schedstat();
    ASSERT_TRUE(sched.has_value());
    EXPECT_EQ(sched->run_ns, full->run_ns);
    EXPECT_EQ(sched->slices, full->slices);
    EXPECT_EQ(sched->delay_ns, full->delay_ns);
    EXPECT_EQ(sched->state, '?');
    EXPECT_EQ(sched->cpu, -1);

    ASSERT_EQ(::write(go[1], "x", 1), 1);
    while (!spinning.load())
        std::this_thread::yield();
    auto woke = reader.read_run_mark();
    stop = true;
    thread.join();
    ::close(go[0]);
    ::close(go[1]);
    ASSERT_TRUE(woke.has_value());
    EXPECT_GT(woke->slices, asleep->slices);
    EXPECT_NE(*woke, *asleep);
}

// The CPU a thread last ran on (stat's 39th field, after a command name that may hold spaces
// and parentheses): this thread, pinned to one CPU, reads as on it.
TEST(RunMark, TheStatReadingSaysWhichCpuTheThreadLastRanOn) {
    cpu_set_t allowed;
    ASSERT_EQ(::sched_getaffinity(0, sizeof allowed, &allowed), 0);
    cpu_set_t before = allowed;
    int last = -1;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
        if (CPU_ISSET(cpu, &allowed)) last = cpu;
    ASSERT_GE(last, 0);
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(last, &one);
    ASSERT_EQ(::sched_setaffinity(0, sizeof one, &one), 0);
    char name[16] = {};
    ::prctl(PR_GET_NAME, name);
    ::prctl(PR_SET_NAME, "a (b) c");
    TaskStatReader reader(::getpid(), ::gettid());
    auto reading = reader.read();
    ::prctl(PR_SET_NAME, name);
    ::sched_setaffinity(0, sizeof before, &before);
    ASSERT_TRUE(reading.has_value());
    EXPECT_EQ(reading->cpu, last);
    EXPECT_EQ(reading->state, 'R');
}

} // namespace
