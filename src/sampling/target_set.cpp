#include "spyglass/sampling/target_set.hpp"

#include <algorithm>
#include <cstdlib>

#include <dirent.h>
#include <spdlog/spdlog.h>

#include "spyglass/clock.hpp"
#include "spyglass/process/live_memory.hpp"
#include "spyglass/process/procfs.hpp"
#include "spyglass/python/discovery.hpp"

namespace spyglass::sampling {

namespace {

constexpr std::uint64_t kScanIntervalNs = 200'000'000;
constexpr std::uint64_t kYoungNs = 500'000'000;
constexpr std::uint64_t kFastPendingNs = 2'000'000'000ull;
// How often a process not (yet) Python is looked at again: while an interpreter is awaited
// (the first seconds, or after an exec), and otherwise.
constexpr std::uint64_t kPendingSoonNs = 2'000'000, kPendingLaterNs = 100'000'000;

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

TargetSet::TargetSet(ThreadRegistry& registry, CaptureQueue& queue, const SamplerOptions& options,
                     bool subprocesses, const std::uint64_t& pass_elapsed_ns,
                     model::RecordingTotals& totals, Listener listener)
    : registry_(registry), queue_(queue), options_(options), subprocesses_(subprocesses),
      pass_elapsed_ns_(pass_elapsed_ns), totals_(totals), listener_(std::move(listener)) {}

bool TargetSet::exec_said(pid_t pid) const {
    // A child started with fork and exec does this as a matter of course.
    if (!roots_.contains(pid)) return false;
    auto execs = execs_.find(pid);
    return execs == execs_.end() || execs->second <= kExecsSaid;
}

void TargetSet::retire(ProcessSampler& sampler) {
    pauses_.merge(sampler.pause_stats());
    listener_.retired(sampler.slot());
}

Result<void> TargetSet::attach(pid_t pid) {
    auto process = python::PythonProcess::attach(pid);
    if (!process) return std::unexpected(process.error());
    roots_.insert(pid);
    known_.insert(pid);
    add_sampler(std::move(*process));
    if (options_.pause == PauseMode::always) return samplers_.back()->check_pausing();
    return {};
}

void TargetSet::add_sampler(std::unique_ptr<python::PythonProcess> process) {
    pid_t pid = process->pid();
    if (totals_.python_version.empty())
        totals_.python_version = process->target().version.to_string();
    totals_.found_interpreter = true;
    for (const std::string& note : process->target().notes)
        spdlog::info("process {}: {}", pid, note);
    if (std::find(totals_.pids.begin(), totals_.pids.end(), pid) == totals_.pids.end())
        totals_.pids.push_back(pid);
    std::uint32_t slot = next_slot_++;
    listener_.added(slot, process->target(), pid);
    if (sched_ != nullptr) sched_->follow(pid);
    samplers_.push_back(std::make_unique<ProcessSampler>(std::move(process), slot, registry_,
                                                         queue_, options_, pass_elapsed_ns_));
}

void TargetSet::follow(pid_t pid) {
    roots_.insert(pid);
    known_.insert(pid);
    pending_.insert(pid);
    spdlog::info("process {} ({}) is not Python: sampling the Python processes it starts", pid,
                 process::task_comm(pid, pid).value_or("?"));
}

void TargetSet::watch(pid_t pid, std::function<bool()> is_alive) {
    watched_ = pid;
    watched_alive_ = std::move(is_alive);
    roots_.insert(pid);
    known_.insert(pid);
    pending_.insert(pid);
    young_until_[pid] = monotonic_ns() + kYoungNs;
}

void TargetSet::begin(std::uint64_t start_ns, process::SchedWatch* sched) {
    fast_pending_until_ = start_ns + kFastPendingNs;
    sched_ = sched;
    if (sched_ == nullptr) return;
    for (const auto& sampler : samplers_)
        sched_->follow(sampler->pid());
    if (subprocesses_)
        for (pid_t root : roots_)
            sched_->follow_descendants(root);
}

void TargetSet::consider(pid_t pid) {
    if (!known_.insert(pid).second) return;
    pending_.insert(pid);
    young_until_[pid] = monotonic_ns() + kYoungNs;
    try_attach(pid, true);
}

void TargetSet::take_process_events() {
    for (pid_t child : sched_->take_children())
        consider(child);
    for (pid_t pid : sched_->take_execs()) {
        // What discovery learned of the program before is void; look again now.
        discovered_.erase(pid);
        not_python_.erase(pid);
        young_until_[pid] = monotonic_ns() + kYoungNs;
        auto sampled = std::find_if(samplers_.begin(), samplers_.end(),
                                    [&](const auto& sampler) { return sampler->pid() == pid; });
        if (sampled != samplers_.end()) {
            // Seen before its ExecWatch would: a forked child that now runs its own program.
            retire(**sampled);
            samplers_.erase(sampled);
            replaced_.insert(pid);
            pending_.insert(pid);
        }
        if (pending_.contains(pid)) try_attach(pid, true);
    }
}

bool TargetSet::try_attach(pid_t pid, bool report_errors) {
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
            totals_.found_interpreter = true;
            discovered_.insert_or_assign(pid, *target);
            process = python::PythonProcess::attach(std::move(*target));
        }
    }
    if (!process) {
        const Error& error = process.error();
        if (error.code == Errc::not_python && replaced_.erase(pid) > 0)
            spdlog::log(exec_said(pid) ? spdlog::level::warn : spdlog::level::info,
                        "process {} is not running Python any more ({}): nothing to sample "
                        "until it runs Python again or exits",
                        pid, process::exe_path(pid).value_or("?"));
        // Not Python (yet: a launcher, a shell, a fork before exec) or not initialized yet:
        // try again later. Anything else is final for this process.
        if (error.code == Errc::not_python) {
            if (young_until_.contains(pid)) return false; // not a verdict yet
            if (not_python_.insert(pid).second && subprocesses_ && !roots_.contains(pid))
                spdlog::info("process {} ({}) is not Python: not sampled, its children are "
                             "followed",
                             pid, process::task_comm(pid, pid).value_or("?"));
            return false;
        }
        // Not initialized yet, or (a process between fork and exec, or one just exec'd) its
        // memory not what discovery saw a moment ago: look again.
        if (error.code == Errc::bad_address) discovered_.erase(pid);
        if (error.code == Errc::not_found || error.code == Errc::bad_address) return false;
        discovered_.erase(pid);
        if (error.code != Errc::process_gone && report_errors)
            spdlog::warn("not sampling process {}: {}", pid, error.message);
        pending_.erase(pid);
        return false;
    }
    pending_.erase(pid);
    discovered_.erase(pid);
    not_python_.erase(pid);
    if (replaced_.erase(pid) > 0)
        spdlog::log(exec_said(pid) ? spdlog::level::warn : spdlog::level::info,
                    "process {} runs Python {} again: sampling it", pid,
                    (*process)->target().version.to_string());
    add_sampler(std::move(*process));
    return true;
}

