// Pausing one thread of another process for as short a time as possible. A thread is seized
// (PTRACE_SEIZE) the first time it must be paused and stays seized for the tracer's life, so a
// pause is one PTRACE_INTERRUPT, one wait and one PTRACE_CONT. SEIZE sends no SIGSTOP: if
// spyglass dies, the kernel detaches every thread and the target runs on.
//
// A seized thread stops for every signal it receives until its tracer lets it go on, so the
// tracer must answer promptly. Each stop sends the tracer SIGCHLD: the sampling thread keeps it
// blocked (TraceeEventsHeld) and takes it in its sleep, wait_tracee_events(), then calls
// service(). Blocked, because a SIGCHLD some thread of ours would take must be delivered by the
// thread that stops, waking or interrupting ours before it leaves its core: ~15 us of every
// pause, measured. A SIGCHLD handler (SA_RESTART) is installed too, for a thread that takes it
// unblocked; take_tracee_events() reports what it saw. Signals are passed on at once, never
// swallowed; a group stop (SIGSTOP, Ctrl-Z) is kept, as the user asked; exits are reaped.
//
// From PTRACE_INTERRUPT to PTRACE_CONT the calling thread runs SCHED_FIFO (priority 1) where it
// may (CAP_SYS_NICE, RLIMIT_RTPRIO), then goes back to its own policy: on a busy host a thread
// of the ordinary class woken by the stop waits milliseconds for its core while the target
// stays stopped (docs/performance.md, section 13).
#pragma once

#include <csignal>
#include <cstdint>
#include <expected>
#include <string>
#include <unordered_map>

#include <sched.h>
#include <sys/types.h>
#include <sys/user.h>

namespace spyglass::process {

class SchedWatch;

enum class PauseFailure : std::uint8_t {
    gone,      // the thread exited
    refused,   // ptrace said no: another tracer is attached, or no permission
    timed_out, // the thread did not stop in time (it will be let go when it does)
};

const char* pause_failure_name(PauseFailure failure) noexcept;

enum class PausePriority : std::uint8_t {
    untried,     // nothing paused yet
    raised,      // SCHED_FIFO during each pause
    unavailable, // refused (no CAP_SYS_NICE), or spyglass runs real-time already
};

class ThreadTracer {
  public:
    // `pid` is the process whose threads are paused.
    explicit ThreadTracer(pid_t pid) noexcept;
    ~ThreadTracer(); // lets every seized thread go, running (or stopped, if the user stopped it)
    ThreadTracer(const ThreadTracer&) = delete;
    ThreadTracer& operator=(const ThreadTracer&) = delete;

    struct PauseHow {
        // Poll for the stop without sleeping at first (for a thread running on another core;
        // one that waits for ours cannot stop until we sleep).
        bool poll_first = true;
    };
    // Stops `tid` and waits until it has stopped: it executes nothing until resume(tid).
    std::expected<void, PauseFailure> pause(pid_t tid, PauseHow how) noexcept;
    std::expected<void, PauseFailure> pause(pid_t tid) noexcept { return pause(tid, PauseHow{}); }
    // How long the last pause held its thread, from its PTRACE_INTERRUPT (after any wait for
    // the thread to get a CPU, or, for a thread that got one only after the interrupt, from that
    // moment, which the scheduler's events tell) to its PTRACE_CONT in resume(): the time the
    // thread was held off a CPU it had.
    [[nodiscard]] std::uint64_t last_pause_ns() const noexcept { return last_pause_ns_; }
    // Lets a thread paused by pause() run again (or stay in the group stop it is in).
    void resume(pid_t tid) noexcept;
    // The registers of a thread paused by pause() (PTRACE_GETREGSET); false if they could not
    // be read.
    bool registers(pid_t tid, user_regs_struct& out) noexcept;

    // Answers the stops nobody asked for: passes signals on, keeps group stops, reaps exits.
    void service() noexcept;

    // Seizes `tid` without stopping it, to learn early whether pausing is possible at all.
    std::expected<void, PauseFailure> probe(pid_t tid) noexcept;

