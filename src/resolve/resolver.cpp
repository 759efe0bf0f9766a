#include "spyglass/resolve/resolver.hpp"

#include <ctime>

#include "spyglass/process/procfs.hpp"

namespace spyglass::sampling {

namespace {
// Thread names come from the target's threading module: look again at most this often while
// some thread has none yet.
constexpr std::uint64_t kNamingIntervalNs = 500'000'000;

void add(ResolveStats& into, const ResolveStats& from) {
    into.code_misses += from.code_misses;
    into.code_stale += from.code_stale;
    into.code_gone += from.code_gone;
    into.resolved_hits += from.resolved_hits;
}

void add(NativeResolveStats& into, const NativeResolveStats& from) {
    into.stacks += from.stacks;
    into.no_context += from.no_context;
    into.unwind_failed += from.unwind_failed;
    into.merged += from.merged;
    into.cut += from.cut;
    into.mismatch += from.mismatch;
    into.by_address += from.by_address;
    into.module_reports += from.module_reports;
}

void add(WaitResolveStats& into, const WaitResolveStats& from) {
    into.links_read += from.links_read;
    into.net_parses += from.net_parses;
    into.fd_changed += from.fd_changed;
}
} // namespace

Resolver::Resolver(model::FrameTable& frames, model::StackTable& stacks, StackReadOptions options,
                   model::SampleSink& sink, model::WaitDetail waits)
    : frames_(frames), stacks_(stacks), options_(options), sink_(sink), waits_(waits),
      torn_marker_(frames.marker("<unreadable: the stack changed while it was read>")),
      deeper_marker_(frames.marker("<deeper: more frames than the limit of 4096>")),
      loops_marker_(frames.marker(kLoopsMarker)) {}

Resolver::~Resolver() = default;

void Resolver::label_every_sample(std::vector<model::LabelText> labels) {
    static_labels_ = std::move(labels);
    intern_static_labels();
}

void Resolver::intern_static_labels() {
    std::vector<model::Label> labels;
    for (const model::LabelText& label : static_labels_)
        labels.push_back(
            {frames_.strings().intern(label.key), frames_.strings().intern(label.value)});
    static_label_set_ = frames_.intern_labels(labels);
}

void Resolver::register_process(std::uint32_t slot, std::shared_ptr<const ProcessContext> context) {
    std::lock_guard lock(registered_mutex_);
    registered_[slot] = std::move(context);
}

Resolver::ProcessEntry* Resolver::process_entry(std::uint32_t slot) {
    auto it = processes_.find(slot);
    if (it != processes_.end()) return &it->second;
    std::shared_ptr<const ProcessContext> context;
    {
        std::lock_guard lock(registered_mutex_);
        auto found = registered_.find(slot);
        if (found == registered_.end()) return nullptr;
        context = found->second;
    }
    ProcessEntry& entry = processes_[slot];
    entry.context = context;
    entry.stacks =
        std::make_unique<StackResolver>(context->memory, context->target, frames_, options_);
    entry.objects = std::make_unique<python::ObjectReader>(*context->memory, context->target);
    if (options_.native)
        entry.native =
            std::make_unique<NativeResolver>(context->target, frames_, options_.native_all);
    if (waits_ != model::WaitDetail::off)
        entry.waits = std::make_unique<WaitResolver>(context->memory, context->target);
    return &entry;
}

WaitResolveStats Resolver::wait_stats() const {
    WaitResolveStats out = retired_wait_stats_;
    for (const auto& [slot, entry] : processes_)
        if (entry.waits) add(out, entry.waits->stats());
    return out;
}

ResolveStats Resolver::stats() const {
    ResolveStats out = retired_stats_;
    for (const auto& [slot, entry] : processes_)
        if (entry.stacks) add(out, entry.stacks->stats());
    return out;
}

NativeResolveStats Resolver::native_stats() const {
    NativeResolveStats out = retired_native_;
    for (const auto& [slot, entry] : processes_)
        if (entry.native) add(out, entry.native->stats());
    return out;
}

void Resolver::drain(CaptureQueue& queue) {
    std::span<const python::RawFrame> frames;
    std::span<const std::uint8_t> bytes;
    while (const ThreadCapture* capture = queue.front(frames, bytes)) {
        handle(*capture, frames, bytes);
        queue.pop();
    }
}

void Resolver::run(CaptureQueue& queue) {
    while (queue.wait())
        drain(queue);
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    cpu_ns_ = static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ull +
              static_cast<std::uint64_t>(ts.tv_nsec);
}

void Resolver::handle(const ThreadCapture& capture, std::span<const python::RawFrame> frames,
                      std::span<const std::uint8_t> bytes) {
    if (capture.kind == CaptureKind::clock) {
        sink_.advance(capture.time_ns);
        return;
    }
    ProcessEntry* process = process_entry(capture.process);
    if (process == nullptr) return; // not registered: a programming error, nothing to show
    if (capture.kind != CaptureKind::sample) {
        handle_event(capture, *process);
        return;
    }
    if (capture.thread >= threads_.size()) return;
    ThreadEntry& thread = threads_[capture.thread];
    model::Sample sample;
    sample.key.thread = capture.thread;
    sample.key.on_cpu = capture.on_cpu;
    sample.key.gil = capture.gil;
    sample.time_ns = capture.time_ns;
    sample.weight_ns = capture.weight_ns;
    sample.cpu_ns = capture.cpu_ns;
    sample.key.labels =
        label_sources_.empty() ? static_label_set_ : sourced_labels(capture, thread);
    if (capture.same_stack && thread.have_last) {
        sample.key.stack = thread.last_stack;
        sample.new_calls = 0; // it has not run since
        unreadable_samples_ += thread.last_unreadable;
    } else if (capture.outcome == CaptureOutcome::torn || capture.same_stack) {
        // (A same-stack capture whose previous stack is not known has no frames to resolve.)
        sample.status = model::StackStatus::torn;
        sample.key.stack = stacks_.intern(std::span(&torn_marker_, 1));
        thread.have_last = false;
    } else {
        sample.status = resolve_stack(capture, frames, bytes, *process);
        sample.key.stack = stacks_.intern(ids_);
        // A torn or cut stack cannot say which calls are new; the next whole one is compared
        // with the last whole one.
        if (sample.status == model::StackStatus::ok)
            sample.new_calls =
                thread.calls.next(frames, process->stacks->kept(), [&](process::Address code) {
                    const python::CodeInfo* info = process->stacks->code(code);
                    return info == nullptr ? std::uint8_t{0} : info->stable_args;
                });
        // Whatever it resolved to (a code object gone, an unreadable one, a loop) is what the
        // thread's next same-stack captures stand for: they have not run since.
        thread.last_stack = sample.key.stack;
        thread.have_last = true;
        thread.last_unreadable = process->stacks->unreadable();
        unreadable_samples_ += thread.last_unreadable;
    }
    sample.key.wait = resolve_wait(capture, *process, thread, sample.key.stack);
    sink_.sample(sample);
    if (table_limit_ != 0 &&
        (stacks_.size() > table_limit_ || frames_.size() > table_limit_ ||
         frames_.strings().size() > table_limit_ || stacks_.frame_count() > 16 * table_limit_))
        reset_tables();
    if (process->unnamed_threads) name_threads(*process, capture.process, capture.time_ns);
}

void Resolver::handle_event(const ThreadCapture& capture, ProcessEntry& process) {
    switch (capture.kind) {
    case CaptureKind::process_added: {
        // Before any of its threads: the captures of a process come after this event.
        const python::TargetInfo& target = process.context->target;
        sink_.process({target.pid, target.version.to_string(), target.python_binary});
        return;
    }
    case CaptureKind::process_retired:
        if (process.stacks) add(retired_stats_, process.stacks->stats());
        if (process.native) add(retired_native_, process.native->stats());
        if (process.waits) add(retired_wait_stats_, process.waits->stats());
        processes_.erase(capture.process);
        return;
    case CaptureKind::thread_seen: {
        if (threads_.size() <= capture.thread) threads_.resize(capture.thread + 1);
        ThreadEntry& thread = threads_[capture.thread];
        thread = ThreadEntry{};
        thread.process = capture.process;
        thread.interp = capture.interp;
        const pid_t pid = process.context->target.pid;
        thread.info = {pid, capture.tid, capture.thread_id,
                       process::task_comm(pid, capture.tid).value_or("")};
        // Named with the others at the next naming round (reading the threading module's
        // dict once per round, not once per new thread).
        process.unnamed_threads = true;
        sink_.thread(capture.thread, thread.info);
        return;
    }
    case CaptureKind::sample:
    case CaptureKind::clock:
        return;
    }
}

model::StackStatus Resolver::resolve_stack(const ThreadCapture& capture,
                                           std::span<const python::RawFrame> frames,
                                           std::span<const std::uint8_t> bytes,
                                           ProcessEntry& process) {
    model::StackStatus status = process.stacks->resolve(
        frames, capture.outcome == CaptureOutcome::truncated && !capture.too_deep && !capture.loops,
        ids_);
    if (capture.too_deep) ids_.push_back(deeper_marker_);
    if (capture.loops) ids_.push_back(loops_marker_);
    if (capture.native && process.native && status != model::StackStatus::torn) {
        const NativeResolveStats before = process.native->stats();
        process.native->resolve(capture.tid, bytes, frames, ids_, process.stacks->kept(), merged_);
        ids_.swap(merged_);
        if (native_feedback_ != nullptr)
            native_feedback_->note(
                capture.thread,
                native_feedback(summarize_unwind(*process.native, before, frames, calls_),
                                capture.paused, capture.on_cpu));
    }
    if (capture.loops && status == model::StackStatus::ok) status = model::StackStatus::truncated;
    return status;
}

model::WaitId Resolver::resolve_wait(const ThreadCapture& capture, ProcessEntry& process,
                                     ThreadEntry& thread, model::StackId stack) {
    if (!process.waits) return {};
    model::WaitId wait{};
    if (capture.wait.read == WaitRead::previous) {
        wait = thread.last_wait;
    } else {
        WaitDescription described = process.waits->describe(
            capture.wait, capture.tid, thread.interp, stacks_.get(stack), frames_, capture.time_ns);
        wait = intern_wait(frames_, described, waits_);
    }
    thread.last_wait = wait;
    return wait;
}

void Resolver::reset_tables() {
    // A thread that has not run since its last sample is sent with that stack again: keep the
    // frames (not the ids) and intern them into the emptied tables.
    std::vector<std::vector<model::Frame>> last(threads_.size());
    std::vector<std::string> texts(1); // index 0 stays "no string" for the waits below
    for (std::size_t i = 0; i < threads_.size(); ++i) {
        if (!threads_[i].have_last) continue;
        for (model::FrameId id : stacks_.get(threads_[i].last_stack))
            last[i].push_back(frames_.get(id));
    }
    // Frames refer to strings by id: take the texts along.
    auto text = [&](model::StringId id) {
        texts.emplace_back(frames_.strings().view(id));
        return model::StringId(static_cast<std::uint32_t>(texts.size() - 1));
    };
    for (auto& frames : last)
        for (model::Frame& frame : frames) {
            frame.function = text(frame.function);
            frame.file = text(frame.file);
            frame.module = text(frame.module);
        }
    // So are the waits a thread's next sample may repeat (WaitRead::previous).
    std::vector<model::Wait> last_waits(threads_.size());
    for (std::size_t i = 0; i < threads_.size(); ++i) {
        if (threads_[i].last_wait.value == 0) continue;
        model::Wait wait = frames_.waits().get(threads_[i].last_wait);
        if (wait.syscall.value != 0) wait.syscall = text(wait.syscall);
        if (wait.target.value != 0) wait.target = text(wait.target);
        last_waits[i] = wait;
    }
    frames_.clear();
    stacks_.clear();
    ++table_resets_;
    sink_.tables_reset();
    torn_marker_ = frames_.marker("<unreadable: the stack changed while it was read>");
    deeper_marker_ = frames_.marker("<deeper: more frames than the limit of 4096>");
    loops_marker_ = frames_.marker(kLoopsMarker);
    intern_static_labels();
    for (auto& [slot, entry] : processes_)
        if (entry.stacks) entry.stacks->tables_reset();
    for (auto& [slot, entry] : processes_)
        if (entry.native) entry.native->tables_reset();
    for (std::size_t i = 0; i < threads_.size(); ++i) {
        if (!threads_[i].have_last) continue;
        ids_.clear();
        for (model::Frame frame : last[i]) {
            frame.function = frames_.strings().intern(texts[frame.function.value]);
            frame.file = frames_.strings().intern(texts[frame.file.value]);
            frame.module = frames_.strings().intern(texts[frame.module.value]);
            ids_.push_back(frames_.intern(frame));
        }
        threads_[i].last_stack = stacks_.intern(ids_);
    }
    for (std::size_t i = 0; i < threads_.size(); ++i) {
        if (threads_[i].last_wait.value == 0) continue;
        model::Wait wait = last_waits[i];
        if (wait.syscall.value != 0)
            wait.syscall = frames_.strings().intern(texts[wait.syscall.value]);
        if (wait.target.value != 0)
            wait.target = frames_.strings().intern(texts[wait.target.value]);
        threads_[i].last_wait = frames_.waits().intern(wait);
    }
}

void Resolver::name_threads(ProcessEntry& process, std::uint32_t slot, std::uint64_t now_ns) {
    if (process.last_naming_ns != 0 && now_ns - process.last_naming_ns < kNamingIntervalNs) return;
    process.last_naming_ns = now_ns == 0 ? 1 : now_ns;
    process.unnamed_threads = false;
    std::unordered_map<process::Address, std::unordered_map<std::uint64_t, std::string>> names;
    for (std::uint32_t index = 0; index < threads_.size(); ++index) {
        ThreadEntry& thread = threads_[index];
        if (thread.process != slot || thread.named || thread.info.pid == 0) continue;
        auto known = names.find(thread.interp);
        if (known == names.end())
            known =
                names.emplace(thread.interp, process.objects->thread_names(thread.interp)).first;
        auto name = known->second.find(thread.info.thread_id);
        if (name == known->second.end()) {
            process.unnamed_threads = true;
            continue;
        }
        thread.named = true;
        if (name->second != thread.info.name) {
            thread.info.name = name->second;
            sink_.thread(index, thread.info);
        }
    }
}

} // namespace spyglass::sampling
