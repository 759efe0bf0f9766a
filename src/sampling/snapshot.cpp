#include "spyglass/sampling/snapshot.hpp"

#include <optional>

#include "spyglass/capture/native_capture.hpp"
#include "spyglass/capture/wait_capture.hpp"
#include "spyglass/process/procfs.hpp"
#include "spyglass/process/task_syscall.hpp"
#include "spyglass/process/thread_tracer.hpp"
#include "spyglass/python/objects.hpp"
#include "spyglass/resolve/native_resolve.hpp"
#include "spyglass/resolve/wait_resolve.hpp"
#include "spyglass/sampling/stack_reader.hpp"

namespace spyglass::sampling {

namespace {

// --locals are per Python frame: give the native frames merged in between them none.
void align_locals(const model::FrameTable& frames, const std::vector<model::FrameId>& merged,
                  model::ThreadSnapshot& thread) {
    if (thread.locals.empty()) return;
    std::vector<std::vector<model::LocalValue>> aligned;
    std::size_t next = 0;
    for (model::FrameId id : merged) {
        if (frames.get(id).kind == model::FrameKind::python && next < thread.locals.size())
            aligned.push_back(std::move(thread.locals[next++]));
        else
            aligned.emplace_back();
    }
    thread.locals = std::move(aligned);
}

// What the thread was blocked in, described (with --waits=kind, its kind alone).
void describe_wait(WaitResolver& waits, const RawWait& raw_wait, const python::ThreadRecord& record,
                   const model::FrameTable& frames, model::WaitDetail detail,
                   model::ThreadSnapshot& thread) {
    WaitDescription wait =
        waits.describe(raw_wait, record.tid, record.interp, thread.frames, frames, 0);
    thread.wait.kind = wait.kind;
    if (detail != model::WaitDetail::full) return;
    thread.wait.syscall = std::move(wait.syscall);
    thread.wait.target = std::move(wait.target);
    thread.wait.detail = std::move(wait.detail);
}

// Reads the threads of one snapshot, one by one: the state each keeps across threads (names per
// interpreter, GIL holders, the stack reader, the pause counts, the native resolver).
class SnapshotReader {
  public:
    SnapshotReader(python::PythonProcess& process, model::FrameTable& frames,
                   process::ThreadTracer& tracer, const SnapshotOptions& options)
        : process_(process), target_(process.target()), frames_(frames), options_(options),
          objects_(process.memory(), target_),
          reader_(process, frames, StackReadOptions{}), where_{process, reader_.capturer(), tracer,
                                                               options.pause, pauses_},
          fds_(target_.pid) {
        if (options.native) native_.emplace(target_, frames, options.native_all);
        if (options.waits != model::WaitDetail::off)
            waits_.emplace(process.shared_memory(), target_);
    }

    // The thread's name, state, GIL, stack (and locals, native frames, wait). Gone: it exited.
    StackOutcome read(const python::ThreadRecord& record, model::ThreadSnapshot& thread) {
        identify(record, thread);
        const RawWait raw_wait = state_and_wait(record, thread);
        // A chain that seems to loop in a thread that may be running is read again (stopped,
        // unless pausing is off) before the loop is believed; in one asleep, it is there.
        reader_.capturer().set_thread_running(thread.os_state == '?' || thread.on_cpu);
        const StackOutcome outcome = read_stack(record, thread);
        thread.status = outcome == StackOutcome::torn        ? model::StackStatus::torn
                        : outcome == StackOutcome::truncated ? model::StackStatus::truncated
                                                             : model::StackStatus::ok;
        if (waits_ && raw_wait.read != WaitRead::none)
            describe_wait(*waits_, raw_wait, record, frames_, options_.waits, thread);
        return outcome;
    }

    [[nodiscard]] const PauseStats& pauses() const noexcept { return pauses_; }

  private:
    void identify(const python::ThreadRecord& record, model::ThreadSnapshot& thread) {
        thread.tid = record.tid;
        thread.thread_id = record.thread_id;
        thread.interp_index = record.interp_index;
        if (!names_.contains(record.interp))
            names_[record.interp] = objects_.thread_names(record.interp);
        const auto& names = names_[record.interp];
        if (auto it = names.find(record.thread_id); it != names.end())
            thread.name = it->second;
        else if (record.tid != 0)
            thread.name = process::task_comm(target_.pid, record.tid).value_or("");
        if (record.holds_gil >= 0) {
            thread.holds_gil = record.holds_gil == 1;
        } else {
            if (!gil_holders_.contains(record.interp))
                gil_holders_[record.interp] = process_.gil_holder(record.interp).value_or(0);
            thread.holds_gil = gil_holders_[record.interp] == record.tstate;
        }
    }

    // Its /proc state, and (read with it, before the stack) the call it was blocked in then.
    RawWait state_and_wait(const python::ThreadRecord& record, model::ThreadSnapshot& thread) {
        RawWait raw_wait;
        if (record.tid == 0) return raw_wait;
        process::TaskStatReader stat(target_.pid, record.tid);
        if (auto reading = stat.read()) {
            thread.os_state = reading->state;
            thread.on_cpu = reading->state == 'R';
            if (waits_ && !thread.on_cpu) raw_wait = read_raw_wait(stat, fds_, reading->state);
        }
        return raw_wait;
    }

