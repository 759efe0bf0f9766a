// A recording session: the sampling clock, the set of processes being captured (an attached
// PID, a launched command once its interpreter is up, with --subprocesses their Python
// descendants as they appear), and the resolver that turns captures into samples for the sink.
// The clock and the captures run on the thread that calls run(); the resolver on its own.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <sys/types.h>

#include "spyglass/capture/process_sampler.hpp"
#include "spyglass/error.hpp"
#include "spyglass/handoff/capture_queue.hpp"
#include "spyglass/model/frame_table.hpp"
#include "spyglass/model/recording.hpp"
#include "spyglass/model/sample.hpp"
#include "spyglass/resolve/resolver.hpp"
#include "spyglass/sampling/target_set.hpp"
#include "spyglass/sampling/tick_clock.hpp"

namespace spyglass::sampling {

struct SessionOptions {
    double rate_hz = 100;
    double duration_s = 0; // 0: until stopped or every target exited
    bool jitter = false;   // spread ticks randomly within +-25% of the period (against aliasing)
    bool subprocesses = false;
    bool resolve_inline = false;      // resolve between passes instead of on a thread of its own
    bool sched_events = true;         // learn which threads ran from perf scheduler events
    std::size_t table_limit = 0;      // Resolver::bound_tables (0: tables grow as they need)
    std::vector<std::string> command; // what is profiled, for the sinks' start event
    std::vector<model::LabelText> labels; // --label: on every sample
    SamplerOptions sampler;
    StackReadOptions stacks;
};

using Progress = model::RecordingTotals;

struct SessionResult {
    model::RecordingTotals totals; // also what the sink's finish event got
    PassStats stats;
    ResolveStats resolve;
    WaitResolveStats waits;
    std::uint64_t sampling_cpu_ns = 0; // CPU time of the thread that ran the clock and captures
    std::uint64_t resolver_cpu_ns = 0; // and of the resolver's thread
};

class Session {
  public:
    Session(model::FrameTable& frames, model::StackTable& stacks, const SessionOptions& options);
    ~Session();

    // Attaches to a running Python process now; its errors end the session before it starts.
    Result<void> attach(pid_t pid);
    // Samples `pid` as soon as it runs a Python interpreter (a just-launched command), and
    // stops when it has exited. `alive` tells whether it still runs (the launcher knows).
    void watch(pid_t pid, std::function<bool()> alive);
    // --subprocesses with a root that is not Python (a shell, a launcher): sample its Python
    // descendants as they appear.
    void follow(pid_t pid);

    // Records until the duration, a stop request or every target's exit. `progress` is called
    // on this thread a few times a second; the sink's calls come from the resolver.
    SessionResult run(model::SampleSink& sink, const std::atomic<int>& stop_requests,
                      const std::function<void(const Progress&)>& progress);

  private:
    // The recording begins: the sink hears of it, the resolver and the scheduler's events are
    // set up, the processes attached before are registered.
    void begin(model::SampleSink& sink);
    // The resolver's own thread (none with resolve_inline: then nothing is joinable).
    std::thread start_resolver();
    // Ticks until the duration, a stop request or every target's exit; returns the time it
    // ended at.
    std::uint64_t tick_until_done(TickClock& clock, const std::atomic<int>& stop,
                                  const std::function<void(const Progress&)>& progress,
                                  PassStats& stats);
    // Updates the totals after a pass.
    void count_pass(std::uint64_t elapsed_ns, const PassStats& stats);
    // Retires everything, lets the resolver finish and fills the totals.
    void finish(std::thread& resolving, SessionResult& result);
    void say_stats(const SessionResult& result) const;
    // Sleeps until the absolute monotonic time, answering traced threads' stops meanwhile;
    // false when a stop was requested.
    bool sleep_until(std::uint64_t deadline_ns, const std::atomic<int>& stop);
    // Pushes an event (not a sample) for the resolver; events are never dropped: the queue
    // is drained inline when it is full.
    void push_event(CaptureKind kind, std::uint32_t slot);
    // A process is sampled from now on: the resolver is told (or told at begin()).
    void process_added(std::uint32_t slot, const python::TargetInfo& target, pid_t pid);

    model::FrameTable& frames_;
    model::StackTable& stacks_;
    SessionOptions options_;
    ThreadRegistry registry_;
    LabelValues label_values_; // record --context: the values' texts (samplers, resolver)
    CaptureQueue queue_;
    // --native: the resolver's word to the samplers on each thread's captures (outlives both).
    std::unique_ptr<NativeFeedback> native_feedback_;
    std::unique_ptr<Resolver> resolver_;
    std::unique_ptr<process::SchedWatch> sched_; // which threads ran; null: /proc tells
    // Attached before run(): the resolver is made by run(), so they are registered then.
    std::vector<std::pair<std::uint32_t, std::shared_ptr<const ProcessContext>>> early_;
    model::RecordingTotals totals_;
    std::uint64_t pass_elapsed_ns_ = 0; // the current pass's time since the recording started
    TargetSet targets_;
};

} // namespace spyglass::sampling
