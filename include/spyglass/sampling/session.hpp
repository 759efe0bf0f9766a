// A recording session: the sampling clock and the set of processes being sampled (an attached
// PID, a launched command once its interpreter is up, and with --subprocesses their Python
// descendants as they appear).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <sys/types.h>

#include "spyglass/error.hpp"
#include "spyglass/sampling/process_sampler.hpp"

namespace spyglass::sampling {

struct SessionOptions {
    double rate_hz = 100;
    double duration_s = 0; // 0: until stopped or every target exited
    bool jitter = false;   // spread ticks randomly within +-25% of the period (against aliasing)
    bool subprocesses = false;
    SamplerOptions sampler;
};

struct Progress {
    std::uint64_t elapsed_ns = 0;
    std::uint64_t ticks = 0;
    std::uint64_t late_ticks = 0;
    std::uint64_t samples = 0;
    std::uint64_t errors = 0;
    std::size_t processes = 0;
    bool waiting = false;       // no Python process yet (launch mode)
    std::string python_version; // of the first process, once one is sampled
};

enum class SessionEnd : std::uint8_t { duration, stopped, targets_exited };

struct SessionResult {
    SessionEnd end = SessionEnd::duration;
    Progress totals;
    PassStats stats;
    PauseStats pauses;
    std::vector<pid_t> pids;    // every process that was sampled
    std::string python_version; // of the first process
    std::uint64_t start_unix_ns = 0;
    bool found_interpreter = false; // a Python interpreter was seen in some process
};

class Session {
  public:
    Session(FrameTable& frames, StackTable& stacks, const SessionOptions& options);
    ~Session();

    // Attaches to a running Python process now; its errors end the session before it starts.
    Result<void> attach(pid_t pid);
    // Samples `pid` as soon as it runs a Python interpreter (a just-launched command), and
    // stops when it has exited. `alive` tells whether it still runs (the launcher knows).
    void watch(pid_t pid, std::function<bool()> alive);

    SessionResult run(SampleSink& sink, const std::atomic<int>& stop_requests,
                      const std::function<void(const Progress&)>& progress);

  private:
    bool try_attach(pid_t pid, bool report_errors);
    // Sleeps until the absolute monotonic time, answering traced threads' stops meanwhile;
    // false when a stop was requested.
    bool sleep_until(std::uint64_t deadline_ns, const std::atomic<int>& stop);
    void retire(ProcessSampler& sampler, SessionResult& result);
    void add_sampler(std::unique_ptr<python::PythonProcess> process);
    void scan_children();
    bool anything_alive() const;

    FrameTable& frames_;
    StackTable& stacks_;
    SessionOptions options_;
    ThreadRegistry registry_;
    std::vector<std::unique_ptr<ProcessSampler>> samplers_;
    std::set<pid_t> roots_;    // processes whose descendants are followed
    std::set<pid_t> known_;    // every pid considered (Python or not)
    std::set<pid_t> pending_;  // not (yet) Python: retried
    std::set<pid_t> replaced_; // exec'd a new program: waiting to see whether it is Python
    std::map<pid_t, python::TargetInfo> discovered_; // found, not initialized yet
    std::optional<pid_t> watched_;
    std::function<bool()> watched_alive_;
    std::vector<pid_t> pids_;
    std::string python_version_;
    bool waiting_note_printed_ = false;
    bool found_interpreter_ = false;
    std::uint64_t fast_pending_until_ =
        0; // monotonic time until which pending pids are polled often
};

} // namespace spyglass::sampling
