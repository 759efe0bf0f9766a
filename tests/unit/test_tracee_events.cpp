// How the sampling thread hears of its tracees: each stop sends SIGCHLD. While it is held
// (TraceeEventsHeld, the sampling thread's whole recording) it is blocked, so no handler runs
// for it and the stopping thread never has to wake or interrupt ours, and the sleep,
// wait_tracee_events(), still reports it, also one that came before the sleep began. The tracee is
// a child of this test that spins, or takes SIGUSR1 and says so on a pipe.
#include <atomic>
#include <csignal>
#include <cstdint>

#include <gtest/gtest.h>
#include <poll.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spyglass/clock.hpp"
#include "spyglass/process/thread_tracer.hpp"

namespace {

using namespace spyglass;
using process::TraceeWake;

int signalled_fd = -1;

void on_usr1(int) {
    const char byte = 'u';
    ssize_t ignored = ::write(signalled_fd, &byte, 1);
    (void)ignored;
}

// A child that spins until killed; SIGUSR1 makes it write one byte to `signalled`.
struct SpinningChild {
    pid_t pid = -1;
    int signalled[2] = {-1, -1};

    SpinningChild() {
        EXPECT_EQ(::pipe(signalled), 0);
        int ready[2];
        EXPECT_EQ(::pipe(ready), 0);
        pid = ::fork();
        if (pid == 0) {
            signalled_fd = signalled[1];
            std::signal(SIGUSR1, on_usr1);
            const char byte = 'r';
            ssize_t ignored = ::write(ready[1], &byte, 1);
            (void)ignored;
            for (;;)
                asm volatile("" ::: "memory");
        }
        ::close(ready[1]);
        char byte = 0;
        EXPECT_EQ(::read(ready[0], &byte, 1), 1); // the handler is in place
        ::close(ready[0]);
    }
    ~SpinningChild() {
        ::kill(pid, SIGKILL);
        int status = 0;
        ::waitpid(pid, &status, __WALL);
        ::close(signalled[0]);
        ::close(signalled[1]);
    }
};

std::uint64_t in_ms(unsigned ms) {
    return monotonic_ns() + std::uint64_t{ms} * 1'000'000u;
}

// Forgets what an earlier test's children left (the exit of one is a SIGCHLD too).
void forget_earlier_events() {
    while (process::wait_tracee_events(0) != TraceeWake::deadline) {
    }
}

std::atomic<int> handled{0};
void count_handled(int) {
    handled.fetch_add(1);
}

TEST(TraceeEvents, AHeldStopRunsNoHandlerAndTheSleepStillReportsIt) {
    SpinningChild child;
    process::TraceeEventsHeld held;
    forget_earlier_events();
    sigset_t mask;
    ASSERT_EQ(pthread_sigmask(SIG_BLOCK, nullptr, &mask), 0);
    EXPECT_TRUE(sigismember(&mask, SIGCHLD));
    {
        process::ThreadTracer tracer(child.pid);
        ASSERT_TRUE(tracer.probe(child.pid).has_value()); // installs spyglass's handler
        // ... which this test replaces with one that counts.
        struct sigaction counting {
        }, previous{};
        counting.sa_handler = count_handled;
        sigemptyset(&counting.sa_mask);
        ASSERT_EQ(sigaction(SIGCHLD, &counting, &previous), 0);
        ASSERT_TRUE(tracer.pause(child.pid).has_value());
        tracer.resume(child.pid);
        // The stop is reported (its SIGCHLD pending, or taken by the wait for the stop, which
        // leaves word of it), at once, though it came before the sleep...
        EXPECT_EQ(process::wait_tracee_events(in_ms(60'000)), TraceeWake::tracee_event);
        EXPECT_EQ(process::wait_tracee_events(in_ms(1)), TraceeWake::deadline);
        // ... and no handler ran for it.
        EXPECT_EQ(handled.load(), 0);
        sigaction(SIGCHLD, &previous, nullptr);
    }
}

TEST(TraceeEvents, ASignalForATraceeWakesTheSleepAndIsPassedOnByService) {
    SpinningChild child;
    process::TraceeEventsHeld held;
    forget_earlier_events();
    process::ThreadTracer tracer(child.pid);
    ASSERT_TRUE(tracer.probe(child.pid).has_value());
    ASSERT_EQ(::kill(child.pid, SIGUSR1), 0);
    // The child stops with the signal and waits for its tracer; the sleep hears of it long
    // before its deadline (it would otherwise return `deadline` after a minute).
    ASSERT_EQ(process::wait_tracee_events(in_ms(60'000)), TraceeWake::tracee_event);
    tracer.service();
    pollfd signalled{child.signalled[0], POLLIN, 0};
    ASSERT_EQ(::poll(&signalled, 1, 60'000), 1) << "the signal was not passed on";
    char byte = 0;
    EXPECT_EQ(::read(child.signalled[0], &byte, 1), 1); // the child got it and ran its handler
    EXPECT_EQ(byte, 'u');
}

TEST(TraceeEvents, NotHeldTheHandlerNotesTheStop) {
    SpinningChild child;
    forget_earlier_events();
    process::ThreadTracer tracer(child.pid);
    ASSERT_TRUE(tracer.pause(child.pid).has_value());
    tracer.resume(child.pid);
    // SIGCHLD unblocked on this (the only) thread: its handler has run by the time the stop
    // is seen, or runs at the latest as the sleep begins.
    EXPECT_EQ(process::wait_tracee_events(in_ms(60'000)), TraceeWake::tracee_event);
}

// On a busy host a sampling thread of the ordinary class, woken by the stop, waits milliseconds
// for its core while the target stays stopped: during a pause it runs SCHED_FIFO, and after it,
// its own policy again.
TEST(TraceeEvents, ThePausingThreadRunsRealTimeOnlyWhileTheThreadIsStopped) {
    SpinningChild child;
    process::TraceeEventsHeld held;
    const int before = ::sched_getscheduler(0);
    ASSERT_NE(before & ~SCHED_RESET_ON_FORK, SCHED_FIFO);
    process::ThreadTracer tracer(child.pid);
    ASSERT_TRUE(tracer.pause(child.pid).has_value());
    const int during = ::sched_getscheduler(0);
    tracer.resume(child.pid);
    if (tracer.pause_priority() == process::PausePriority::unavailable)
        GTEST_SKIP() << "SCHED_FIFO refused here (no CAP_SYS_NICE)";
    EXPECT_EQ(during & ~SCHED_RESET_ON_FORK, SCHED_FIFO);
    EXPECT_EQ(::sched_getscheduler(0), before);
    forget_earlier_events();
}

} // namespace
