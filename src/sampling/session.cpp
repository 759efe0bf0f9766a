#include "spyglass/sampling/session.hpp"

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <map>
#include <random>

#include <dirent.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>

#include "spyglass/process/live_memory.hpp"
#include "spyglass/process/procfs.hpp"
#include "spyglass/python/discovery.hpp"

namespace spyglass::sampling {

namespace {

constexpr std::uint64_t kMillisecond = 1'000'000;
constexpr std::uint64_t kScanIntervalNs = 200 * kMillisecond;
constexpr std::uint64_t kProgressIntervalNs = 250 * kMillisecond;

std::uint64_t monotonic_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ull +
           static_cast<std::uint64_t>(ts.tv_nsec);
}

std::uint64_t realtime_ns() {
    timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ull +
           static_cast<std::uint64_t>(ts.tv_nsec);
}

bool alive(pid_t pid) {
    auto stat = process::read_stat(pid);
    return stat && stat->state != 'Z' && stat->state != 'X';
}

// pid -> parent pid, for every process, from one pass over /proc.
std::map<pid_t, pid_t> parents() {
    std::map<pid_t, pid_t> out;
    DIR* dir = ::opendir("/proc");
    if (dir == nullptr) return out;
    while (dirent* entry = ::readdir(dir)) {
        char* end = nullptr;
        long pid = std::strtol(entry->d_name, &end, 10);
        if (end == entry->d_name || *end != '\0') continue;
        if (auto stat = process::read_stat(static_cast<pid_t>(pid)))
            out[static_cast<pid_t>(pid)] = stat->ppid;
    }
    ::closedir(dir);
    return out;
}

} // namespace

Session::Session(FrameTable& frames, StackTable& stacks, const SessionOptions& options)
    : frames_(frames), stacks_(stacks), options_(options) {}

