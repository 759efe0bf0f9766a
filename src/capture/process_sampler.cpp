#include "spyglass/capture/process_sampler.hpp"

#include <algorithm>
#include <iterator>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "spyglass/capture/wait_capture.hpp"

namespace spyglass::sampling {

namespace {
// How often to check that the process still runs the program it ran at attach.
constexpr std::uint64_t kExecCheckIntervalNs = 250'000'000;
// The longest a pause waits for a thread that waits for a CPU to get one.
constexpr std::uint64_t kCoreWaitNs = 5'000'000;
// How often every thread state is read again although the scheduler says they did not run.
constexpr std::uint64_t kFullReadIntervalNs = 200'000'000;

// Thread states to read again: those of threads the scheduler saw run (or knows nothing of).
class RanSince final : public python::ThreadRefresh {
  public:
    explicit RanSince(const process::SchedWatch& sched) : sched_(sched) {}
    [[nodiscard]] bool stale(pid_t tid) const override {
        return sched_.seen(tid) != process::SchedWatch::Seen::idle;
    }

  private:
    const process::SchedWatch& sched_;
};
} // namespace

std::uint32_t ThreadRegistry::find_or_add(pid_t pid, pid_t tid, std::uint64_t thread_id) {
    auto [it, inserted] = index_.try_emplace(Key{pid, tid, thread_id}, next_);
    if (inserted) ++next_;
    return it->second;
}

ProcessSampler::ProcessSampler(std::unique_ptr<python::PythonProcess> process, std::uint32_t slot,
                               ThreadRegistry& registry, CaptureQueue& queue,
                               const SamplerOptions& options, std::uint64_t attached_ns)
    : process_(std::move(process)), slot_(slot), registry_(registry), queue_(queue),
      options_(options), capturer_(*process_, options.retries), tracer_(process_->pid()),
      exec_watch_(process_->pid(), process_->target().interp_head_slot), fds_(process_->pid()),
      attached_ns_(attached_ns) {
    if (options_.native)
        native_context_.reserve(sizeof(native::ContextHeader) + native::kMaxStackCopy);
    // One capture per source kind, reading all its keys at once.
    std::vector<std::string> kinds;
    for (const LabelSourceSpec& spec : options_.label_sources)
        if (std::find(kinds.begin(), kinds.end(), spec.kind) == kinds.end())
            kinds.push_back(spec.kind);
    for (const std::string& kind : kinds) {
        LabelGroup group;
        std::vector<std::string> keys;
        for (std::size_t i = 0; i < options_.label_sources.size() && i < kMaxSourcedLabels; ++i)
            if (options_.label_sources[i].kind == kind) {
                keys.push_back(options_.label_sources[i].key);
                group.slots.push_back(i);
            }
        std::string note;
        group.capture =
            make_label_capture(kind, keys, process_->target(), process_->memory(), note);
        if (!note.empty()) spdlog::warn("process {}: {}", process_->pid(), note);
        if (group.capture) label_groups_.push_back(std::move(group));
    }
}

ProcessSampler::~ProcessSampler() {
    const CaptureStats& s = capturer_.stats();
    spdlog::info(
        "process {}: {} stacks captured in {} attempts ({} torn: {} unreadable, {} "
        "changed, {} not code, {} bad offset, {} across a yield), {} remote reads, "
        "thread lists {} batched / {} walked, {} pauses, {} threads seized{}",
        process_->pid(), s.stacks, s.attempts, s.torn_attempts, s.torn_unreadable, s.torn_changed,
        s.torn_bad_code, s.torn_bad_offset, s.torn_suspended, process_->memory().read_calls(),
        process_->fast_thread_reads(), process_->slow_thread_reads(), pause_stats_.pauses,
        tracer_.seized(),
        options_.pause == PauseMode::always
            ? fmt::format(", {} asleep in the kernel read without a stop", pause_stats_.asleep)
            : std::string());
    if (tracer_.pause_priority() != process::PausePriority::untried)
        spdlog::info("process {}: the sampling thread {} while a thread was paused; {} pauses "
                     "waited for their thread to get a CPU ({} interrupted it without one), {} "
                     "timed from the "
                     "moment their thread got a CPU after the interrupt",
                     process_->pid(),
                     tracer_.pause_priority() == process::PausePriority::raised
                         ? "ran SCHED_FIFO"
                         : "could not run SCHED_FIFO (no CAP_SYS_NICE, or real-time already)",
                     tracer_.core_waits().waited, tracer_.core_waits().gave_up,
                     tracer_.core_waits().late_cpu);
    if (!options_.native) return;
    const NativeStats& n = native_stats_;
    spdlog::info("process {}: native stacks: {} of blocked threads taken without a stop ({} "
                 "moved while read), {} with a stop ({} of blocked threads whose unwind without a "
                 "stop had ended early: {} threads, {} of them given up), {} not taken ({} "
                 "running threads left alone with --nonblocking); stack copies of {} threads "
                 "grown from {} to {} KiB",
                 process_->pid(), n.unstopped, n.moved, n.stopped, n.fallback, n.fallback_threads,
                 n.fallback_dropped, n.failed + n.skipped, n.skipped, n.grown,
                 native::kMinStackCopy >> 10, native::kMaxStackCopy >> 10);
    if (spdlog::should_log(spdlog::level::debug)) {
        // Per live thread: which capture path its samples took (the tests check it per thread).
        std::string line;
        std::size_t listed = 0;
        for (const auto& [tid, thread] : threads_) {
            if (thread.native_unstopped + thread.native_stopped == 0) continue;
            if (++listed > 256) break;
            fmt::format_to(std::back_inserter(line), " {}: {}/{}", tid, thread.native_unstopped,
                           thread.native_stopped);
        }
        spdlog::debug("process {}: native captures per thread (tid: without a stop/with a "
                      "stop):{}{}",
                      process_->pid(), line, listed > 256 ? " ..." : "");
    }
}

Result<void> ProcessSampler::check_pausing() {
    if (auto probed = tracer_.probe(process_->pid()); !probed) {
        if (probed.error() == process::PauseFailure::refused)
            return fail(Errc::permission_denied, "--blocking cannot pause the threads: {}",
                        tracer_.refusal());
        return fail(Errc::process_gone, "process {} exited", process_->pid());
    }
    return {};
}

bool ProcessSampler::gone() const {
    auto stat = process::read_stat(process_->pid());
    return !stat || stat->state == 'Z' || stat->state == 'X';
}

void ProcessSampler::say_thread_list_fault(std::size_t threads) {
    const python::ThreadListFault fault = process_->thread_list_fault();
    if (fault == python::ThreadListFault::none) return; // mended: said already
    list_fault_said_ = fault;
    if (fault == python::ThreadListFault::loops)
        spdlog::warn("process {}: {}", process_->pid(),
                     python::thread_list_fault_text(fault, threads));
    else
        spdlog::warn("process {}: {}: nothing to sample", process_->pid(),
                     python::thread_list_fault_text(fault, threads));
}

ProcessState ProcessSampler::sample(std::uint64_t now_ns, PassStats& stats,
                                    process::SchedWatch* sched) {
    // A pause waits at most half a period for a thread to get a CPU: the tick is not delayed.
    tracer_.wait_for_core(sched, std::min<std::uint64_t>(options_.period_ns / 2, kCoreWaitNs));
    if (now_ns >= next_exec_check_ns_) {
        next_exec_check_ns_ = now_ns + kExecCheckIntervalNs;
        if (exec_watch_.replaced()) return ProcessState::replaced;
    }
    // With the scheduler's events only the states of threads that ran are read again, except
    // when threads came or went, and now and then.
    std::optional<RanSince> refresh;
    if (sched != nullptr && !sched->threads_changed(process_->pid()) && now_ns < next_full_read_ns_)
        refresh.emplace(*sched);
    else
        next_full_read_ns_ = now_ns + kFullReadIntervalNs;
    if (auto status = process_->read_threads(records_, refresh ? &*refresh : nullptr); !status) {
        if (status.error().code == Errc::process_gone || gone()) return ProcessState::exited;
        if (exec_watch_.replaced()) return ProcessState::replaced;
        return ProcessState::sampling; // a thread was starting or exiting: try again next tick
    }
    ++generation_;
    if (process_->thread_list_fault() != list_fault_said_) say_thread_list_fault(records_.size());

    tracer_serviced_ = false;
    for (const python::ThreadRecord& record : records_)
        if (record.tid != 0) sample_thread(record, tracked(record), now_ns, stats, sched);
    // Forget threads that are gone (their /proc files are closed with them).
    std::erase_if(threads_, [&](const auto& entry) {
        if (entry.second.generation == generation_) return false;
        if (sched != nullptr) sched->forget(entry.first);
        return true;
    });
    return ProcessState::sampling;
}

ProcessSampler::ThreadState& ProcessSampler::tracked(const python::ThreadRecord& record) {
    auto it = threads_.find(record.tid);
    if (it == threads_.end() || it->second.thread_id != record.thread_id) {
        // A new thread (or a new one that got the TID of one that exited).
        std::uint32_t index = registry_.find_or_add(process_->pid(), record.tid, record.thread_id);
        ThreadState fresh{process::TaskStatReader(process_->pid(), record.tid)};
        fresh.index = index;
        fresh.thread_id = record.thread_id;
        it = threads_.insert_or_assign(record.tid, std::move(fresh)).first;
        python::RawFrame* none = nullptr;
        if (ThreadCapture* seen = queue_.reserve(0, none)) {
            seen->kind = CaptureKind::thread_seen;
            seen->process = slot_;
            seen->thread = index;
            seen->tid = record.tid;
            seen->thread_id = record.thread_id;
            seen->interp = record.interp;
            queue_.push();
        }
    }
    it->second.generation = generation_;
    return it->second;
}

void ProcessSampler::capture_labels(const python::ThreadRecord& record, ThreadState& thread,
                                    bool ran, ThreadCapture& base, PassStats& stats) {
    // A thread that has not run has not set a variable or entered a context.
    if ((ran || !thread.have_label_words) && options_.label_values != nullptr) {
        std::array<std::uint64_t, kMaxSourcedLabels> words{};
        for (LabelGroup& group : label_groups_) {
            const std::uint64_t unreadable = group.capture->unreadable();
            group.capture->capture(record, *options_.label_values,
                                   std::span(words.data(), group.slots.size()));
            stats.unreadable_labels += group.capture->unreadable() - unreadable;
            for (std::size_t k = 0; k < group.slots.size(); ++k)
                thread.label_words[group.slots[k]] = words[k];
        }
        thread.have_label_words = true;
    }
    base.label_words = thread.label_words;
}

std::uint64_t ProcessSampler::weight(ThreadState& thread, std::uint64_t now_ns) const {
    // The time since this thread was last looked at: a tick that came late stands for the
    // ticks it missed. A new thread: one period, unless this is the first pass over the
    // process and it came late (the threads found at attach were there all along).
    std::uint64_t weight = options_.period_ns;
    if (thread.last_seen_ns != 0 && now_ns > thread.last_seen_ns)
        weight = now_ns - thread.last_seen_ns;
    else if (thread.last_seen_ns == 0 && generation_ == 1 && now_ns > attached_ns_)
        weight = std::max(weight, now_ns - attached_ns_);
    thread.last_seen_ns = now_ns;
    return weight;
}

void ProcessSampler::sample_thread(const python::ThreadRecord& record, ThreadState& thread,
                                   std::uint64_t now_ns, PassStats& stats,
                                   process::SchedWatch* sched) {
    const bool want_wait = options_.waits != model::WaitDetail::off;
    const ScheduleQuery query{.sched = sched,
                              .reuse_idle = options_.reuse_idle,
                              .want_last_cpu = options_.native,
                              .want_state_letter = want_wait && !thread.wait_known,
                              .tracer = &tracer_,
                              .serviced = &tracer_serviced_,
                              .now_ns = now_ns};
    auto observed = thread.schedule.observe(thread.stat, record.tid, query);
    if (!observed) {
        if (observed.error() == Errc::io) short_of_descriptors(thread, stats);
        return; // the thread exited
    }
    const ThreadSchedule::Pass& pass = *observed;
    stats.unread += pass.idle_by_events;
    stats.state_from_events += pass.runnable_by_events;
    stats.running_by_events += pass.running_by_events;
    const std::uint64_t weight_ns = weight(thread, now_ns);
    const bool gil = record.holds_gil == 1;
    if ((options_.filter.mode == model::SampleMode::cpu && !pass.on_cpu) ||
        (options_.filter.gil_only && !gil)) {
        ++stats.skipped;
        thread.have_previous = false; // its stack is not known any more
        thread.wait_known = false;
        return;
    }
    ThreadCapture base;
    base.process = slot_;
    base.thread = thread.index;
    base.tid = record.tid;
    base.time_ns = now_ns;
    base.weight_ns = weight_ns;
    base.cpu_ns = pass.cpu_ns;
    base.on_cpu = pass.on_cpu;
    base.gil = gil;
    if (want_wait) base.wait = wait_of(thread, pass, stats);
    if (!label_groups_.empty()) capture_labels(record, thread, pass.ran, base, stats);
    // A larger stack copy or a stop is wanted: the previous capture is not reused.
    if (options_.native && learn_native(thread)) thread.have_previous = false;
    const python::Address frame_pointer = record.cframe != 0 ? record.cframe : record.frame;
    const bool same_stack = options_.reuse_idle && !pass.ran && thread.have_previous &&
                            frame_pointer == thread.previous_frame;
    thread.previous_frame = frame_pointer;
    if (!(same_stack ? push_same_stack(base, stats) : push_sample(record, thread, base, stats))) {
        ++stats.dropped;
        thread.wait_known = false; // the resolver did not get this one
    }
}

RawWait ProcessSampler::wait_of(ThreadState& thread, const ThreadSchedule::Pass& pass,
                                PassStats& stats) {
    if (pass.on_cpu) {
        thread.wait_known = false;
        return RawWait{.read = pass.starved ? WaitRead::cpu_starved : WaitRead::none};
    }
    if (!pass.ran && thread.wait_known) {
        // Not a single instruction since: still in the same call.
        ++stats.wait_reused;
        return RawWait{.read = WaitRead::previous};
    }
    return read_wait(thread, pass.state, stats);
}

bool ProcessSampler::push_same_stack(const ThreadCapture& base, PassStats& stats) {
    python::RawFrame* none = nullptr;
    ThreadCapture* slot = queue_.reserve(0, none);
    if (slot == nullptr) return false;
    *slot = base;
    slot->same_stack = true;
    queue_.push();
    ++stats.reused;
    ++stats.samples;
    return true;
}

void ProcessSampler::short_of_descriptors(ThreadState& thread, PassStats& stats) {
    ++stats.missed_without_descriptors;
    if (thread.without_descriptors) return;
    thread.without_descriptors = true;
    ++stats.threads_without_descriptors;
}

RawWait ProcessSampler::read_wait(ThreadState& thread, char state, PassStats& stats) {
    ++stats.wait_reads;
    RawWait wait = read_raw_wait(thread.stat, fds_, state);
    // Woken between the two reads, or unreadable (no ptrace access): no reason, and the next
    // sample tries again.
    thread.wait_known = wait.read != WaitRead::none;
    return wait;
}

bool ProcessSampler::learn_native(ThreadState& thread) {
    if (options_.native_feedback == nullptr) return false;
    const std::uint32_t flags = options_.native_feedback->take(thread.index);
    if (flags == 0) return false;
    const NativePolicy::Change change = thread.native.learn(flags);
    native_stats_.grown += change.grown;
    native_stats_.fallback_threads += change.fell_back;
    native_stats_.fallback_dropped += change.gave_up;
    return change.retake;
}

bool ProcessSampler::push_sample(const python::ThreadRecord& record, ThreadState& thread,
                                 ThreadCapture base, PassStats& stats) {
    capturer_.set_thread_running(thread.schedule.on_cpu());
    const CaptureContext where{*process_, capturer_, tracer_, options_.pause, pause_stats_};
    Captured captured;
    if (options_.native) {
        if (!thread.syscall) thread.syscall.emplace(process_->pid(), record.tid);
        NativeThread native{&thread.stat,
                            &*thread.syscall,
                            thread.schedule.run(),
                            thread.schedule.on_cpu(),
                            thread.schedule.last_cpu(),
                            thread.native.stack_copy,
                            thread.native.stop_when_blocked};
        const std::uint64_t unstopped = native_stats_.unstopped;
        captured = capture_native(where, record, native, native_context_, native_stats_);
        thread.native_unstopped += native_stats_.unstopped != unstopped;
        thread.native_stopped += captured.paused;
        thread.needed_pause = false;
    } else {
        const AsleepThread asleep{&thread.stat, thread.schedule.run()};
        captured = capture_stack(where, record,
                                 {.retries = thread.needed_pause ? 0 : -1,
                                  .asleep = thread.schedule.on_cpu() ? nullptr : &asleep});
        thread.needed_pause = captured.paused && options_.pause == PauseMode::when_torn;
    }
    const bool paused = captured.paused;
    CaptureOutcome outcome = captured.outcome;
    thread.have_previous = false;
    if (outcome == CaptureOutcome::gone) return true;
    if (!paused && outcome == CaptureOutcome::truncated &&
        capturer_.raw().end == python::StackEnd::cycle) {
        // A loop read from a thread that was not on a CPU is corruption only if it did not run
        // during the read either: one that ran may have freed and reused a frame mid-read.
        auto mark = thread.stat.read_run_mark();
        if (!mark || !(*mark == thread.schedule.run())) outcome = CaptureOutcome::torn;
    }
    const python::RawStack& raw = capturer_.raw();
    std::uint32_t depth = outcome == CaptureOutcome::torn ? 0 : raw.depth;
    const auto context_bytes = static_cast<std::uint32_t>(
        options_.native && outcome != CaptureOutcome::torn ? native_context_.size() : 0);
    python::RawFrame* frames = nullptr;
    std::uint8_t* bytes = nullptr;
    ThreadCapture* slot = queue_.reserve(depth, frames, context_bytes, bytes);
    if (slot == nullptr) return false;
    std::copy_n(raw.frames.begin(), depth, frames);
    if (context_bytes > 0) std::copy_n(native_context_.data(), context_bytes, bytes);
    *slot = base;
    slot->outcome = outcome;
    slot->paused = paused;
    slot->native = options_.native;
    slot->too_deep = raw.end == python::StackEnd::too_deep;
    slot->loops = outcome == CaptureOutcome::truncated && raw.end == python::StackEnd::cycle;
    queue_.push();
    // A stack cut at the frame limit, or where its chain loops, is cut the same way next time:
    // as good as whole.
    thread.have_previous = outcome == CaptureOutcome::ok || slot->too_deep || slot->loops;
    ++stats.samples;
    stats.looping_stacks += slot->loops;
    if (outcome == CaptureOutcome::torn ||
        (outcome == CaptureOutcome::truncated && !slot->too_deep))
        ++stats.errors;
    return true;
}

} // namespace spyglass::sampling
