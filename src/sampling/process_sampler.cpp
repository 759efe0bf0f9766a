#include "spyglass/sampling/process_sampler.hpp"

#include <spdlog/spdlog.h>

namespace spyglass::sampling {

namespace {
// Thread names come from the target's threading module: look again at most this often while
// some thread has none yet.
constexpr std::uint64_t kNamingIntervalNs = 500'000'000;
// How often to check that the process still runs the program it ran at attach.
constexpr std::uint64_t kExecCheckIntervalNs = 250'000'000;
} // namespace

ThreadRegistry::Entry ThreadRegistry::find_or_add(pid_t pid, pid_t tid, std::uint64_t thread_id) {
    auto [it, inserted] = index_.try_emplace(Key{pid, tid, thread_id}, next_);
    if (inserted) ++next_;
    return {it->second, inserted};
}

ProcessSampler::ProcessSampler(std::unique_ptr<python::PythonProcess> process, FrameTable& frames,
                               StackTable& stacks, ThreadRegistry& registry,
                               const SamplerOptions& options)
    : process_(std::move(process)), frames_(frames), stacks_(stacks), registry_(registry),
      options_(options), reader_(*process_, frames, options.stack),
      objects_(process_->memory(), process_->target()), tracer_(process_->pid()),
      exec_watch_(process_->pid(), process_->target().interp_head_slot),
      torn_marker_(frames.marker("<unreadable: the stack changed while it was read>")) {}

ProcessSampler::~ProcessSampler() {
    const StackReadStats& s = reader_.stats();
    spdlog::info("process {}: {} stacks read in {} attempts ({} torn: {} unreadable, {} changed, "
                 "{} bad code, {} bad offset, {} across a yield), {} resolved from cache, {} code "
                 "objects loaded ({} reused addresses), {} remote reads, thread lists {} batched / "
                 "{} walked, {} pauses, {} threads seized",
                 process_->pid(), s.stacks, s.attempts, s.torn_attempts, s.torn_unreadable,
                 s.torn_changed, s.torn_bad_code, s.torn_bad_offset, s.torn_suspended,
                 s.resolved_hits, s.code_misses, s.code_stale, process_->memory().read_calls(),
                 process_->fast_thread_reads(), process_->slow_thread_reads(), pause_stats_.pauses,
                 tracer_.seized());
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

void ProcessSampler::name_threads(SampleSink& sink, std::uint64_t now_ns) {
    if (!unnamed_threads_ || (last_naming_ns_ != 0 && now_ns - last_naming_ns_ < kNamingIntervalNs))
        return;
    last_naming_ns_ = now_ns;
    unnamed_threads_ = false;
    std::unordered_map<python::Address, std::unordered_map<std::uint64_t, std::string>> names;
    for (const python::ThreadRecord& record : records_) {
        auto it = threads_.find(record.tid);
        if (it == threads_.end() || it->second.named) continue;
        if (!names.contains(record.interp))
            names[record.interp] = objects_.thread_names(record.interp);
        auto name = names[record.interp].find(record.thread_id);
        ThreadInfo info{process_->pid(), record.tid, record.thread_id, ""};
        if (name != names[record.interp].end()) {
            info.name = name->second;
            it->second.named = true;
        } else {
            info.name = process::task_comm(process_->pid(), record.tid).value_or("");
            unnamed_threads_ = true;
        }
        sink.thread(it->second.index, info);
    }
}

ProcessState ProcessSampler::sample(std::uint64_t now_ns, SampleSink& sink, PassStats& stats) {
    if (now_ns >= next_exec_check_ns_) {
        next_exec_check_ns_ = now_ns + kExecCheckIntervalNs;
        if (exec_watch_.replaced()) return ProcessState::replaced;
    }
    if (auto status = process_->read_threads(records_); !status) {
        if (status.error().code == Errc::process_gone || gone()) return ProcessState::exited;
        if (exec_watch_.replaced()) return ProcessState::replaced;
        ++stats.failed_passes; // a thread was starting or exiting: try again next tick
        return ProcessState::sampling;
    }
    ++generation_;

    for (const python::ThreadRecord& record : records_) {
        if (record.tid == 0) continue;
        auto it = threads_.find(record.tid);
        if (it == threads_.end() || it->second.thread_id != record.thread_id) {
            // A new thread (or a new one that got the TID of one that exited).
            ThreadState fresh{process::TaskStatReader(process_->pid(), record.tid)};
            fresh.index =
                registry_.find_or_add(process_->pid(), record.tid, record.thread_id).index;
            fresh.thread_id = record.thread_id;
            it = threads_.insert_or_assign(record.tid, std::move(fresh)).first;
            unnamed_threads_ = true;
            sink.thread(it->second.index,
                        ThreadInfo{process_->pid(), record.tid, record.thread_id,
                                   process::task_comm(process_->pid(), record.tid).value_or("")});
        }
        ThreadState& thread = it->second;
        thread.generation = generation_;

        // A thread that was off the CPU and has not run since is still off it: its run time
        // alone says so, without reading its stat.
        std::uint64_t run_ns = 0;
        char state = 0;
        if (options_.reuse_idle && thread.have_run_ns && !thread.on_cpu) {
            auto run = thread.stat.read_run_ns();
            if (!run) continue; // the thread exited
            run_ns = *run;
            if (run_ns == thread.run_ns) state = 'S';
        }
        if (state == 0) {
            auto reading = thread.stat.read();
            if (!reading) continue;
            state = reading->state;
            run_ns = reading->run_ns;
        }
        bool on_cpu = state == 'R';
        std::uint64_t cpu_ns =
            thread.have_run_ns && run_ns >= thread.run_ns ? run_ns - thread.run_ns : 0;
        bool ran = !thread.have_run_ns || run_ns != thread.run_ns || on_cpu;
        thread.run_ns = run_ns;
        thread.have_run_ns = true;
        thread.on_cpu = on_cpu;

        bool gil = record.holds_gil == 1;
        if ((options_.mode == SampleMode::cpu && !on_cpu) || (options_.gil_only && !gil)) {
            ++stats.skipped;
            thread.have_previous = false; // its stack is not known any more
            continue;
        }

        python::Address frame_pointer = record.cframe != 0 ? record.cframe : record.frame;
        Sample sample;
        sample.thread = thread.index;
        sample.time_ns = now_ns;
        sample.on_cpu = on_cpu;
        sample.gil = gil;
        sample.cpu_ns = cpu_ns;
        if (options_.reuse_idle && !ran && thread.have_previous &&
            frame_pointer == thread.previous_frame) {
            sample.stack = thread.previous_stack;
            ++stats.reused;
        } else {
            bool paused = false;
            sample.outcome =
                read_stack(*process_, reader_, tracer_, options_.pause, record, frame_ids_,
                           thread.needed_pause ? 0 : -1, pause_stats_, paused);
            thread.needed_pause = paused && options_.pause == PauseMode::when_torn;
            if (sample.outcome == StackOutcome::gone) continue;
            if (sample.outcome == StackOutcome::torn) {
                frame_ids_.assign(1, torn_marker_);
                ++stats.errors;
            } else if (sample.outcome == StackOutcome::truncated) {
                ++stats.errors;
            }
            sample.stack = stacks_.intern(frame_ids_);
            thread.have_previous = sample.outcome == StackOutcome::ok;
            thread.previous_frame = frame_pointer;
            thread.previous_stack = sample.stack;
        }
        ++stats.samples;
        sink.sample(sample);
    }
    // Forget threads that are gone (their /proc files are closed with them).
    std::erase_if(threads_,
                  [&](const auto& entry) { return entry.second.generation != generation_; });
    name_threads(sink, now_ns);
    return ProcessState::sampling;
}

} // namespace spyglass::sampling
