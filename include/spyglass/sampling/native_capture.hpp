// --native, on the sampling thread: the thread's native state with its Python stack, taken so
// that the two belong together. A thread blocked in a system call is not stopped: its stack
// pointer and program counter come from /proc/PID/task/TID/syscall, its stack is copied, its
// Python frames read, and then /proc says whether it stayed in that same call without running
// (if not, it is stopped after all). A running thread is stopped for the few microseconds a
// register read and a stack copy take, its Python frames read in the same stop.
#pragma once

#include <cstdint>
#include <vector>

#include "spyglass/native/context.hpp"
#include "spyglass/process/procfs.hpp"
#include "spyglass/process/task_syscall.hpp"
#include "spyglass/process/thread_tracer.hpp"
#include "spyglass/python/interpreter.hpp"
#include "spyglass/sampling/paused_read.hpp"
#include "spyglass/sampling/stack_capture.hpp"

namespace spyglass::sampling {

struct NativeStats {
    std::uint64_t unstopped = 0; // blocked threads read without a stop
    std::uint64_t stopped = 0;   // running threads (or blocked ones that moved) stopped
    std::uint64_t moved = 0;     // of the blocked ones: left their call while read
    std::uint64_t failed = 0;    // no native context could be taken (pause refused...)
    std::uint64_t skipped = 0;   // running threads not stopped (--nonblocking)
    void merge(const NativeStats& other) noexcept {
        unstopped += other.unstopped;
        stopped += other.stopped;
        moved += other.moved;
        failed += other.failed;
        skipped += other.skipped;
    }
};

struct NativeThread {
    process::TaskStatReader* stat = nullptr;
    process::TaskSyscallReader* syscall = nullptr;
    std::uint64_t run_ns = 0; // schedstat run time read at the start of this pass
    bool on_cpu = false;
    std::uint32_t stack_copy = native::kMaxStackCopy;
};

// Fills `context` (header + stack; empty when no native state could be taken) and captures
// the Python stack into `capturer.raw()`. `stopped` tells whether the thread was stopped for
// it; its stops are counted in `pauses` with the others. PauseMode::never stops nothing: a
// running thread then has its Python stack alone.
CaptureOutcome capture_native(python::PythonProcess& process, StackCapturer& capturer,
                              process::ThreadTracer& tracer, PauseMode mode,
                              python::ThreadRecord record, NativeThread& thread,
                              std::vector<std::uint8_t>& context, NativeStats& stats,
                              PauseStats& pauses, bool& stopped);

} // namespace spyglass::sampling
