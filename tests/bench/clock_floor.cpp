// What a sampler's clock alone costs on this machine: sleep to absolute deadlines at a rate,
// do nothing, and report CPU time per tick. scripts/bench subtracts it to show what spyglass
// itself adds per sample (on a VM, waking up 1000 times a second is not free).
//
//   spyglass_clock_floor [RATE [TICKS [nanosleep|sigwait]]]
//
// sigwait (the default) sleeps as spyglass's session does: SIGCHLD blocked, sigtimedwait for
// it with the time left to the deadline. nanosleep: clock_nanosleep(TIMER_ABSTIME).
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include <sys/prctl.h>
#include <sys/resource.h>

int main(int argc, char** argv) {
    double rate = argc > 1 ? std::atof(argv[1]) : 1000;
    long ticks = argc > 2 ? std::atol(argv[2]) : 3000;
    const bool sigwait = argc <= 3 || std::strcmp(argv[3], "nanosleep") != 0;
    sigset_t child;
    sigemptyset(&child);
    sigaddset(&child, SIGCHLD);
    if (sigwait) sigprocmask(SIG_BLOCK, &child, nullptr);
    ::prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0); // as spyglass does
    auto period = static_cast<long long>(1e9 / rate);
    timespec now{};
    clock_gettime(CLOCK_MONOTONIC, &now);
    long long deadline = now.tv_sec * 1000000000LL + now.tv_nsec;
    for (long i = 0; i < ticks; ++i) {
        deadline += period;
        timespec at{static_cast<time_t>(deadline / 1000000000LL),
                    static_cast<long>(deadline % 1000000000LL)};
        if (sigwait) {
            clock_gettime(CLOCK_MONOTONIC, &now);
            long long left = deadline - (now.tv_sec * 1000000000LL + now.tv_nsec);
            if (left < 0) left = 0;
            timespec timeout{static_cast<time_t>(left / 1000000000LL),
                             static_cast<long>(left % 1000000000LL)};
            sigtimedwait(&child, nullptr, &timeout);
        } else {
            clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, nullptr);
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
    }
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    double cpu_us = (usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) * 1e6 + usage.ru_utime.tv_usec +
                    usage.ru_stime.tv_usec;
    std::printf("%.3f\n", cpu_us / static_cast<double>(ticks));
    return 0;
}
