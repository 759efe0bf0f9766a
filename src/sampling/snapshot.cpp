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

    python::ObjectReader objects(process.memory(), target);
    std::unordered_map<python::Address, std::unordered_map<std::uint64_t, std::string>> names;
    std::unordered_map<python::Address, python::Address> gil_holders;
    StackReader reader(process, frames, StackReadOptions{});
    PauseStats pauses;
    const CaptureContext where{process, reader.capturer(), tracer, options.pause, pauses};
    std::optional<NativeResolver> native;
    if (options.native) native.emplace(target, frames, options.native_all);
    NativeStats native_stats;
    std::vector<std::uint8_t> context;
    std::vector<model::FrameId> merged;
    process::FdDirectory fds(target.pid);
    std::optional<WaitResolver> waits;
    if (options.waits != model::WaitDetail::off) waits.emplace(process.shared_memory(), target);

    for (const python::ThreadRecord& record : records) {
        model::ThreadSnapshot& thread = snapshot.threads.emplace_back();
        thread.tid = record.tid;
        thread.thread_id = record.thread_id;
        thread.interp_index = record.interp_index;
        if (!names.contains(record.interp))
            names[record.interp] = objects.thread_names(record.interp);
        if (auto it = names[record.interp].find(record.thread_id); it != names[record.interp].end())
            thread.name = it->second;
        else if (record.tid != 0)
            thread.name = process::task_comm(target.pid, record.tid).value_or("");
        RawWait raw_wait;
        if (record.tid != 0) {
            process::TaskStatReader stat(target.pid, record.tid);
            if (auto reading = stat.read()) {
                thread.os_state = reading->state;
                thread.on_cpu = reading->state == 'R';
                // Read with the state, before the stack: the call it was blocked in then.
                if (waits && !thread.on_cpu) raw_wait = read_raw_wait(stat, fds, reading->state);
            }
        }
        if (record.holds_gil >= 0) {
            thread.holds_gil = record.holds_gil == 1;
        } else {
            if (!gil_holders.contains(record.interp))
                gil_holders[record.interp] = process.gil_holder(record.interp).value_or(0);
            thread.holds_gil = gil_holders[record.interp] == record.tstate;
        }
        // The stack is resolved (and the locals read) right after the capture, while the
        // thread is still paused if it was paused for the read.
        StackOutcome outcome = StackOutcome::gone;
        const std::function<void(CaptureOutcome)> resolve = [&](CaptureOutcome captured) {
            outcome = reader.resolve(captured, thread.frames);
            if (!options.locals || outcome == StackOutcome::torn) return;
            const python::RawStack& raw = reader.last_raw();
            for (std::uint32_t index : reader.kept_raw_indexes()) {
                const python::RawFrame& frame = raw.frames[index];
                const python::CodeInfo* code = reader.code(frame.code);
                auto& locals = thread.locals.emplace_back();
                if (code == nullptr) continue;
                for (auto& local : objects.locals(frame, *code, options.max_value_chars))
                    locals.push_back(
                        {std::move(local.name), std::move(local.value), local.argument});
            }
        };
        Captured captured;
        if (native && record.tid != 0) {
            // The native state and the Python frames of one moment; the locals are read just
            // after it (the thread is not kept stopped for them).
            process::TaskStatReader stat(target.pid, record.tid);
            process::TaskSyscallReader syscall(target.pid, record.tid);
            auto reading = stat.read();
            NativeThread state{&stat, &syscall, reading ? reading->run_ns : 0,
                               !reading || reading->state == 'R'};
            captured = capture_native(where, record, state, context, native_stats);
            if (captured.outcome != CaptureOutcome::gone) {
                resolve(captured.outcome);
                if (outcome != StackOutcome::torn && outcome != StackOutcome::gone) {
                    const python::RawStack& raw = reader.last_raw();
                    native->resolve(record.tid, context, std::span(raw.frames.data(), raw.depth),
                                    thread.frames, reader.kept_raw_indexes(), merged);
                    align_locals(frames, merged, thread);
                    thread.frames.swap(merged);
                }
            }
        } else {
            captured = capture_stack(where, record, {.while_stopped = &resolve});
        }
        thread.paused = captured.paused;
        if (captured.outcome == CaptureOutcome::gone) outcome = StackOutcome::gone;
        thread.status = outcome == StackOutcome::torn        ? model::StackStatus::torn
                        : outcome == StackOutcome::truncated ? model::StackStatus::truncated
                                                             : model::StackStatus::ok;
        if (waits && raw_wait.read != WaitRead::none)
            describe_wait(*waits, raw_wait, record, frames, options.waits, thread);
        if (outcome == StackOutcome::gone) {
            if (!process::process_exists(target.pid))
                return fail(Errc::process_gone, "process {} exited while it was being read",
                            target.pid);
            snapshot.threads.pop_back(); // that thread exited meanwhile
        }
    }
    snapshot.pauses = pauses.summary();
    return snapshot;
}

} // namespace spyglass::sampling
