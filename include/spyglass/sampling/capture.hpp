// The hand-over from the sampling thread to the resolver: one ThreadCapture per thread and
// tick (numbers and raw frames only), and the few events around them (a thread seen, a process
// added or retired), in one bounded single-producer single-consumer ring. The sampling thread
// never waits on it: a full ring drops the capture, and the drop is counted.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <span>
#include <vector>

#include <sys/types.h>

#include "spyglass/python/stack_walker.hpp"
#include "spyglass/sampling/stack_capture.hpp"

namespace spyglass::sampling {

enum class CaptureKind : std::uint8_t {
    sample,          // a thread at a tick
    thread_seen,     // a thread seen for the first time: `thread`, `tid`, `thread_id`, `interp`
    process_added,   // `process` is sampled from now on
    process_retired, // `process` is not sampled any more (exited, exec'd)
    clock,           // the recording reached `time_ns` (SampleSink::advance)
};

struct ThreadCapture {
    CaptureKind kind = CaptureKind::sample;
    std::uint32_t process = 0; // the session's number for the process
    std::uint32_t thread = 0;  // the session's number for the thread (ThreadRegistry)
    pid_t tid = 0;
    std::uint64_t thread_id = 0;
    process::Address interp = 0;
    std::uint64_t time_ns = 0;   // since the recording started
    std::uint64_t weight_ns = 0; // the time the sample stands for
    std::uint64_t cpu_ns = 0;    // CPU time since the thread's previous sample
    bool on_cpu = false;
    bool gil = false;
    bool paused = false;     // read with the thread stopped
    bool same_stack = false; // the thread has not run since its previous sample: no frames
    bool too_deep = false;   // truncated at the frame limit (not an error)
    CaptureOutcome outcome = CaptureOutcome::ok;
};

class CaptureQueue {
  public:
    explicit CaptureQueue(std::size_t slots = 1u << 13, std::size_t frames = 1u << 16);

    // --- producer (the sampling thread) ---
    // A slot for an event or a capture with room for `frames` frames (written to
    // `frame_space`, all of them), or nullptr when the ring is full (the caller counts a drop).
    // Publish it with push().
    ThreadCapture* reserve(std::uint32_t frames, python::RawFrame*& frame_space);
    void push();
    // After a pass: wakes the consumer if the ring is filling up (otherwise it comes by itself
    // every kIdleWakeNs: one wake-up per tick would cost a context switch per tick).
    void notify();
    // Nothing more will come: wakes the consumer.
    void close();

    // --- consumer (the resolver) ---
    // The oldest capture and its frames, or nullptr when the ring is empty. Valid until pop().
    const ThreadCapture* front(std::span<const python::RawFrame>& frames) const;
    void pop();
    // Sleeps until the ring fills up, kIdleWakeNs pass or the queue is closed; false once
    // closed and empty.
    bool wait();
    static constexpr std::uint64_t kIdleWakeNs = 20'000'000;

  private:
    std::vector<ThreadCapture> slots_;
    std::vector<python::RawFrame> frames_;
    struct Span {
        std::uint64_t at = 0; // first frame (an index that only grows)
        std::uint32_t count = 0;
    };
    std::vector<Span> spans_; // per slot: its frames
    std::size_t slot_mask_, frame_size_;
    // Indexes only grow; the ring positions are them modulo the sizes.
    alignas(64) std::atomic<std::uint64_t> head_{0}; // next slot to fill
    alignas(64) std::atomic<std::uint64_t> tail_{0}; // next slot to read
    alignas(64) std::atomic<std::uint64_t> frames_tail_{0};
    std::atomic<bool> closed_{false};
    std::mutex wake_mutex_;
    std::condition_variable wake_;
    [[nodiscard]] bool filling() const noexcept;
    std::atomic<std::uint64_t> frames_head_{0}; // written by the producer only
};

} // namespace spyglass::sampling