void TargetSet::scan_children() {
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
    for (pid_t pid : followed)
        consider(pid);
}

bool TargetSet::anything_alive() const {
    if (!samplers_.empty()) return true;
    if (watched_ && watched_alive_ && watched_alive_()) return true;
    for (pid_t pid : pending_)
        if (pid != watched_ && alive(pid)) return true;
    return false;
}

void TargetSet::retry_pending(std::uint64_t now, std::uint64_t elapsed) {
    // A process whose interpreter was found but is not initialized yet costs one read to
    // look at again: every pass; so does a process just started (its loader may not have
    // mapped libpython yet). The others (discovery reads its files) less often.
    std::erase_if(young_until_, [&](const auto& entry) { return entry.second < now; });
    for (pid_t pid : std::set<pid_t>(pending_))
        if ((discovered_.contains(pid) || young_until_.contains(pid)) && now < next_pending_)
            try_attach(pid, true);
    if (pending_.empty() || now < next_pending_) return;
    for (pid_t pid : std::set<pid_t>(pending_)) {
        if (!alive(pid)) {
            pending_.erase(pid);
            not_python_.erase(pid);
            continue;
        }
        // A program that is not Python becomes one only by exec: with the scheduler's events
        // that is seen when it happens; without them, look once a second.
        const bool execs_seen = sched_ != nullptr && subprocesses_;
        if (not_python_.contains(pid) && !young_until_.contains(pid) &&
            (execs_seen || now < next_not_python_))
            continue;
        try_attach(pid, true);
    }
    if (now >= next_not_python_) next_not_python_ = now + 1'000'000'000ull;
    // Waiting for an interpreter to start (a launched command, an exec): look often for two
    // seconds, then less often.
    bool soon = samplers_.empty() && now < fast_pending_until_;
    next_pending_ = now + (soon ? kPendingSoonNs : kPendingLaterNs);
    if (samplers_.empty() && watched_ && !waiting_note_printed_ && elapsed > kFastPendingNs) {
        spdlog::warn("waiting for a Python interpreter in process {}", *watched_);
        waiting_note_printed_ = true;
    }
}

void TargetSet::replaced(pid_t pid) {
    std::string exe = process::exe_path(pid).value_or("?");
    const std::uint32_t execs = ++execs_[pid];
    spdlog::log(exec_said(pid) ? spdlog::level::warn : spdlog::level::info,
                "process {} replaced its program (exec): now {}", pid, exe);
    if (roots_.contains(pid) && execs == kExecsSaid + 1)
        spdlog::warn("process {} keeps replacing its program ({} times so far): further execs "
                     "are said with -v",
                     pid, execs);
    replaced_.insert(pid);
    pending_.insert(pid);
    discovered_.erase(pid);
    next_pending_ = 0;
    fast_pending_until_ = monotonic_ns() + kFastPendingNs;
}

void TargetSet::pass(std::uint64_t now, std::uint64_t elapsed, PassStats& stats) {
    retry_pending(now, elapsed);
    // Lost records: no thread may be taken for idle in this pass.
    process::SchedWatch* sched = sched_ != nullptr && sched_->poll() ? sched_ : nullptr;
    if (subprocesses_ && sched_ != nullptr) take_process_events();
    // The scan of /proc is all there is without the scheduler's events; with them it only
    // catches what happened before the recording began (or records that were lost).
    if (subprocesses_ && now >= next_scan_) {
        scan_children();
        next_scan_ = now + (sched_ != nullptr ? 5 : 1) * kScanIntervalNs;
    }
    std::erase_if(samplers_, [&](const std::unique_ptr<ProcessSampler>& sampler) {
        ProcessState state = sampler->sample(elapsed, stats, sched);
        if (state == ProcessState::sampling) return false;
        retire(*sampler);
        if (state == ProcessState::replaced) replaced(sampler->pid());
        return true;
    });
}

void TargetSet::retire_all() {
    for (const auto& sampler : samplers_)
        retire(*sampler);
}

void TargetSet::service_tracers() noexcept {
    for (const auto& sampler : samplers_)
        sampler->service_tracer();
}

void TargetSet::say_exec_counts() const {
    for (const auto& [pid, execs] : execs_)
        if (execs > kExecsSaid && roots_.contains(pid))
            spdlog::warn("process {} replaced its program {} times", pid, execs);
}

} // namespace spyglass::sampling
