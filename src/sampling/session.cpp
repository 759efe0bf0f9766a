#include "spyglass/sampling/session.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <map>
#include <random>
#include <thread>

#include <dirent.h>
#include <pthread.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "spyglass/clock.hpp"
#include "spyglass/native/unwinder.hpp"
#include "spyglass/process/live_memory.hpp"
#include "spyglass/process/open_limit.hpp"
#include "spyglass/process/procfs.hpp"
#include "spyglass/python/discovery.hpp"

namespace spyglass::sampling {

namespace {

constexpr std::uint64_t kMillisecond = 1'000'000;
constexpr std::uint64_t kScanIntervalNs = 200 * kMillisecond;
constexpr std::uint64_t kYoungNs = 500 * kMillisecond;
constexpr std::uint64_t kProgressIntervalNs = 250 * kMillisecond;
constexpr std::uint64_t kClockIntervalNs = 100 * kMillisecond;
constexpr int kResolverNice = 10; // relative to spyglass's own niceness

std::uint64_t thread_cpu_ns() {
    timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
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

// What corrupt target memory or a lack of descriptors cost the recording, said once at its end.
void say_target_faults(const model::RecordingTotals& totals, const PassStats& stats) {
    if (totals.threads_without_descriptors != 0)
        spdlog::warn("{} threads could not be sampled ({} samples left out): their /proc files "
                     "could not be opened, out of file descriptors (the limit is {}: raise it "
                     "with ulimit -n)",
                     totals.threads_without_descriptors, stats.missed_without_descriptors,
                     totals.open_limit);
    if (const std::uint64_t files = native::module_files_without_descriptors(); files != 0)
        spdlog::warn("{} times a module's file could not be opened for native frames: out of "
                     "file descriptors (the limit is {}): its native frames are missing, and "
                     "samples whose Python frames could not be placed among them are marked {}",
                     files, totals.open_limit, kMismatchMarker);
    if (totals.unreadable_code != 0)
        spdlog::warn("{} samples have a frame whose code object could not be read (corrupt "
                     "memory): marked {}, counted as errors",
                     totals.unreadable_code, kUnreadableCodeName);
    if (totals.looping_stacks != 0)
        spdlog::warn("{} where its frame chain points back into itself (corrupt memory): "
                     "marked {}, each counted as a sampling error",
                     totals.looping_stacks == 1
                         ? "1 stack ends"
                         : fmt::format("{} stacks end", totals.looping_stacks),
                     kLoopsMarker);
}

} // namespace

Session::Session(model::FrameTable& frames, model::StackTable& stacks,
                 const SessionOptions& options)
    : frames_(frames), stacks_(stacks), options_(options) {
    options_.sampler.period_ns = static_cast<std::uint64_t>(1e9 / options_.rate_hz);
    options_.stacks.native = options_.sampler.native;
    // Stack copies in flight between the sampling thread and the resolver: the resolver is
    // woken when a quarter of it is used, so this is about 16 copies of the largest size
    // before it is, 64 before a capture is dropped.
    if (options_.sampler.native) {
        queue_.reserve_bytes(64 * (sizeof(native::ContextHeader) + native::kMaxStackCopy));
        native_feedback_ = std::make_unique<NativeFeedback>();
        options_.sampler.native_feedback = native_feedback_.get();
    }
}

Session::~Session() = default;

bool Session::sleep_until(std::uint64_t deadline_ns, const std::atomic<int>& stop) {
    // A seized thread that got a signal waits, stopped, until it is passed on. The SIGCHLD that
    // says so may have come during the pass: wait_tracee_events() reports it before sleeping
    // (a thread signalled mid-pass once stayed stopped for the rest of the recording).
    for (;;) {
        if (stop.load(std::memory_order_relaxed) > 0) return false;
        switch (process::wait_tracee_events(deadline_ns)) {
        case process::TraceeWake::deadline:
            return true;
        case process::TraceeWake::tracee_event:
            for (const auto& sampler : samplers_)
                sampler->service_tracer();
            break;
        case process::TraceeWake::interrupted:
            break;
        }
    }
}

void Session::push_event(CaptureKind kind, std::uint32_t slot) {
    for (;;) {
        python::RawFrame* none = nullptr;
        if (ThreadCapture* event = queue_.reserve(0, none)) {
            event->kind = kind;
            event->process = slot;
            queue_.push();
            return;
        }
        // Full: events are rare and must not be lost. Let the resolver make room.
        queue_.notify();
        if (options_.resolve_inline && resolver_) {
            resolver_->drain(queue_);
        } else {
            timespec step{0, 100'000};
            nanosleep(&step, nullptr);
        }
    }
}

bool Session::exec_said(pid_t pid) const {
    // A child started with fork and exec does this as a matter of course.
    if (!roots_.contains(pid)) return false;
    auto execs = execs_.find(pid);
    return execs == execs_.end() || execs->second <= kExecsSaid;
}

void Session::retire(ProcessSampler& sampler) {
    pauses_.merge(sampler.pause_stats());
    push_event(CaptureKind::process_retired, sampler.slot());
}

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
    if (totals_.python_version.empty())
        totals_.python_version = process->target().version.to_string();
    totals_.found_interpreter = true;
    for (const std::string& note : process->target().notes)
        spdlog::info("process {}: {}", pid, note);
    if (std::find(totals_.pids.begin(), totals_.pids.end(), pid) == totals_.pids.end())
        totals_.pids.push_back(pid);
    auto context = std::make_shared<ProcessContext>(
        ProcessContext{process->target(), std::make_shared<process::LiveMemory>(pid)});
    std::uint32_t slot = next_slot_++;
    if (resolver_) {
        resolver_->register_process(slot, context);
        push_event(CaptureKind::process_added, slot);
    } else {
        early_.emplace_back(slot, context);
    }
    if (sched_) sched_->follow(pid);
    samplers_.push_back(std::make_unique<ProcessSampler>(
        std::move(process), slot, registry_, queue_, options_.sampler, pass_elapsed_ns_));
}

void Session::follow(pid_t pid) {
    roots_.insert(pid);
    known_.insert(pid);
    pending_.insert(pid);
    spdlog::info("process {} ({}) is not Python: sampling the Python processes it starts", pid,
                 process::task_comm(pid, pid).value_or("?"));
}

void Session::consider(pid_t pid) {
    if (!known_.insert(pid).second) return;
    pending_.insert(pid);
    young_until_[pid] = monotonic_ns() + kYoungNs;
    try_attach(pid, true);
}

void Session::take_process_events() {
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

void Session::watch(pid_t pid, std::function<bool()> is_alive) {
    watched_ = pid;
    watched_alive_ = std::move(is_alive);
    roots_.insert(pid);
    known_.insert(pid);
    pending_.insert(pid);
    young_until_[pid] = monotonic_ns() + kYoungNs;
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
            if (not_python_.insert(pid).second && options_.subprocesses && !roots_.contains(pid))
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
    for (pid_t pid : followed)
        consider(pid);
}

bool Session::anything_alive() const {
    if (!samplers_.empty()) return true;
    if (watched_ && watched_alive_ && watched_alive_()) return true;
    for (pid_t pid : pending_)
        if (pid != watched_ && alive(pid)) return true;
    return false;
}

SessionResult Session::run(model::SampleSink& sink, const std::atomic<int>& stop,
                           const std::function<void(const Progress&)>& progress) {
    // Default timer slack (50 us) would make every sleep late at high rates.
    ::prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    const process::TraceeEventsHeld tracee_events_held;
    SessionResult result;
    const std::uint64_t period = options_.sampler.period_ns;
    const auto duration = static_cast<std::uint64_t>(options_.duration_s * 1e9);
    std::mt19937_64 random(0x5eed);
    std::uniform_int_distribution<std::int64_t> jitter(-static_cast<std::int64_t>(period / 4),
                                                       static_cast<std::int64_t>(period / 4));

    model::RecordingInfo info;
    info.command = options_.command;
    info.mode = options_.sampler.filter.mode;
    info.gil_only = options_.sampler.filter.gil_only;
    info.subprocesses = options_.subprocesses;
    info.rate_hz = options_.rate_hz;
    info.period_ns = period;
    info.start_unix_ns = realtime_ns();
    info.waits = options_.sampler.waits;
    sink.start(info);

    resolver_ =
        std::make_unique<Resolver>(frames_, stacks_, options_.stacks, sink, options_.sampler.waits);
    resolver_->bound_tables(options_.table_limit);
    resolver_->feed_back(native_feedback_.get());
    if (options_.sched_events && std::getenv("SPYGLASS_NO_SCHED_EVENTS") == nullptr)
        sched_ = process::SchedWatch::open();
    if (sched_) {
        for (const auto& sampler : samplers_)
            sched_->follow(sampler->pid());
        if (options_.subprocesses)
            for (pid_t root : roots_)
                sched_->follow_descendants(root);
        spdlog::info("which threads ran comes from the kernel's scheduler events");
    } else {
        spdlog::info("scheduler events are not available: every thread's schedstat is read");
    }
    for (auto& [slot, context] : early_) {
        resolver_->register_process(slot, context);
        push_event(CaptureKind::process_added, slot);
    }
    early_.clear();
    std::thread resolving;
    if (!options_.resolve_inline) {
        // Signals (Ctrl-C, SIGCHLD from traced threads) must wake the sampling thread's sleep,
        // never land on the resolver's.
        sigset_t all, previous;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &previous);
        resolving = std::thread([this] {
            // Below the sampling thread: when the resolver has a burst of work (a module's
            // DWARF loaded for its first source line, a dlopen), the scheduler must not run
            // it in place of the sampling thread while that thread holds a target thread
            // stopped. The queue between them absorbs the delay.
            (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), kResolverNice);
            resolver_->run(queue_);
        });
        pthread_sigmask(SIG_SETMASK, &previous, nullptr);
        pthread_setname_np(resolving.native_handle(), "spyglass-res");
    }

