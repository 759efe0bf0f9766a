// Whether a thread ran, from its schedstat: a thread that woke and is on a CPU now may show the
// run time it had when it went to sleep (the kernel brings it up to date at its tick or next
// switch), but never the same number of slices. Real threads of this process, real /proc.
#include <atomic>
#include <thread>

#include <gtest/gtest.h>
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

} // namespace
