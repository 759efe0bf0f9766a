// The hand-over from the sampling thread to the resolver: one ThreadCapture per thread and
// tick (numbers and raw frames only), and the few events around them (a thread seen, a process
// added or retired), in one bounded single-producer single-consumer ring. The sampling thread
// never waits on it: a full ring drops the capture, and the drop is counted.
#pragma once

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <span>
#include <vector>

#include <sys/types.h>

#include "spyglass/handoff/capture_outcome.hpp"
#include "spyglass/process/proc_waits.hpp"
#include "spyglass/python/stack_walker.hpp"

namespace spyglass::sampling {

enum class CaptureKind : std::uint8_t {
    sample,          // a thread at a tick
    thread_seen,     // a thread seen for the first time: `thread`, `tid`, `thread_id`, `interp`
    process_added,   // `process` is sampled from now on
    process_retired, // `process` is not sampled any more (exited, exec'd)
    clock,           // the recording reached `time_ns` (SampleSink::advance)
};

// What an off-CPU thread was blocked in, as the sampling thread read it: numbers only (the
// system call, its first arguments, what the descriptor of an fd-based call is). The resolver
// turns them into a model::Wait (src/resolve/wait_resolve.cpp).
enum class WaitRead : std::uint8_t {
    none,        // not asked (--no-waits, running), or nothing could be read
    previous,    // it has not run since its previous sample: still in the same call
    syscall,     // in system call `nr`, with `args`; `fd` for a call on a descriptor
    user,        // blocked outside a system call: `state` says how (D, T, S)
    cpu_starved, // runnable but not running: waiting for a CPU
};

struct RawWait {
    WaitRead read = WaitRead::none;
    char state = 0; // the /proc state letter it was read with
    std::int64_t nr = -1;
    std::array<std::uint64_t, 4> args{}; // no call it reads looks further
    process::FdIdentity fd{};            // inode 0: not a descriptor call, or closed
};

// How many labels read from the target (record --context) one sample may carry.
inline constexpr std::size_t kMaxSourcedLabels = 4;

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
    bool loops = false;      // truncated where the frame chain points back into itself
    bool native = false;     // --native: registers and a copy of the stack follow (bytes)
    CaptureOutcome outcome = CaptureOutcome::ok;
    RawWait wait;
    // record --context: a word per label source, in the session's order (label_source.hpp).
    std::array<std::uint64_t, kMaxSourcedLabels> label_words{};
};

class CaptureQueue {
  public:
    // `bytes`: room for the native stack copies (--native), 0 when none are captured.
    explicit CaptureQueue(std::size_t slots = 1u << 13, std::size_t frames = 1u << 16,
                          std::size_t bytes = 0);
    // Makes room for native stack copies (before the first capture).
    void reserve_bytes(std::size_t bytes);

    // --- producer (the sampling thread) ---
    // A slot for an event or a capture with room for `frames` frames (written to
    // `frame_space`, all of them), or nullptr when the ring is full (the caller counts a drop).
    // Publish it with push().
    ThreadCapture* reserve(std::uint32_t frames, python::RawFrame*& frame_space);
    // The same with `bytes` bytes of the byte ring (a native capture's registers and stack).
    ThreadCapture* reserve(std::uint32_t frames, python::RawFrame*& frame_space,
                           std::uint32_t bytes, std::uint8_t*& byte_space);
    void push();
    // After a pass: wakes the consumer if the ring is filling up (otherwise it comes by itself
    // every kIdleWakeNs: one wake-up per tick would cost a context switch per tick).
    void notify();
    // Nothing more will come: wakes the consumer.
    void close();

    // --- consumer (the resolver) ---
    // The oldest capture and its frames, or nullptr when the ring is empty. Valid until pop().
    const ThreadCapture* front(std::span<const python::RawFrame>& frames) const;
    const ThreadCapture* front(std::span<const python::RawFrame>& frames,
                               std::span<const std::uint8_t>& bytes) const;
    void pop();
    // Sleeps until the ring fills up, kIdleWakeNs pass or the queue is closed; false once
    // closed and empty.
    bool wait();
    static constexpr std::uint64_t kIdleWakeNs = 100'000'000;

  private:
    std::vector<ThreadCapture> slots_;
    std::vector<python::RawFrame> frames_;
    std::vector<std::uint8_t> bytes_;
    struct Span {
        std::uint64_t at = 0; // first frame (an index that only grows)
        std::uint32_t count = 0;
        std::uint32_t byte_count = 0;
        std::uint64_t bytes_at = 0;
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
    std::atomic<std::uint64_t> bytes_head_{0};  // written by the producer only
    alignas(64) std::atomic<std::uint64_t> bytes_tail_{0};
};

} // namespace spyglass::sampling
