// The capture of one Python process, on the sampling thread: once per tick, every thread's
// scheduler state, GIL state, the time the sample stands for, and its raw stack, handed to the
// capture queue. Keeps per-thread state between passes: open /proc files, the previous on-CPU
// time and whether the stack can have changed (a thread that has not run since cannot have a
// different stack: it is sent as "same stack", with no frames).
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include <sys/types.h>

#include "spyglass/capture/native_capture.hpp"
#include "spyglass/capture/paused_read.hpp"
#include "spyglass/capture/stack_capture.hpp"
#include "spyglass/capture/thread_schedule.hpp"
#include "spyglass/handoff/capture_queue.hpp"
#include "spyglass/handoff/label_source.hpp"
#include "spyglass/model/recording.hpp"
#include "spyglass/process/exec_watch.hpp"
#include "spyglass/process/procfs.hpp"
#include "spyglass/process/sched_watch.hpp"
#include "spyglass/process/thread_tracer.hpp"
#include "spyglass/python/interpreter.hpp"

namespace spyglass::sampling {

// Which samples are taken at all: the one place --mode and --gil apply.
struct SampleFilter {
    model::SampleMode mode = model::SampleMode::wall;
    bool gil_only = false;
};

struct SamplerOptions {
    SampleFilter filter;
    PauseMode pause = PauseMode::when_torn;
    bool reuse_idle = true; // a thread that has not run since its last sample keeps its stack
    int retries = 3;        // extra attempts for a stack that changed while it was read
    std::uint64_t period_ns = 10'000'000;
    bool native = false; // --native: registers and a copy of the stack with every capture
    // --native: what the resolver learned of each thread's captures (the session's; may be
    // null: no copy grows, no blocked thread is stopped for its unwind).
    NativeFeedback* native_feedback = nullptr;
    model::WaitDetail waits = model::WaitDetail::full; // off: no wait reason is read
    std::vector<LabelSourceSpec> label_sources;        // record --context: read per sample
    LabelValues* label_values = nullptr;               // their texts (the session's)
};

struct PassStats {
    std::uint64_t samples = 0;           // thread samples captured
    std::uint64_t errors = 0;            // of which torn, or cut by a read that failed
    std::uint64_t reused = 0;            // of which the same stack as the thread's previous sample
    std::uint64_t skipped = 0;           // threads not sampled (--mode cpu off-CPU, --gil)
    std::uint64_t unread = 0;            // threads known idle from scheduler events: no /proc read
    std::uint64_t state_from_events = 0; // runnable by those events: schedstat, not stat, read
    std::uint64_t running_by_events = 0; // on one CPU since the previous pass: nothing read
    std::uint64_t dropped = 0;           // captures the queue had no room for
    std::uint64_t wait_reads = 0;        // off-CPU threads whose syscall file was read
    std::uint64_t wait_reused = 0; // off-CPU threads still in the call of their previous sample
    // Threads whose /proc files could not be opened for lack of descriptors: not sampled
    // (each counted once), and the passes that left one out.
    std::uint64_t threads_without_descriptors = 0;
    std::uint64_t missed_without_descriptors = 0;
    std::uint64_t looping_stacks = 0;    // stacks whose frame chain points back into itself
    std::uint64_t unreadable_labels = 0; // record --context values that could not be read
};

// Numbers threads across all processes of a session, for the sinks.
class ThreadRegistry {
  public:
    // The number of the thread, given it when first seen.
    std::uint32_t find_or_add(pid_t pid, pid_t tid, std::uint64_t thread_id);

  private:
    struct Key {
        pid_t pid, tid;
        std::uint64_t thread_id;
        friend bool operator==(const Key&, const Key&) = default;
    };
    struct KeyHash {
        std::size_t operator()(const Key& k) const noexcept {
            return std::hash<std::uint64_t>{}((std::uint64_t(k.pid) << 32 | std::uint32_t(k.tid)) ^
                                              k.thread_id * 31);
        }
    };
    std::unordered_map<Key, std::uint32_t, KeyHash> index_;
    std::uint32_t next_ = 0;
};

enum class ProcessState : std::uint8_t {
    sampling,
    exited,
    replaced, // it exec'd: nothing learned at attach holds any more
};

class ProcessSampler {
  public:
    // `slot` is the session's number for the process in the captures; `attached_ns` when it
    // was attached, since the recording started.
    ProcessSampler(std::unique_ptr<python::PythonProcess> process, std::uint32_t slot,
                   ThreadRegistry& registry, CaptureQueue& queue, const SamplerOptions& options,
                   std::uint64_t attached_ns = 0);
    ~ProcessSampler();

    // One pass at `now_ns` (since the recording started). `sched`, when given, tells which
    // threads ran since the previous pass: the others cost no system call.
    ProcessState sample(std::uint64_t now_ns, PassStats& stats,
                        process::SchedWatch* sched = nullptr);