    // With the scheduler's events, a thread that waits for a CPU is interrupted only once it has
    // one, waiting up to `wait_ns` for it (it would stop only then, and stay stopped until the
    // sampling thread runs again): the pause costs the thread what the stop costs. nullptr:
    // interrupted at once.
    void wait_for_core(const SchedWatch* watch, std::uint64_t wait_ns) noexcept {
        watch_ = watch;
        core_wait_ns_ = wait_ns;
    }
    struct CoreWaits {
        std::uint64_t waited = 0;   // pauses that waited for the thread to get a CPU
        std::uint64_t gave_up = 0;  // of them, interrupted without one after wait_ns
        std::uint64_t late_cpu = 0; // timed from a CPU the thread got after the interrupt
    };
    [[nodiscard]] const CoreWaits& core_waits() const noexcept { return core_waits_; }

    // Whether the sampling thread runs SCHED_FIFO while a thread is paused.
    [[nodiscard]] PausePriority pause_priority() const noexcept { return priority_; }

    // Why the last refusal happened, for the user ("process 12 is traced by strace (pid 40)").
    [[nodiscard]] const std::string& refusal() const noexcept { return refusal_; }
    [[nodiscard]] std::size_t seized() const noexcept { return tracees_.size(); }
    [[nodiscard]] pid_t pid() const noexcept { return pid_; }

  private:
    struct Tracee {
        bool paused = false;        // stopped by pause(), not yet resumed
        bool group_stopped = false; // in a group stop (SIGSTOP): PTRACE_LISTEN, never CONT
        bool interrupt_pending = false;
        // Switched in this often when last resumed (with the scheduler's events): while the
        // count has not moved, it waits for a CPU.
        std::uint64_t resumed_switch_ins = 0;
        bool resumed = false;
    };
    enum class Event : std::uint8_t { none, signal_passed, interrupted, group_stop, exited };
    std::expected<void, PauseFailure> seize(pid_t tid) noexcept;
    // Consumes one wait status of `tid` without blocking; passes a signal on at once.
    Event consume(pid_t tid, Tracee& tracee) noexcept;
    std::expected<void, PauseFailure> stop(pid_t tid, PauseHow how) noexcept;
    bool await_core(pid_t tid, const Tracee& tracee) noexcept;
    void detach(pid_t tid, Tracee& tracee) noexcept;
    void raise_priority() noexcept;
    void restore_priority() noexcept;
    void note_refusal(pid_t tid, int err);

    pid_t pid_;
    bool leader_is_our_child_ = false; // launch mode: the leader's exit is the launcher's to reap
    std::unordered_map<pid_t, Tracee> tracees_;
    std::string refusal_;
    const SchedWatch* watch_ = nullptr;
    std::uint64_t core_wait_ns_ = 0;
    CoreWaits core_waits_;
    std::uint64_t stop_began_ns_ = 0;
    std::uint64_t last_pause_ns_ = 0;
    PausePriority priority_ = PausePriority::untried;
    bool raised_ = false;
    int normal_policy_ = SCHED_OTHER;
    sched_param normal_param_{};
};

// True (once) when a traced thread has changed state since the last call: call service().
bool take_tracee_events() noexcept;

// Blocks SIGCHLD on the calling thread while alive (see the top of this file).
class TraceeEventsHeld {
  public:
    TraceeEventsHeld() noexcept;
    ~TraceeEventsHeld();
    TraceeEventsHeld(const TraceeEventsHeld&) = delete;
    TraceeEventsHeld& operator=(const TraceeEventsHeld&) = delete;

  private:
    sigset_t previous_{};
};

enum class TraceeWake : std::uint8_t {
    deadline,     // nothing happened until then
    tracee_event, // a traced thread changed state: call service()
    interrupted,  // a signal handler ran (Ctrl-C, SIGUSR1)
};

// Sleeps until `deadline_ns` (CLOCK_MONOTONIC) or the first of the other wakes. A change that
// came before the call (during a pass) is reported at once, also when the deadline has passed.
TraceeWake wait_tracee_events(std::uint64_t deadline_ns) noexcept;

} // namespace spyglass::process