    const std::uint64_t start = monotonic_ns();
    const std::uint64_t cpu_start = thread_cpu_ns();
    const std::uint64_t end = duration != 0 ? start + duration : 0;
    fast_pending_until_ = start + 2'000'000'000ull;
    std::uint64_t tick = 0, next_scan = 0, next_progress = 0, next_pending = 0, next_not_python = 0,
                  next_clock = 0;
    model::RecordingTotals& totals = totals_;
    PassStats& stats = result.stats;
    std::uint64_t now = start;

    for (;; ++tick) {
        if (stop.load(std::memory_order_relaxed) > 0) {
            totals.end = model::RecordingEnd::stopped;
            break;
        }
        std::uint64_t deadline = start + tick * period;
        if (options_.jitter && tick > 0) deadline += static_cast<std::uint64_t>(jitter(random));
        // The recording ends at its duration, not at the first tick after it.
        bool last_sleep = end != 0 && deadline >= end;
        if (!sleep_until(last_sleep ? end : deadline, stop)) {
            now = monotonic_ns();
            continue;
        }
        now = monotonic_ns();
        if (last_sleep || (end != 0 && now >= end && tick > 0)) { // tick 0 is always taken
            now = std::min(now, end);
            totals.end = model::RecordingEnd::duration;
            break;
        }
        if (now > deadline + period) {
            // Missed whole ticks: skip them, and say so in the summary. The samples of the
            // next pass stand for the time they missed (their weight).
            std::uint64_t missed = (now - deadline) / period;
            totals.late_ticks += missed;
            tick += missed;
        }
        std::uint64_t elapsed = now - start;
        pass_elapsed_ns_ = elapsed;
        // A process whose interpreter was found but is not initialized yet costs one read to
        // look at again: every pass; so does a process just started (its loader may not have
        // mapped libpython yet). The others (discovery reads its files) less often.
        std::erase_if(young_until_, [&](const auto& entry) { return entry.second < now; });
        for (pid_t pid : std::set<pid_t>(pending_))
            if ((discovered_.contains(pid) || young_until_.contains(pid)) && now < next_pending)
                try_attach(pid, true);
        if (!pending_.empty() && now >= next_pending) {
            for (pid_t pid : std::set<pid_t>(pending_)) {
                if (!alive(pid)) {
                    pending_.erase(pid);
                    not_python_.erase(pid);
                    continue;
                }
                // A program that is not Python becomes one only by exec: with the scheduler's
                // events that is seen when it happens; without them, look once a second.
                const bool execs_seen = sched_ && options_.subprocesses;
                if (not_python_.contains(pid) && !young_until_.contains(pid) &&
                    (execs_seen || now < next_not_python))
                    continue;
                try_attach(pid, true);
            }
            if (now >= next_not_python) next_not_python = now + 1'000'000'000ull;
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
        // Lost records: no thread may be taken for idle in this pass.
        process::SchedWatch* sched = sched_ && sched_->poll() ? sched_.get() : nullptr;
        if (options_.subprocesses && sched_) take_process_events();
        // The scan of /proc is all there is without the scheduler's events; with them it only
        // catches what happened before the recording began (or records that were lost).
        if (options_.subprocesses && now >= next_scan) {
            scan_children();
            next_scan = now + (sched_ ? 5 : 1) * kScanIntervalNs;
        }
        std::erase_if(samplers_, [&](const std::unique_ptr<ProcessSampler>& sampler) {
            ProcessState state = sampler->sample(elapsed, stats, sched);
            if (state == ProcessState::sampling) return false;
            retire(*sampler);
            if (state == ProcessState::replaced) {
                pid_t pid = sampler->pid();
                std::string exe = process::exe_path(pid).value_or("?");
                const std::uint32_t execs = ++execs_[pid];
                spdlog::log(exec_said(pid) ? spdlog::level::warn : spdlog::level::info,
                            "process {} replaced its program (exec): now {}", pid, exe);
                if (roots_.contains(pid) && execs == kExecsSaid + 1)
                    spdlog::warn("process {} keeps replacing its program ({} times so far): "
                                 "further execs are said with -v",
                                 pid, execs);
                replaced_.insert(pid);
                pending_.insert(pid);
                discovered_.erase(pid);
                next_pending = 0;
                fast_pending_until_ = monotonic_ns() + 2'000'000'000ull;
            }
            return true;
        });
        if (now >= next_clock) {
            // For sinks that cut windows while no sample comes; a full ring skips one.
            python::RawFrame* none = nullptr;
            if (ThreadCapture* event = queue_.reserve(0, none)) {
                event->kind = CaptureKind::clock;
                event->time_ns = elapsed;
                queue_.push();
            }
            next_clock = now + kClockIntervalNs;
        }
        queue_.notify();
        if (options_.resolve_inline) resolver_->drain(queue_);
        ++totals.ticks;
        totals.samples = stats.samples;
        totals.errors = stats.errors;
        totals.dropped = stats.dropped;
        totals.elapsed_ns = elapsed;
        totals.processes = samplers_.size();
        totals.waiting = samplers_.empty();
        if (!anything_alive()) {
            totals.end = model::RecordingEnd::targets_exited;
            break;
        }
        if (progress && now >= next_progress) {
            progress(totals);
            next_progress = now + kProgressIntervalNs;
        }
    }
    totals.elapsed_ns = now - start;
    for (const auto& sampler : samplers_)
        retire(*sampler);
    totals.pauses = pauses_.summary();
    totals.samples = stats.samples;
    totals.errors = stats.errors;
    totals.dropped = stats.dropped;
    totals.processes = samplers_.size();
    totals.threads_without_descriptors = stats.threads_without_descriptors;

    result.sampling_cpu_ns = thread_cpu_ns() - cpu_start;
    queue_.close();
    if (resolving.joinable())
        resolving.join();
    else
        resolver_->drain(queue_);
    result.resolve = resolver_->stats();
    result.waits = resolver_->wait_stats();
    totals.unreadable_code = resolver_->unreadable_samples();
    totals.errors += totals.unreadable_code;
    totals.looping_stacks = stats.looping_stacks;
    totals.threads_without_descriptors = stats.threads_without_descriptors;
    totals.open_limit = process::open_limit();
    say_target_faults(totals, stats);
    for (const auto& [pid, execs] : execs_)
        if (execs > kExecsSaid && roots_.contains(pid))
            spdlog::warn("process {} replaced its program {} times", pid, execs);
    result.resolver_cpu_ns = resolver_->cpu_ns();
    const double per_sample = stats.samples == 0 ? 0.0
                                                 : static_cast<double>(result.sampling_cpu_ns) /
                                                       1e3 / static_cast<double>(stats.samples);
    spdlog::info("{} thread samples: {} with the stack of the thread's previous sample, {} of "
                 "threads the scheduler's events showed idle (no read at all), {} of threads "
                 "they showed runnable (no stat read), {} dropped",
                 stats.samples, stats.reused, stats.unread, stats.state_from_events, stats.dropped);
    spdlog::info("sampling thread: {:.1f} ms of CPU ({:.2f} us per thread sample); resolver "
                 "thread: {:.1f} ms; {} code objects read, {} stacks resolved from cache",
                 static_cast<double>(result.sampling_cpu_ns) / 1e6, per_sample,
                 static_cast<double>(result.resolver_cpu_ns) / 1e6, result.resolve.code_misses,
                 result.resolve.resolved_hits);
    if (options_.sampler.native) {
        const NativeResolveStats native = resolver_->native_stats();
        spdlog::info("native stacks: {} unwound ({} could not be), {} merged with their Python "
                     "frames, {} cut where the copy of the stack ended ({} of these placed by "
                     "stack address, the others by count), {} left as Python frames alone "
                     "(their eval calls and Python frames disagreed: marked {}), {} without "
                     "registers; modules reported again {} times",
                     native.stacks, native.unwind_failed, native.merged, native.cut,
                     native.by_address, native.mismatch, kMismatchMarker, native.no_context,
                     native.module_reports);
    }
    if (options_.sampler.waits != model::WaitDetail::off)
        spdlog::info("wait reasons: {} read from the thread's syscall file, {} kept from the "
                     "previous sample; {} descriptors described ({} closed or reused first), "
                     "{} reads of the net tables",
                     stats.wait_reads, stats.wait_reused, result.waits.links_read,
                     result.waits.fd_changed, result.waits.net_parses);
    if (resolver_->table_resets() != 0)
        spdlog::info("the frame and stack tables were emptied {} times (bounded for --window)",
                     resolver_->table_resets());
    sink.finish(totals);
    result.totals = totals;
    return result;
}

} // namespace spyglass::sampling
