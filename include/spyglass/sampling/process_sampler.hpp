// One sampling pass over one Python process: every thread's scheduler state, GIL state and
// stack, as samples. Keeps per-thread state between passes: open /proc files, the previous
// on-CPU time and stack (a thread that has not run since cannot have a different stack).
#pragma once

#include <memory>
#include <unordered_map>
#include <vector>

#include <sys/types.h>

#include "spyglass/process/exec_watch.hpp"
#include "spyglass/process/procfs.hpp"
#include "spyglass/process/thread_tracer.hpp"
#include "spyglass/python/interpreter.hpp"
#include "spyglass/python/objects.hpp"
#include "spyglass/sampling/paused_read.hpp"
#include "spyglass/sampling/sample.hpp"
#include "spyglass/sampling/stack_reader.hpp"

namespace spyglass::sampling {

struct SamplerOptions {
    SampleMode mode = SampleMode::wall;
    bool gil_only = false;
    PauseMode pause = PauseMode::when_torn;
    bool reuse_idle = true; // reuse the stack of a thread that has not run since its last sample
    StackReadOptions stack;
};

struct PassStats {
    std::uint64_t samples = 0;       // thread samples emitted
    std::uint64_t errors = 0;        // of which torn or truncated
    std::uint64_t reused = 0;        // stacks reused from an idle thread's previous sample
    std::uint64_t skipped = 0;       // threads not sampled (--mode cpu off-CPU, --gil)
    std::uint64_t failed_passes = 0; // passes whose thread list could not be read
};

// Numbers threads across all processes of a session, for the sinks.
class ThreadRegistry {
  public:
    struct Entry {
        std::uint32_t index;
        bool is_new;
    };
    Entry find_or_add(pid_t pid, pid_t tid, std::uint64_t thread_id);
    [[nodiscard]] std::size_t size() const noexcept { return next_; }

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
    ProcessSampler(std::unique_ptr<python::PythonProcess> process, FrameTable& frames,
                   StackTable& stacks, ThreadRegistry& registry, const SamplerOptions& options);
    ~ProcessSampler();

    // One pass at `now_ns` (since the recording started).
    ProcessState sample(std::uint64_t now_ns, SampleSink& sink, PassStats& stats);

    // --blocking: whether threads can be paused at all (another tracer, no permission).
    Result<void> check_pausing();
    // Answers stops of paused threads that nobody asked for (signals, group stops, exits).
    void service_tracer() noexcept { tracer_.service(); }
    [[nodiscard]] const PauseStats& pause_stats() const noexcept { return pause_stats_; }

    [[nodiscard]] pid_t pid() const noexcept { return process_->pid(); }
    [[nodiscard]] python::PythonProcess& process() noexcept { return *process_; }
    [[nodiscard]] const StackReader& reader() const noexcept { return reader_; }

  private:
    struct ThreadState {
        process::TaskStatReader stat;
        std::uint32_t index = 0;
        std::uint64_t thread_id = 0;
        std::uint64_t run_ns = 0; // schedstat run time at the previous pass
        bool have_run_ns = false;
        bool on_cpu = false;        // at the previous pass
        bool have_previous = false; // previous_stack is the thread's stack as of run_ns
        python::Address previous_frame = 0;
        StackId previous_stack = 0;
        std::uint64_t generation = 0;
        bool needed_pause = false; // its previous read could only be made with a pause
        bool named = false;
    };
    bool gone() const;
    void name_threads(SampleSink& sink, std::uint64_t now_ns);

    std::unique_ptr<python::PythonProcess> process_;
    FrameTable& frames_;
    StackTable& stacks_;
    ThreadRegistry& registry_;
    SamplerOptions options_;
    StackReader reader_;
    python::ObjectReader objects_;
    process::ThreadTracer tracer_;
    process::ExecWatch exec_watch_;
    std::uint64_t next_exec_check_ns_ = 0;
    PauseStats pause_stats_;
    FrameId torn_marker_;
    std::vector<python::ThreadRecord> records_;
    std::vector<FrameId> frame_ids_;
    std::unordered_map<pid_t, ThreadState> threads_;
    std::uint64_t generation_ = 0;
    std::uint64_t last_naming_ns_ = 0;
    bool unnamed_threads_ = false;
};

} // namespace spyglass::sampling
