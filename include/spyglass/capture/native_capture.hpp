// --native, on the sampling thread: the thread's native state with its Python stack, taken so
// that the two belong together. A thread blocked in a system call is not stopped: its stack
// pointer and program counter come from /proc/PID/task/TID/syscall, its stack is copied, its
// Python frames read, and then /proc says whether it stayed in that same call without running
// (if not, it is stopped after all). A running thread is stopped for the few microseconds a
// register read and a stack copy take, its Python frames read in the same stop.
//
// What the resolver learns of a capture comes back to the sampling thread through
// NativeFeedback: a stack cut where its copy ended makes that thread's copies larger
// (NativePolicy, from kMinStackCopy up to kMaxStackCopy), and an unwind without a stop that
// ended early makes that thread be stopped while it is blocked too.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <span>
#include <vector>

#include "spyglass/capture/paused_read.hpp"
#include "spyglass/capture/stack_capture.hpp"
#include "spyglass/handoff/native_feedback.hpp"
#include "spyglass/native/context.hpp"
#include "spyglass/process/procfs.hpp"
#include "spyglass/process/task_syscall.hpp"
#include "spyglass/process/thread_tracer.hpp"
#include "spyglass/python/interpreter.hpp"

namespace spyglass::sampling {

struct NativeStats {
    std::uint64_t unstopped = 0;        // blocked threads read without a stop
    std::uint64_t stopped = 0;          // running threads (or blocked ones that moved) stopped
    std::uint64_t moved = 0;            // of the blocked ones: left their call while read
    std::uint64_t failed = 0;           // no native context could be taken (pause refused...)
    std::uint64_t skipped = 0;          // running threads not stopped (--nonblocking)
    std::uint64_t fallback = 0;         // of the stopped: blocked threads stopped (NativePolicy)
    std::uint64_t fallback_threads = 0; // threads whose unwind without a stop ended early
    std::uint64_t fallback_dropped = 0; // of them: the stop did not unwind further either
    std::uint64_t grown = 0;            // threads whose stack copies were made larger
    void merge(const NativeStats& other) noexcept {
        unstopped += other.unstopped;
        stopped += other.stopped;
        moved += other.moved;
        failed += other.failed;
        skipped += other.skipped;
        fallback += other.fallback;
        fallback_threads += other.fallback_threads;
        fallback_dropped += other.fallback_dropped;
        grown += other.grown;
    }
};

struct NativeThread {
    process::TaskStatReader* stat = nullptr;
    process::TaskSyscallReader* syscall = nullptr;
    process::TaskStatReader::RunMark run{}; // schedstat read at the start of this pass
    bool on_cpu = false;
    int cpu = -1;                                     // the CPU it last ran on (-1: unknown)
    std::uint32_t stack_copy = native::kMaxStackCopy; // bytes of stack to copy
    bool stop_when_blocked = false; // stop it even when blocked (unless PauseMode::never)
};

// A thread's native capture settings, kept by the sampler across samples.
struct NativePolicy {
    std::uint32_t stack_copy = native::kMinStackCopy;
    bool stop_when_blocked = false; // its unwinds without a stop end early: stop it
    bool stop_useless = false;      // stopping it did not help: never again

    struct Change {
        bool grown = false;     // stack_copy was made larger
        bool fell_back = false; // stop_when_blocked was set
        bool gave_up = false;   // stop_when_blocked was cleared
        bool retake = false;    // the thread's last capture should not be reused
    };
    // Applies the flags of NativeFeedback. A stack cut where its copy ended doubles the copy
    // (up to kMaxStackCopy); an unwind without a stop that ended early makes the thread be
    // stopped while blocked, until a stop does not unwind it further either.
    Change learn(std::uint32_t flags) noexcept;
};

// Fills `context` (header + stack; empty when no native state could be taken) and captures
// the Python stack into the capturer's raw(). Captured::paused tells whether the thread was
// stopped for it; its stops are counted with the context's others. PauseMode::never stops
// nothing: a running thread then has its Python stack alone.
Captured capture_native(const CaptureContext& where, python::ThreadRecord record,
                        NativeThread& thread, std::vector<std::uint8_t>& context,
                        NativeStats& stats);

} // namespace spyglass::sampling
