// Attaching to a live process: discovery, then checks that the interpreter can be read.
#include "spyglass/process/exec_watch.hpp"
#include "spyglass/process/live_memory.hpp"
#include "spyglass/process/procfs.hpp"
#include "spyglass/python/debug_offsets.hpp"
#include "spyglass/python/discovery.hpp"
#include "spyglass/python/exec_retry.hpp"
#include "spyglass/python/interpreter.hpp"

namespace spyglass::python {

namespace {

// An address no program maps (below vm.mmap_min_addr): reading it fails while the address space
// is there, and reads nothing once it was released (exec).
constexpr std::uint64_t kNeverMapped = 4096;

// Without glibc's descriptor (musl, stripped libc), find the TID inside the main thread's
// struct pthread: the main thread's TID is the PID (as the target's namespace sees it).
int calibrate_pthread_tid_offset(process::RemoteMemory& memory, pid_t pid,
                                 const std::vector<ThreadRecord>& threads) {
    if (threads.empty()) return -1;
    const ThreadRecord& main = threads.back(); // the list is newest first
    std::int32_t words[1024];
    if (!memory.read(main.thread_id, words, sizeof words)) return -1;
    pid_t ns_pid = process::namespaced_pid(pid);
    for (int i = 0; i < 1024; ++i)
        if (words[i] == ns_pid) return i * 4;
    return -1;
}

} // namespace

Result<std::unique_ptr<PythonProcess>> PythonProcess::attach(pid_t pid) {
    using Attached = Result<std::unique_ptr<PythonProcess>>;
    return attach_across_exec<std::unique_ptr<PythonProcess>>(pid, [pid] {
        // Opened on the address space of this moment: an exec from here on releases it.
        process::ExecWatch exec(pid, kNeverMapped);
        process::LiveMemory memory(pid);
        auto target = discover(pid, memory);
        Attached attached = target ? attach(std::move(*target)) : std::unexpected(target.error());
        return std::pair<Attached, bool>{std::move(attached), exec.replaced()};
    });
}

Result<std::unique_ptr<PythonProcess>> PythonProcess::attach(TargetInfo target) {
    pid_t pid = target.pid;
    if (auto usable = check_reader_bounds(target.layout); !usable)
        return std::unexpected(usable.error());
    target.nested_pid_namespace = process::in_nested_pid_namespace(pid);
    auto memory = std::make_shared<process::LiveMemory>(pid);
    auto python = std::make_unique<PythonProcess>(std::move(memory), std::move(target));
    const TargetInfo& info = python->target();

    auto head = python->memory().read_value<std::uint64_t>(info.interp_head_slot);
    if (!head) {
        if (head.error().code == Errc::process_gone)
            return fail(Errc::process_gone, "process {} exited", pid);
        return std::unexpected(describe(head.error(), "reading the interpreter list head"));
    }
    if (*head == 0)
        return fail(Errc::not_found,
                    "the Python {} interpreter in process {} is not initialized "
                    "yet (or has already shut down)",
                    info.version.to_string(), pid);
    std::vector<ThreadRecord> threads;
    if (auto status = python->read_threads_settled(threads); !status) {
        if (status.error().code == Errc::process_gone)
            return fail(Errc::process_gone, "process {} exited", pid);
        return std::unexpected(describe(
            status.error(), fmt::format("reading the thread states of Python {} in process {}",
                                        info.version.to_string(), pid)));
    }
    if (info.layout.off.tstate_native_thread_id == kAbsent && info.pthread_tid_offset < 0) {
        python->target_.pthread_tid_offset =
            calibrate_pthread_tid_offset(python->memory(), pid, threads);
        if (python->target_.pthread_tid_offset >= 0)
            python->target_.notes.push_back("thread ids calibrated from the main thread");
    }
    return python;
}

} // namespace spyglass::python
