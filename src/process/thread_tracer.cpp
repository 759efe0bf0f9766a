#include "spyglass/process/thread_tracer.hpp"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <ctime>
#include <mutex>
#include <vector>

#include <elf.h>
#include <fmt/format.h>
#include <sched.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spyglass/clock.hpp"
#include "spyglass/process/procfs.hpp"
#include "spyglass/process/sched_watch.hpp"

namespace spyglass::process {

namespace {

constexpr std::uint64_t kPauseTimeoutNs = 50'000'000;   // a running thread stops in microseconds
constexpr std::uint64_t kDetachTimeoutNs = 500'000'000; // before giving a thread up as stuck
constexpr std::uint64_t kSpinNs = 60'000;               // polls without sleeping, first

std::atomic<bool> tracee_events{false};

void on_child_signal(int) {
    tracee_events.store(true, std::memory_order_relaxed);
}

void install_child_handler() {
    static std::once_flag once;
    std::call_once(once, [] {
        struct sigaction action {};
        action.sa_handler = on_child_signal;
        // SA_RESTART: reads and writes carry on; clock_nanosleep is cut short regardless,
        // which is what wakes the sampling thread. No SA_NOCLDSTOP: tracee stops must wake it.
        action.sa_flags = SA_RESTART;
        sigemptyset(&action.sa_mask);
        sigaction(SIGCHLD, &action, nullptr);
    });
}

sigset_t child_signal() noexcept {
    sigset_t child;
    sigemptyset(&child);
    sigaddset(&child, SIGCHLD);
    return child;
}

// Waits a little between polls. For the first few tens of microseconds, not at all: a thread
// on another core stops in about 20 us (measured on a 2-vCPU VM), and a sleep, however short,
// lets the sampler's core go idle and costs a wake-up. After that (or at once, for a thread
// that waits for our core) a short sleep that the stop's SIGCHLD ends: a thread sharing our
// core runs when we sleep and wakes us as it stops. Never sched_yield: a yielding thread stays
// runnable, so whatever shares its core runs on until the next tick, milliseconds. (A blocking
// waitid, woken as the thread stops, brought the milliseconds back, measured.)
void back_off(unsigned& polls, std::uint64_t since_ns) {
    if (monotonic_ns() - since_ns < kSpinNs) return;
    const timespec step{0, ++polls < 64 ? 2'000 : 20'000};
    const sigset_t child = child_signal();
    // The SIGCHLD taken here may be another tracee's: the session's sleep services them all.
    if (sigtimedwait(&child, nullptr, &step) == SIGCHLD)
        tracee_events.store(true, std::memory_order_relaxed);
}

// A thread that has exited (a zombie on its way out, or gone) cannot be seized either: the
// kernel says EPERM for it, as it does when permission is refused.
bool exited(pid_t pid, pid_t tid) {
    auto text = read_small_file(fmt::format("/proc/{}/task/{}/stat", pid, tid));
    if (!text) return true;
    std::size_t close = text->rfind(')');
    if (close == std::string::npos || close + 2 >= text->size()) return false;
    const char state = (*text)[close + 2];
    return state == 'Z' || state == 'X';
}

bool is_stop_signal(int sig) {
    return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

// Threads that could not be let go before their tracer was destroyed (they did not stop in
// time): they are detached whenever they do stop.
std::mutex leftovers_mutex;
std::vector<pid_t> leftovers;

void service_leftovers() noexcept {
    std::lock_guard lock(leftovers_mutex);
    std::erase_if(leftovers, [](pid_t tid) {
        int status = 0;
        pid_t got = ::waitpid(tid, &status, WNOHANG | __WALL);
        if (got == 0) return false;
        if (got < 0 || WIFEXITED(status) || WIFSIGNALED(status)) return true;
        int sig = WSTOPSIG(status);
        bool signal_stop = (status >> 16) == 0;
        ::ptrace(PTRACE_DETACH, tid, nullptr,
                 reinterpret_cast<void*>(static_cast<long>(signal_stop ? sig : 0)));
        return true;
    });
}

} // namespace

const char* pause_failure_name(PauseFailure failure) noexcept {
    switch (failure) {
    case PauseFailure::gone:
        return "the thread exited";
    case PauseFailure::refused:
        return "ptrace refused";
    case PauseFailure::timed_out:
        return "the thread did not stop in time";
    }
    return "?";
}

bool take_tracee_events() noexcept {
    bool events = tracee_events.exchange(false, std::memory_order_relaxed);
    if (events) service_leftovers();
    return events;
}

TraceeEventsHeld::TraceeEventsHeld() noexcept {
    sigset_t child = child_signal();
    pthread_sigmask(SIG_BLOCK, &child, &previous_);
}

TraceeEventsHeld::~TraceeEventsHeld() {
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
}

TraceeWake wait_tracee_events(std::uint64_t deadline_ns) noexcept {
    if (take_tracee_events()) return TraceeWake::tracee_event;
    const std::uint64_t now = monotonic_ns();
    const std::uint64_t left = deadline_ns > now ? deadline_ns - now : 0;
    const timespec timeout{static_cast<time_t>(left / 1'000'000'000u),
                           static_cast<long>(left % 1'000'000'000u)};
    const sigset_t child = child_signal();
    // The timer slack is the thread's own (the session sets 1 ns), as for clock_nanosleep.
    const int got = sigtimedwait(&child, nullptr, &timeout);
    if (got == SIGCHLD) {
        service_leftovers();
        return TraceeWake::tracee_event;
    }
    if (got < 0 && errno == EINTR) return TraceeWake::interrupted;
    return TraceeWake::deadline;
}

ThreadTracer::ThreadTracer(pid_t pid) noexcept : pid_(pid) {
    auto stat = read_stat(pid);
    leader_is_our_child_ = stat && stat->ppid == ::getpid();
}

ThreadTracer::~ThreadTracer() {
    for (auto& [tid, tracee] : tracees_)
        detach(tid, tracee);
    restore_priority();
}

void ThreadTracer::note_refusal(pid_t tid, int err) {
    std::string status =
        read_small_file(fmt::format("/proc/{}/task/{}/status", pid_, tid)).value_or("");
    long tracer = 0;
    if (auto at = status.find("\nTracerPid:"); at != std::string::npos)
        tracer = std::strtol(status.c_str() + at + 11, nullptr, 10);
    if (tracer != 0 && tracer != ::getpid()) {
        std::string name = read_small_file(fmt::format("/proc/{}/comm", tracer)).value_or("?");
        while (!name.empty() && name.back() == '\n')
            name.pop_back();
        refusal_ = fmt::format("process {} is already traced by {} (pid {})", pid_, name, tracer);
    } else {
        refusal_ = fmt::format("no permission to trace process {} ({}): run as root or as its "
                               "user with kernel.yama.ptrace_scope=0, or give spyglass "
                               "CAP_SYS_PTRACE",
                               pid_, std::strerror(err));
    }
}

std::expected<void, PauseFailure> ThreadTracer::seize(pid_t tid) noexcept {
    install_child_handler();
    if (::ptrace(PTRACE_SEIZE, tid, nullptr, nullptr) != 0) {
        int err = errno;
        if (err == ESRCH || (err == EPERM && exited(pid_, tid)))
            return std::unexpected(PauseFailure::gone);
        note_refusal(tid, err);
        return std::unexpected(PauseFailure::refused);
    }
    tracees_.emplace(tid, Tracee{});
    return {};
}

std::expected<void, PauseFailure> ThreadTracer::probe(pid_t tid) noexcept {
    if (tracees_.contains(tid)) return {};
    return seize(tid);
}

ThreadTracer::Event ThreadTracer::consume(pid_t tid, Tracee& tracee) noexcept {
    if (tid == pid_ && leader_is_our_child_) {
        // Our own launched child: its exit status belongs to the launcher; only take stops.
        siginfo_t info{};
        if (::waitid(P_PID, static_cast<id_t>(tid), &info,
                     WEXITED | WSTOPPED | WNOHANG | WNOWAIT | __WALL) != 0)
            return errno == EINTR ? Event::none : Event::exited;
        if (info.si_pid == 0) return Event::none;
        if (info.si_code == CLD_EXITED || info.si_code == CLD_KILLED || info.si_code == CLD_DUMPED)
            return Event::exited;
    }
    int status = 0;
    pid_t got = ::waitpid(tid, &status, WNOHANG | __WALL);
    if (got == 0) return Event::none;
    if (got < 0) return errno == EINTR ? Event::none : Event::exited;
    if (WIFEXITED(status) || WIFSIGNALED(status)) return Event::exited;
    if (!WIFSTOPPED(status)) return Event::none;
    int sig = WSTOPSIG(status);
    if ((status >> 16) == PTRACE_EVENT_STOP) {
        tracee.interrupt_pending = false;
        tracee.group_stopped = is_stop_signal(sig);
        return tracee.group_stopped ? Event::group_stop : Event::interrupted;
    }
    // A signal on its way to the thread: pass it on now, never swallow it.
    if (sig == SIGCONT) tracee.group_stopped = false;
    if (::ptrace(PTRACE_CONT, tid, nullptr, reinterpret_cast<void*>(static_cast<long>(sig))) != 0)
        return Event::exited;
    return Event::signal_passed;
}

void ThreadTracer::raise_priority() noexcept {
    if (raised_ || priority_ == PausePriority::unavailable) return;
    if (priority_ == PausePriority::untried) {
        normal_policy_ = ::sched_getscheduler(0);
        const int policy = normal_policy_ & ~SCHED_RESET_ON_FORK;
        // Real-time already (the user's choice), or unknown: left as it is.
        if (normal_policy_ < 0 || ::sched_getparam(0, &normal_param_) != 0 ||
            (policy != SCHED_OTHER && policy != SCHED_BATCH && policy != SCHED_IDLE)) {
            priority_ = PausePriority::unavailable;
            return;
        }
    }
    const sched_param realtime{.sched_priority = 1};
    if (::sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &realtime) != 0) {
        priority_ = PausePriority::unavailable; // no CAP_SYS_NICE or RLIMIT_RTPRIO
        return;
    }
    priority_ = PausePriority::raised;
    raised_ = true;
}

void ThreadTracer::restore_priority() noexcept {
    if (!raised_) return;
    ::sched_setscheduler(0, normal_policy_, &normal_param_);
    raised_ = false;
}

std::expected<void, PauseFailure> ThreadTracer::pause(pid_t tid, PauseHow how) noexcept {
    // Real-time from the interrupt to PTRACE_CONT: woken by the stop, the sampling thread takes
    // its core from whatever ordinary thread holds it instead of waiting milliseconds for it.
    raise_priority();
    auto stopped = stop(tid, how);
    if (!stopped) restore_priority();
    return stopped;
}

// Returns whether the thread is on a CPU now (not: it got one and lost it to us, so shares our
// core; or it got none in time).
bool ThreadTracer::await_core(pid_t tid, const Tracee& tracee) noexcept {
    const auto first = watch_->peek(tid);
    // Preempted, or resumed by us and not on a CPU since: runnable, waiting for a CPU. (Else
    // asleep in a call, or unknown: the interrupt wakes it.)
    auto waiting = [&](const SchedWatch::OnCpu& state) {
        return !state.running &&
               (state.preempted ||
                (tracee.resumed && state.switch_ins == tracee.resumed_switch_ins));
    };
    if (!first || !waiting(*first)) return true;
    ++core_waits_.waited;
    const std::uint64_t until = monotonic_ns() + core_wait_ns_;
    for (;;) {
        // Real-time, so woken on time: the thread runs meanwhile if it gets a core, ours too.
        const timespec step{0, 50'000};
        ::clock_nanosleep(CLOCK_MONOTONIC, 0, &step, nullptr);
        const auto now = watch_->peek(tid);
        if (!now || now->running) return true;
        if (now->switch_ins != first->switch_ins) return false; // lost it again, to us maybe
        if (monotonic_ns() >= until) {
            ++core_waits_.gave_up;
            return false;
        }
    }
}

std::expected<void, PauseFailure> ThreadTracer::stop(pid_t tid, PauseHow how) noexcept {
    auto it = tracees_.find(tid);
    if (it == tracees_.end()) {
        if (auto seized = seize(tid); !seized) return seized;
        it = tracees_.find(tid);
    }
    Tracee& tracee = it->second;
    stop_began_ns_ = monotonic_ns();
    if (tracee.group_stopped) {
        // Stopped by the user (SIGSTOP) and kept so: it runs no code, nothing to interrupt.
        tracee.paused = true;
        return {};
    }
    if (!tracee.interrupt_pending) {
        if (watch_ != nullptr && !await_core(tid, tracee)) how.poll_first = false;
        stop_began_ns_ = monotonic_ns();
        if (::ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) != 0) {
            tracees_.erase(it);
            return std::unexpected(PauseFailure::gone);
        }
        tracee.interrupt_pending = true;
    }
    const std::uint64_t now = monotonic_ns();
    const std::uint64_t since = how.poll_first ? now : now - kSpinNs;
    const std::uint64_t deadline = now + kPauseTimeoutNs;
    for (unsigned polls = 0;;) {
        switch (consume(tid, tracee)) {
        case Event::interrupted:
        case Event::group_stop:
            tracee.paused = true;
            if (watch_ != nullptr && !tracee.group_stopped) {
                // It stopped as soon as it ran: before that it waited for a CPU, not for us.
                auto state = watch_->peek(tid);
                if (state && state->switched_in_ns > stop_began_ns_ &&
                    state->switched_in_ns < monotonic_ns()) {
                    stop_began_ns_ = state->switched_in_ns;
                    ++core_waits_.late_cpu;
                }
            }
            return {};
        case Event::exited:
            tracees_.erase(tid);
            return std::unexpected(PauseFailure::gone);
        case Event::signal_passed:
            continue;
        case Event::none:
            break;
        }
        if (monotonic_ns() > deadline) return std::unexpected(PauseFailure::timed_out);
        back_off(polls, since);
    }
}

void ThreadTracer::resume(pid_t tid) noexcept {
    auto it = tracees_.find(tid);
    if (it == tracees_.end() || !it->second.paused) return;
    Tracee& tracee = it->second;
    tracee.paused = false;
    long request = tracee.group_stopped ? PTRACE_LISTEN : PTRACE_CONT;
    if (watch_ != nullptr) {
        auto state = watch_->peek(tid);
        tracee.resumed = state.has_value();
        tracee.resumed_switch_ins = state ? state->switch_ins : 0;
    }
    if (::ptrace(static_cast<__ptrace_request>(request), tid, nullptr, nullptr) != 0 &&
        errno == ESRCH && !tracee.group_stopped)
        tracees_.erase(it);
    // Timed before the priority goes back: the thread runs on by then, and dropping out of the
    // real-time class may hand our core to another thread at once.
    last_pause_ns_ = monotonic_ns() - stop_began_ns_;
    restore_priority();
}

bool ThreadTracer::registers(pid_t tid, user_regs_struct& out) noexcept {
    auto it = tracees_.find(tid);
    if (it == tracees_.end() || !it->second.paused) return false;
    iovec vector{&out, sizeof out};
    return ::ptrace(PTRACE_GETREGSET, tid, reinterpret_cast<void*>(NT_PRSTATUS), &vector) == 0;
}

void ThreadTracer::service() noexcept {
    for (auto it = tracees_.begin(); it != tracees_.end();) {
        auto& [tid, tracee] = *it;
        bool exited = false;
        for (bool more = !tracee.paused; more;) {
            switch (consume(tid, tracee)) {
            case Event::none:
                more = false;
                break;
            case Event::signal_passed:
                break;
            case Event::interrupted:
                // A pause that timed out has landed, or a group stop has ended: run on.
                ::ptrace(PTRACE_CONT, tid, nullptr, nullptr);
                break;
            case Event::group_stop:
                ::ptrace(PTRACE_LISTEN, tid, nullptr, nullptr);
                break;
            case Event::exited:
                exited = true;
                more = false;
                break;
            }
        }
        it = exited ? tracees_.erase(it) : std::next(it);
    }
}

void ThreadTracer::detach(pid_t tid, Tracee& tracee) noexcept {
    if (tracee.paused || tracee.group_stopped) {
        if (::ptrace(PTRACE_DETACH, tid, nullptr, nullptr) == 0) return;
    }
    // PTRACE_DETACH needs a stopped thread: interrupt it first.
    if (!tracee.interrupt_pending && ::ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) != 0)
        return; // gone
    tracee.interrupt_pending = true;
    const std::uint64_t since = monotonic_ns();
    const std::uint64_t deadline = since + kDetachTimeoutNs;
    for (unsigned polls = 0;;) {
        switch (consume(tid, tracee)) {
        case Event::interrupted:
        case Event::group_stop:
            ::ptrace(PTRACE_DETACH, tid, nullptr, nullptr);
            return;
        case Event::exited:
            return;
        case Event::signal_passed:
            continue;
        case Event::none:
            break;
        }
        if (monotonic_ns() > deadline) {
            std::lock_guard lock(leftovers_mutex);
            leftovers.push_back(tid);
            return;
        }
        back_off(polls, since);
    }
}

} // namespace spyglass::process