    // --blocking: whether threads can be paused at all (another tracer, no permission).
    Result<void> check_pausing();
    // Answers stops of paused threads that nobody asked for (signals, group stops, exits).
    void service_tracer() noexcept { tracer_.service(); }
    [[nodiscard]] const PauseStats& pause_stats() const noexcept { return pause_stats_; }
    [[nodiscard]] const NativeStats& native_stats() const noexcept { return native_stats_; }
    [[nodiscard]] pid_t pid() const noexcept { return process_->pid(); }
    [[nodiscard]] std::uint32_t slot() const noexcept { return slot_; }
    [[nodiscard]] python::PythonProcess& process() noexcept { return *process_; }

  private:
    struct ThreadState {
        process::TaskStatReader stat;
        std::optional<process::TaskSyscallReader> syscall{}; // --native, opened on first use
        std::uint32_t index = 0;
        std::uint64_t thread_id = 0;
        ThreadSchedule schedule{};
        bool wait_known = false;    // the resolver has its wait reason as of its run time
        bool have_previous = false; // the resolver has the thread's stack as of its run time
        python::Address previous_frame = 0;
        std::uint64_t last_seen_ns = 0; // the previous pass that looked at the thread
        std::uint64_t generation = 0;
        bool needed_pause = false;        // its previous read could only be made with a pause
        bool without_descriptors = false; // counted in threads_without_descriptors
        NativePolicy native{};            // --native: its stack copy's size, whether to stop it
        std::uint32_t native_unstopped = 0, native_stopped = 0; // its captures, for -vv
        // record --context: the words of its latest capture (kept while it does not run).
        std::array<std::uint64_t, kMaxSourcedLabels> label_words{};
        bool have_label_words = false;
    };
    // The thread's state, kept across passes (a new one for a thread not seen before).
    ThreadState& tracked(const python::ThreadRecord& record);
    void sample_thread(const python::ThreadRecord& record, ThreadState& thread,
                       std::uint64_t now_ns, PassStats& stats, process::SchedWatch* sched);
    // The time the sample stands for (since the thread was last looked at).
    std::uint64_t weight(ThreadState& thread, std::uint64_t now_ns) const;
    // What the thread waits in, as of this pass (read, kept from before, or none).
    RawWait wait_of(ThreadState& thread, const ThreadSchedule::Pass& pass, PassStats& stats);
    // A thread that has not run since its previous sample: a sample with no frames.
    bool push_same_stack(const ThreadCapture& base, PassStats& stats);
    bool gone() const;
    // Says once per kind of fault what the walk of the thread lists found wrong with them.
    void say_thread_list_fault(std::size_t threads);
    // Pushes the capture of `record`; false when the queue had no room.
    bool push_sample(const python::ThreadRecord& record, ThreadState& thread, ThreadCapture base,
                     PassStats& stats);
    // --native: applies what the resolver learned of the thread's captures; true when its
    // previous capture must not be reused (a larger copy, a stop to take).
    bool learn_native(ThreadState& thread);
    // What an off-CPU thread is blocked in: its syscall file, and for a call on a descriptor
    // that descriptor's inode. `state` is the /proc state letter.
    RawWait read_wait(ThreadState& thread, char state, PassStats& stats);
    // record --context: each source's word, read again only when the thread ran.
    void capture_labels(const python::ThreadRecord& record, ThreadState& thread, bool ran,
                        ThreadCapture& base, PassStats& stats);
    // Its /proc files could not be opened: not sampled this pass, and counted.
    void short_of_descriptors(ThreadState& thread, PassStats& stats);

    std::unique_ptr<python::PythonProcess> process_;
    std::uint32_t slot_;
    ThreadRegistry& registry_;
    CaptureQueue& queue_;
    SamplerOptions options_;
    StackCapturer capturer_;
    process::ThreadTracer tracer_;
    process::ExecWatch exec_watch_;
    process::FdDirectory fds_; // /proc/PID/fd, for the inode of a descriptor a thread waits on
    std::uint64_t next_exec_check_ns_ = 0;
    std::uint64_t next_full_read_ns_ = 0; // of every thread state, whatever the scheduler says
    PauseStats pause_stats_;
    NativeStats native_stats_;
    std::vector<std::uint8_t> native_context_; // --native: the capture's registers and stack
    std::vector<python::ThreadRecord> records_;
    // record --context: each source kind's capture, and where its keys' words go.
    struct LabelGroup {
        std::unique_ptr<LabelCapture> capture;
        std::vector<std::size_t> slots; // in ThreadCapture::label_words, in the keys' order
    };
    std::vector<LabelGroup> label_groups_;
    std::unordered_map<pid_t, ThreadState> threads_;
    std::uint64_t generation_ = 0;
    std::uint64_t attached_ns_ = 0;
    python::ThreadListFault list_fault_said_ = python::ThreadListFault::none;
    bool tracer_serviced_ = false; // this pass passed a seized thread's signal on
};

} // namespace spyglass::sampling
