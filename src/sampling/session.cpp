#include "spyglass/sampling/session.hpp"

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <ctime>

#include <pthread.h>
#include <spdlog/spdlog.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "spyglass/clock.hpp"
#include "spyglass/native/unwinder.hpp"
#include "spyglass/process/live_memory.hpp"
#include "spyglass/process/open_limit.hpp"

namespace spyglass::sampling {

namespace {

constexpr std::uint64_t kMillisecond = 1'000'000;
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
    : frames_(frames), stacks_(stacks), options_(options),
      targets_(registry_, queue_, options_.sampler, options_.subprocesses, pass_elapsed_ns_,
               totals_,
               TargetSet::Listener{[this](std::uint32_t slot, const python::TargetInfo& target,
                                          pid_t pid) { process_added(slot, target, pid); },
                                   [this](std::uint32_t slot) {
                                       push_event(CaptureKind::process_retired, slot);
                                   }}) {
    options_.sampler.period_ns = static_cast<std::uint64_t>(1e9 / options_.rate_hz);
    options_.sampler.label_values = &label_values_;
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

Result<void> Session::attach(pid_t pid) {
    return targets_.attach(pid);
}

void Session::watch(pid_t pid, std::function<bool()> alive) {
    targets_.watch(pid, std::move(alive));
}

void Session::follow(pid_t pid) {
    targets_.follow(pid);
}

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
            targets_.service_tracers();
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

void Session::process_added(std::uint32_t slot, const python::TargetInfo& target, pid_t pid) {
    auto context = std::make_shared<ProcessContext>(
        ProcessContext{target, std::make_shared<process::LiveMemory>(pid)});
    if (resolver_) {
        resolver_->register_process(slot, context);
        push_event(CaptureKind::process_added, slot);
    } else {
        early_.emplace_back(slot, context);
    }
}

void Session::begin(model::SampleSink& sink) {
    model::RecordingInfo info;
    info.command = options_.command;
    info.mode = options_.sampler.filter.mode;
    info.gil_only = options_.sampler.filter.gil_only;
    info.subprocesses = options_.subprocesses;
    info.rate_hz = options_.rate_hz;
    info.period_ns = options_.sampler.period_ns;
    info.start_unix_ns = realtime_ns();
    info.waits = options_.sampler.waits;
    sink.start(info);

    resolver_ =
        std::make_unique<Resolver>(frames_, stacks_, options_.stacks, sink, options_.sampler.waits);
    resolver_->bound_tables(options_.table_limit);
    resolver_->feed_back(native_feedback_.get());
    resolver_->label_every_sample(options_.labels);
    resolver_->label_from_sources(options_.sampler.label_sources, &label_values_);
    if (options_.sched_events && std::getenv("SPYGLASS_NO_SCHED_EVENTS") == nullptr)
        sched_ = process::SchedWatch::open();
    if (sched_)
        spdlog::info("which threads ran comes from the kernel's scheduler events");
    else
        spdlog::info("scheduler events are not available: every thread's schedstat is read");
    for (auto& [slot, context] : early_) {
        resolver_->register_process(slot, context);
        push_event(CaptureKind::process_added, slot);
    }
    early_.clear();
}

std::thread Session::start_resolver() {
    if (options_.resolve_inline) return {};
    // Signals (Ctrl-C, SIGCHLD from traced threads) must wake the sampling thread's sleep,
    // never land on the resolver's.
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);
    std::thread resolving([this] {
        // Below the sampling thread: when the resolver has a burst of work (a module's DWARF
        // loaded for its first source line, a dlopen), the scheduler must not run it in place
        // of the sampling thread while that thread holds a target thread stopped. The queue
        // between them absorbs the delay.
        (void)::setpriority(PRIO_PROCESS, static_cast<id_t>(::gettid()), kResolverNice);
        resolver_->run(queue_);
    });
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    pthread_setname_np(resolving.native_handle(), "spyglass-res");
    return resolving;
}

SessionResult Session::run(model::SampleSink& sink, const std::atomic<int>& stop,
                           const std::function<void(const Progress&)>& progress) {
    // Default timer slack (50 us) would make every sleep late at high rates.
    ::prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    const process::TraceeEventsHeld tracee_events_held;
    SessionResult result;
    begin(sink);
    std::thread resolving = start_resolver();
    TickClock clock(options_.sampler.period_ns,
                    static_cast<std::uint64_t>(options_.duration_s * 1e9), options_.jitter);
    clock.start(monotonic_ns());
    targets_.begin(clock.start_ns(), sched_.get());
    const std::uint64_t cpu_start = thread_cpu_ns();
    const std::uint64_t ended = tick_until_done(clock, stop, progress, result.stats);
    totals_.elapsed_ns = ended - clock.start_ns();
    result.sampling_cpu_ns = thread_cpu_ns() - cpu_start;
    finish(resolving, result);
    say_stats(result);
    sink.finish(totals_);
    result.totals = totals_;
    return result;
}

std::uint64_t Session::tick_until_done(TickClock& clock, const std::atomic<int>& stop,
                                       const std::function<void(const Progress&)>& progress,
                                       PassStats& stats) {
    std::uint64_t now = clock.start_ns(), next_progress = 0, next_clock = 0;
    for (;;) {
        if (stop.load(std::memory_order_relaxed) > 0) {
            totals_.end = model::RecordingEnd::stopped;
            return now;
        }
        if (!sleep_until(clock.wake_at(), stop)) {
            totals_.end = model::RecordingEnd::stopped;
            return monotonic_ns();
        }
        now = monotonic_ns();
        if (clock.over(now)) {
            totals_.end = model::RecordingEnd::duration;
            return std::min(now, clock.end_ns());
        }
        totals_.late_ticks += clock.take(now);
        const std::uint64_t elapsed = now - clock.start_ns();
        pass_elapsed_ns_ = elapsed;
        targets_.pass(now, elapsed, stats);
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
        count_pass(elapsed, stats);
        if (!targets_.anything_alive()) {
            totals_.end = model::RecordingEnd::targets_exited;
            return now;
        }
        if (progress && now >= next_progress) {
            progress(totals_);
            next_progress = now + kProgressIntervalNs;
        }
    }
}

void Session::count_pass(std::uint64_t elapsed_ns, const PassStats& stats) {
    ++totals_.ticks;
    totals_.samples = stats.samples;
    totals_.errors = stats.errors;
    totals_.dropped = stats.dropped;
    totals_.elapsed_ns = elapsed_ns;
    totals_.processes = targets_.sampled();
    totals_.waiting = targets_.sampled() == 0;
}

void Session::finish(std::thread& resolving, SessionResult& result) {
    const PassStats& stats = result.stats;
    targets_.retire_all();
    totals_.pauses = targets_.pauses().summary();
    totals_.samples = stats.samples;
    totals_.errors = stats.errors;
    totals_.dropped = stats.dropped;
    totals_.processes = targets_.sampled();
    queue_.close();
    if (resolving.joinable())
        resolving.join();
    else
        resolver_->drain(queue_);
    result.resolve = resolver_->stats();
    result.waits = resolver_->wait_stats();
    result.resolver_cpu_ns = resolver_->cpu_ns();
    totals_.unreadable_code = resolver_->unreadable_samples();
    totals_.errors += totals_.unreadable_code;
    totals_.looping_stacks = stats.looping_stacks;
    totals_.threads_without_descriptors = stats.threads_without_descriptors;
    totals_.open_limit = process::open_limit();
    say_target_faults(totals_, stats);
    if (stats.unreadable_labels != 0)
        spdlog::warn("{} --context values could not be read (the context changed while it was "
                     "read): those samples carry no such label",
                     stats.unreadable_labels);
    if (const std::uint64_t over = label_values_.overflowed(); over != 0)
        spdlog::warn("--context: more than {} distinct values; {} samples' values are shown as "
                     "\"{}\"",
                     LabelValues::kMaxValues, over, LabelValues::kOverflowText);
    targets_.say_exec_counts();
}

void Session::say_stats(const SessionResult& result) const {
    const PassStats& stats = result.stats;
    const double per_sample = stats.samples == 0 ? 0.0
                                                 : static_cast<double>(result.sampling_cpu_ns) /
                                                       1e3 / static_cast<double>(stats.samples);
    spdlog::info("{} thread samples: {} with the stack of the thread's previous sample, {} of "
                 "threads the scheduler's events showed idle (no read at all), {} of threads "
                 "they showed runnable (no stat read), {} of threads they showed on one CPU since "
                 "the previous pass (no read at all), {} dropped",
                 stats.samples, stats.reused, stats.unread, stats.state_from_events,
                 stats.running_by_events, stats.dropped);
    if (sched_)
        spdlog::info("scheduler events: {} records of the target's threads; {} passes found "
                     "some lost (a ring overflowed) and read every thread's state instead",
                     sched_->records(), sched_->lost_polls());
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
}

} // namespace spyglass::sampling
