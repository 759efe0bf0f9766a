// Reading a thread's stack with the pause policy: without stopping it by default, and when the
// stack stays torn after the retries, stopping that one thread for the length of one read
// (--blocking: every read; --nonblocking: never). Shared by record, top and dump.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "spyglass/capture/stack_capture.hpp"
#include "spyglass/model/recording.hpp"
#include "spyglass/process/procfs.hpp"
#include "spyglass/process/thread_tracer.hpp"
#include "spyglass/python/interpreter.hpp"

namespace spyglass::sampling {

enum class PauseMode : std::uint8_t {
    never,     // --nonblocking: torn stacks are reported as they are
    when_torn, // default: pause a thread only when its stack cannot be read running
    always,    // --blocking: pause every thread whose stack is read
};

// Durations in log-linear buckets (16 per power of two: within 6%), for p50 / p99 / max.
class LatencyHistogram {
  public:
    void record(std::uint64_t ns) noexcept;
    [[nodiscard]] std::uint64_t count() const noexcept { return count_; }
    [[nodiscard]] std::uint64_t max() const noexcept { return max_; }
    // The value below which `fraction` (0..1) of the durations fall (bucket upper bound).
    [[nodiscard]] std::uint64_t quantile(double fraction) const noexcept;
    void merge(const LatencyHistogram& other) noexcept;

  private:
    static constexpr unsigned kSub = 16;
    std::array<std::uint64_t, 64 * kSub> buckets_{};
    std::uint64_t count_ = 0;
    std::uint64_t max_ = 0;
};

struct PauseStats {
    std::uint64_t pauses = 0;    // threads stopped for a read
    std::uint64_t asleep = 0;    // --blocking: asleep in the kernel, read without a stop
    std::uint64_t failed = 0;    // pauses that were needed but could not be made
    std::uint64_t timed_out = 0; // of which: the thread did not stop in time
    std::uint64_t refused = 0;   // of which: ptrace refused (another tracer, no permission)
    LatencyHistogram durations;  // from the interrupt to the thread running again
    std::string refusal;         // why ptrace refused, once it did
    void merge(const PauseStats& other);
    [[nodiscard]] model::PauseSummary summary() const;
};

// A thread that was off-CPU at this pass, and its run time then: under --blocking it is read
// without a stop, and the read stands when its run time has not moved meanwhile (not a single
// instruction ran). Stopping it would wake it from its call, and a thread woken by every pass
// is never idle again: each pass would stop every waiting thread (1,000 waiting threads:
// 0.4 passes a second).
struct AsleepThread {
    process::TaskStatReader* stat = nullptr;
    process::TaskStatReader::RunMark run{};
};

// Where a thread's stack is captured: its process, the capturer and tracer kept for it, the
// pause policy, and where its pauses are counted (a sampler's, dump's).
struct CaptureContext {
    python::PythonProcess& process;
    StackCapturer& capturer;
    process::ThreadTracer& tracer;
    PauseMode mode;
    PauseStats& pauses;
};

// How one capture went: its outcome, and whether the thread was stopped for it.
struct Captured {
    CaptureOutcome outcome = CaptureOutcome::gone;
    bool paused = false;
};

struct CaptureRequest {
    // Overrides the capturer's retry count (a thread whose previous read needed a pause is not
    // retried at length before it is paused again).
    int retries = -1;
    // If given, runs with the outcome of the capture that produced the result, while the
    // thread is still stopped if it was (dump resolves and reads --locals there).
    const std::function<void(CaptureOutcome)>* while_stopped = nullptr;
    const AsleepThread* asleep = nullptr; // see AsleepThread
};

// Captures `record`'s stack under the context's pause mode.
Captured capture_stack(const CaptureContext& where, python::ThreadRecord record,
                       const CaptureRequest& request = {});

// A pause that was needed and could not be made (not for a thread that is gone), counted:
// timed out, or refused (and why, the first time).
void count_failed_pause(PauseStats& stats, process::PauseFailure failure,
                        const process::ThreadTracer& tracer);

} // namespace spyglass::sampling
