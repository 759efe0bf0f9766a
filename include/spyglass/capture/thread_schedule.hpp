// What the scheduler showed of one thread, pass after pass: whether it ran since its previous
// sample, whether it is on a CPU (or waiting for one), its CPU time meanwhile. From the
// scheduler's events where they tell (no system call), else from its schedstat alone (one
// short pread), else from its stat: the cheapest read that answers.
#pragma once

#include <cstdint>
#include <expected>
#include <optional>

#include <sys/types.h>

#include "spyglass/error.hpp"
#include "spyglass/process/procfs.hpp"
#include "spyglass/process/sched_watch.hpp"
#include "spyglass/process/thread_tracer.hpp"

namespace spyglass::sampling {

struct ScheduleQuery {
    process::SchedWatch* sched = nullptr; // this pass's events, when none were lost
    bool reuse_idle = true;               // a thread known not to have run is not read again
    bool want_last_cpu = false;           // --native: the CPU it last ran on (stat's) is wanted
    // A wait reason is to be read for the first time: the real state letter (D, T) is wanted,
    // not 'S' inferred from a run time that did not move.
    bool want_state_letter = false;
    // A thread found stopped by ptrace ('t') with this tracer holding threads is ours, with a
    // signal waiting to be passed on: passed on (once a pass: `serviced`), then read again.
    process::ThreadTracer* tracer = nullptr;
    bool* serviced = nullptr;
    std::uint64_t now_ns = 0; // this pass's time (CLOCK_MONOTONIC); 0: not given
};

class ThreadSchedule {
  public:
    // This pass's view of the thread.
    struct Pass {
        char state = 0;                  // /proc's state letter, read or inferred
        bool on_cpu = false;             // running or runnable ('R')
        bool ran = false;                // it ran since its previous sample (or is new)
        bool starved = false;            // runnable, and waited for a CPU more than it ran
        bool idle_by_events = false;     // the events said it had not run: nothing read
        bool runnable_by_events = false; // the events said 'R': schedstat alone read
        bool running_by_events = false;  // on one CPU since its previous pass: nothing read
        std::uint64_t cpu_ns = 0;        // CPU time since its previous sample
    };
    // Fails as the reader does: process_gone (it exited), io (out of descriptors).
    std::expected<Pass, Errc> observe(process::TaskStatReader& stat, pid_t tid,
                                      const ScheduleQuery& query);

    // As of the latest observe():
    [[nodiscard]] const process::TaskStatReader::RunMark& run() const noexcept { return run_; }
    [[nodiscard]] bool on_cpu() const noexcept { return on_cpu_; }
    [[nodiscard]] int last_cpu() const noexcept { return cpu_; } // -1: not read this pass

  private:
    // The run mark of a thread that the events show on a CPU without a break since the previous
    // pass: that pass's mark plus the time between the two.
    std::optional<process::TaskStatReader::RunMark> run_on(const ScheduleQuery& query,
                                                           pid_t tid) const;
    // The reading of a thread whose state the events did not give.
    std::expected<process::TaskStatReader::Reading, Errc> read_stat(process::TaskStatReader& stat,
                                                                    const ScheduleQuery& query);

    process::TaskStatReader::RunMark run_{}; // schedstat at the previous pass
    std::uint64_t delay_ns_ = 0;             // time runnable, at the last read of it
    bool have_run_ = false;
    bool have_delay_ = false;
    bool on_cpu_ = false;                // at the previous pass
    int cpu_ = -1;                       // the CPU it last ran on, when its stat was read then
    bool starved_ = false;               // at the previous pass: runnable, not running
    std::uint64_t pass_ns_ = 0;          // the previous pass's time (0: not given)
    std::optional<std::uint64_t> since_; // on a CPU since then, at the previous pass (events)
    // At the previous pass's poll the thread held a CPU (the events' view; without them, its
    // state letter's): it may have run on after that poll.
    bool running_at_poll_ = true;
};

} // namespace spyglass::sampling