bool Session::sleep_until(std::uint64_t deadline_ns, const std::atomic<int>& stop) {
    timespec ts{static_cast<time_t>(deadline_ns / 1'000'000'000ull),
                static_cast<long>(deadline_ns % 1'000'000'000ull)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nullptr) == EINTR) {
        if (process::take_tracee_events())
            for (const auto& sampler : samplers_)
                sampler->service_tracer();
        if (stop.load(std::memory_order_relaxed) > 0) return false;
    }
    return true;
}

void Session::retire(ProcessSampler& sampler, SessionResult& result) {
    result.pauses.merge(sampler.pause_stats());
}

Session::~Session() = default;

Result<void> Session::attach(pid_t pid) {
    auto process = python::PythonProcess::attach(pid);
    if (!process) return std::unexpected(process.error());
    roots_.insert(pid);
    known_.insert(pid);
    add_sampler(std::move(*process));
    if (options_.sampler.pause == PauseMode::always) return samplers_.back()->check_pausing();
    return {};
}

void Session::add_sampler(std::unique_ptr<python::PythonProcess> process) {
    pid_t pid = process->pid();
    if (python_version_.empty()) python_version_ = process->target().version.to_string();
    for (const std::string& note : process->target().notes)
        spdlog::info("process {}: {}", pid, note);
    if (std::find(pids_.begin(), pids_.end(), pid) == pids_.end()) pids_.push_back(pid);
    samplers_.push_back(std::make_unique<ProcessSampler>(std::move(process), frames_, stacks_,
                                                         registry_, options_.sampler));
}

void Session::watch(pid_t pid, std::function<bool()> is_alive) {
    watched_ = pid;
    watched_alive_ = std::move(is_alive);
    roots_.insert(pid);
    known_.insert(pid);
    pending_.insert(pid);
}

bool Session::try_attach(pid_t pid, bool report_errors) {
    // A launched command's interpreter is found before it is initialized: keep what discovery
    // learned and only check for the interpreter state until it is there.
    auto known = discovered_.find(pid);
    Result<std::unique_ptr<python::PythonProcess>> process =
        std::unexpected(Error{Errc::not_found, ""});
    if (known != discovered_.end()) {
        process = python::PythonProcess::attach(known->second);
    } else {
        process::LiveMemory memory(pid);
        auto target = python::discover(pid, memory);
        if (!target) {
            process = std::unexpected(target.error());
        } else {
            found_interpreter_ = true;
            discovered_.insert_or_assign(pid, *target);
            process = python::PythonProcess::attach(std::move(*target));
        }
    }
    if (!process) {
        const Error& error = process.error();
        if (error.code == Errc::not_python && replaced_.erase(pid) > 0)
            spdlog::warn("process {} is not running Python any more ({}): nothing to sample "
                         "until it runs Python again or exits",
                         pid, process::exe_path(pid).value_or("?"));
        // Not Python (yet: a launcher, a shell, a fork before exec) or not initialized yet:
        // try again later. Anything else is final for this process.
        if (error.code == Errc::not_python || error.code == Errc::not_found) return false;
        discovered_.erase(pid);
        if (error.code != Errc::process_gone && report_errors)
            spdlog::warn("not sampling process {}: {}", pid, error.message);
        pending_.erase(pid);
        return false;
    }
    pending_.erase(pid);
    discovered_.erase(pid);
    if (replaced_.erase(pid) > 0)
        spdlog::warn("process {} runs Python {} again: sampling it", pid,
                     (*process)->target().version.to_string());
    add_sampler(std::move(*process));
    return true;
}

void Session::scan_children() {
    auto tree = parents();
    std::set<pid_t> followed = roots_;
    for (const auto& sampler : samplers_)
        followed.insert(sampler->pid());
    followed.insert(pending_.begin(), pending_.end());
    // Descendants of everything followed, at any depth.
    bool grew = true;
    while (grew) {
        grew = false;
        for (const auto& [pid, ppid] : tree) {
            if (followed.contains(ppid) && !followed.contains(pid)) {
                followed.insert(pid);
                grew = true;
            }
        }
    }
    for (pid_t pid : followed) {
        if (known_.contains(pid)) continue;
        known_.insert(pid);
        pending_.insert(pid);
        try_attach(pid, true);
    }
}

bool Session::anything_alive() const {
    if (!samplers_.empty()) return true;
    if (watched_ && watched_alive_ && watched_alive_()) return true;
    for (pid_t pid : pending_)
        if (pid != watched_ && alive(pid)) return true;
    return false;
}

SessionResult Session::run(SampleSink& sink, const std::atomic<int>& stop,
                           const std::function<void(const Progress&)>& progress) {
    // Default timer slack (50 us) would make every sleep late at high rates.
    ::prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    SessionResult result;
    const auto period = static_cast<std::uint64_t>(1e9 / options_.rate_hz);
    const auto duration = static_cast<std::uint64_t>(options_.duration_s * 1e9);
    std::mt19937_64 random(0x5eed);
    std::uniform_int_distribution<std::int64_t> jitter(-static_cast<std::int64_t>(period / 4),
                                                       static_cast<std::int64_t>(period / 4));
    const std::uint64_t start = monotonic_ns();
    fast_pending_until_ = start + 2'000'000'000ull;
    result.start_unix_ns = realtime_ns();
    std::uint64_t tick = 0, next_scan = 0, next_progress = 0, next_pending = 0;
    Progress& totals = result.totals;

    for (;; ++tick) {
        if (stop.load(std::memory_order_relaxed) > 0) {
            result.end = SessionEnd::stopped;
            break;
        }
        std::uint64_t deadline = start + tick * period;
        if (options_.jitter && tick > 0) deadline += static_cast<std::uint64_t>(jitter(random));
        // A duration ends at its end, not at the first tick past it (-r 0.2 -d 2 is 2 s).
        if (!sleep_until(duration != 0 ? std::min(deadline, start + duration) : deadline, stop))
            continue;
        std::uint64_t now = monotonic_ns();
        if (now > deadline + period) {
            // Missed whole ticks: skip them, and say so in the summary.
            std::uint64_t missed = (now - deadline) / period;
            totals.late_ticks += missed;
            tick += missed;
        }
        std::uint64_t elapsed = now - start;
        if (duration != 0 && elapsed >= duration && tick > 0) { // tick 0 is always taken
            result.end = SessionEnd::duration;
            break;
        }
        if (!pending_.empty() && now >= next_pending) {
            for (pid_t pid : std::set<pid_t>(pending_)) {
                if (!alive(pid)) {
                    pending_.erase(pid);
                    continue;
                }
                try_attach(pid, true);
            }
            // Waiting for an interpreter to start (a launched command, an exec): look often for
            // two seconds, then less often.
            bool soon = samplers_.empty() && now < fast_pending_until_;
            next_pending = now + (soon ? 2 * kMillisecond : 100 * kMillisecond);
            if (samplers_.empty() && watched_ && !waiting_note_printed_ &&
                elapsed > 2'000'000'000ull) {
                spdlog::warn("waiting for a Python interpreter in process {}", *watched_);
                waiting_note_printed_ = true;
            }
        }
        if (options_.subprocesses && now >= next_scan) {
            scan_children();
            next_scan = now + kScanIntervalNs;
        }
        PassStats& stats = result.stats;
        std::uint64_t before_samples = stats.samples, before_errors = stats.errors;
        std::erase_if(samplers_, [&](const std::unique_ptr<ProcessSampler>& sampler) {
            ProcessState state = sampler->sample(elapsed, sink, stats);
            if (state == ProcessState::sampling) return false;
            retire(*sampler, result);
            if (state == ProcessState::replaced) {
                pid_t pid = sampler->pid();
                std::string exe = process::exe_path(pid).value_or("?");
                spdlog::warn("process {} replaced its program (exec): now {}", pid, exe);
                replaced_.insert(pid);
                pending_.insert(pid);
                discovered_.erase(pid);
                next_pending = 0;
                fast_pending_until_ = monotonic_ns() + 2'000'000'000ull;
            }
            return true;
        });
        ++totals.ticks;
        totals.samples += stats.samples - before_samples;
        totals.errors += stats.errors - before_errors;
        totals.elapsed_ns = elapsed;
        totals.processes = samplers_.size();
        totals.waiting = samplers_.empty();
        if (!anything_alive()) {
            result.end = SessionEnd::targets_exited;
            break;
        }
        if (progress && now >= next_progress) {
            if (totals.python_version.empty()) totals.python_version = python_version_;
            progress(totals);
            next_progress = now + kProgressIntervalNs;
        }
    }
    // The recording's real length: its duration, else until it stopped or the targets exited.
    if (result.end == SessionEnd::duration)
        totals.elapsed_ns = duration;
    else
        totals.elapsed_ns = monotonic_ns() - start;
    for (const auto& sampler : samplers_)
        retire(*sampler, result);
    result.pids = pids_;
    result.found_interpreter = found_interpreter_ || !pids_.empty();
    result.python_version = python_version_;
    totals.python_version = python_version_;
    return result;
}

} // namespace spyglass::sampling