    // The stack is resolved (and the locals read) right after the capture, while the thread
    // is still paused if it was paused for the read.
    StackOutcome read_stack(const python::ThreadRecord& record, model::ThreadSnapshot& thread) {
        StackOutcome outcome = StackOutcome::gone;
        const std::function<void(CaptureOutcome)> resolve = [&](CaptureOutcome captured) {
            outcome = reader_.resolve(captured, thread.frames);
            if (options_.locals && outcome != StackOutcome::torn) read_locals(thread);
        };
        Captured captured;
        if (native_ && record.tid != 0) {
            // The native state and the Python frames of one moment; the locals are read just
            // after it (the thread is not kept stopped for them).
            process::TaskStatReader stat(target_.pid, record.tid);
            process::TaskSyscallReader syscall(target_.pid, record.tid);
            auto reading = stat.read();
            NativeThread state{&stat, &syscall, reading ? reading->run_ns : 0,
                               !reading || reading->state == 'R'};
            captured = capture_native(where_, record, state, context_, native_stats_);
            if (captured.outcome != CaptureOutcome::gone) {
                resolve(captured.outcome);
                if (outcome != StackOutcome::torn && outcome != StackOutcome::gone)
                    merge_native(record, thread);
            }
        } else {
            captured = capture_stack(where_, record, {.while_stopped = &resolve});
        }
        thread.paused = captured.paused;
        return captured.outcome == CaptureOutcome::gone ? StackOutcome::gone : outcome;
    }

    void read_locals(model::ThreadSnapshot& thread) {
        const python::RawStack& raw = reader_.last_raw();
        for (std::uint32_t index : reader_.kept_raw_indexes()) {
            const python::RawFrame& frame = raw.frames[index];
            const python::CodeInfo* code = reader_.code(frame.code);
            auto& locals = thread.locals.emplace_back();
            if (code == nullptr) continue;
            for (auto& local : objects_.locals(frame, *code, options_.max_value_chars))
                locals.push_back({std::move(local.name), std::move(local.value), local.argument});
        }
    }

    void merge_native(const python::ThreadRecord& record, model::ThreadSnapshot& thread) {
        const python::RawStack& raw = reader_.last_raw();
        native_->resolve(record.tid, context_, std::span(raw.frames.data(), raw.depth),
                         thread.frames, reader_.kept_raw_indexes(), merged_);
        align_locals(frames_, merged_, thread);
        thread.frames.swap(merged_);
    }

    python::PythonProcess& process_;
    const python::TargetInfo& target_;
    model::FrameTable& frames_;
    const SnapshotOptions& options_;
    python::ObjectReader objects_;
    std::unordered_map<python::Address, std::unordered_map<std::uint64_t, std::string>> names_;
    std::unordered_map<python::Address, python::Address> gil_holders_;
    StackReader reader_;
    PauseStats pauses_;
    const CaptureContext where_;
    std::optional<NativeResolver> native_;
    NativeStats native_stats_;
    std::vector<std::uint8_t> context_;
    std::vector<model::FrameId> merged_;
    process::FdDirectory fds_;
    std::optional<WaitResolver> waits_;
};

} // namespace

Result<model::ProcessSnapshot> take_snapshot(python::PythonProcess& process,
                                             model::FrameTable& frames,
                                             const SnapshotOptions& options) {
    const python::TargetInfo& target = process.target();
    model::ProcessSnapshot snapshot;
    snapshot.pid = target.pid;
    snapshot.command = process::cmdline(target.pid);
    snapshot.python_version = target.version.to_string();
    snapshot.executable = target.executable;
    snapshot.python_binary = target.python_binary;
    snapshot.notes = target.notes;

    process::ThreadTracer tracer(target.pid);
    if (options.pause == PauseMode::always) {
        if (auto probed = tracer.probe(target.pid);
            !probed && probed.error() == process::PauseFailure::refused)
            return fail(Errc::permission_denied, "--blocking cannot pause the threads: {}",
                        tracer.refusal());
    }

    std::vector<python::ThreadRecord> records;
    if (auto status = process.read_threads_settled(records); !status) {
        if (status.error().code == Errc::process_gone || !process::process_exists(target.pid))
            return fail(Errc::process_gone, "process {} exited while it was being read",
                        target.pid);
        return std::unexpected(describe(status.error(), "reading the thread states"));
    }
    if (process.thread_list_fault() != python::ThreadListFault::none)
        snapshot.notes.push_back(
            python::thread_list_fault_text(process.thread_list_fault(), records.size()));

    SnapshotReader reader(process, frames, tracer, options);
    for (const python::ThreadRecord& record : records) {
        model::ThreadSnapshot& thread = snapshot.threads.emplace_back();
        if (reader.read(record, thread) != StackOutcome::gone) continue;
        if (!process::process_exists(target.pid))
            return fail(Errc::process_gone, "process {} exited while it was being read",
                        target.pid);
        snapshot.threads.pop_back(); // that thread exited meanwhile
    }
    snapshot.pauses = reader.pauses().summary();
    return snapshot;
}

} // namespace spyglass::sampling
