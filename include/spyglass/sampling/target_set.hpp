// The processes a session samples, and their lives: an attached PID; a launched command once
// its interpreter is up; with --subprocesses every Python descendant as it appears (from the
// scheduler's events, or a scan of /proc); a process that execs (retired, then looked at again:
// is it Python now?); one that exits. Each sampled process has its ProcessSampler; the session
// hears of each one added and retired, to tell the resolver.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include <sys/types.h>

#include "spyglass/capture/process_sampler.hpp"
#include "spyglass/error.hpp"
#include "spyglass/handoff/capture_queue.hpp"
#include "spyglass/model/recording.hpp"
#include "spyglass/python/target.hpp"

namespace spyglass::sampling {

class TargetSet {
  public:
    // What the session is told: a process is sampled from now on (its number and what the
    // resolver needs of it), or not any more.
    struct Listener {
        std::function<void(std::uint32_t slot, const python::TargetInfo& target, pid_t pid)> added;
        std::function<void(std::uint32_t slot)> retired;
    };
    // `pass_elapsed_ns`: the current pass's time since the recording started (the samplers'
    // clock). `totals`: where the interpreter found and the PIDs sampled are kept.
    TargetSet(ThreadRegistry& registry, CaptureQueue& queue, const SamplerOptions& options,
              bool subprocesses, const std::uint64_t& pass_elapsed_ns,
              model::RecordingTotals& totals, Listener listener);

    // Attaches to a running Python process now.
    Result<void> attach(pid_t pid);
    // Samples `pid` as soon as it runs a Python interpreter; `alive` tells whether it still runs.
    void watch(pid_t pid, std::function<bool()> alive);
    // --subprocesses with a root that is not Python: its Python descendants as they appear.
    void follow(pid_t pid);
    // The recording starts: `sched` (null: none) follows the sampled processes from now on,
    // and with --subprocesses tells of new children and execs.
    void begin(std::uint64_t start_ns, process::SchedWatch* sched);

    // One pass: processes not sampled yet are looked at again (as often as each needs); the
    // scheduler's events polled; with --subprocesses, new children and execs taken from them
    // and /proc scanned now and then; then every sampled process is sampled, those that exited
    // or exec'd retired.
    void pass(std::uint64_t now_ns, std::uint64_t elapsed_ns, PassStats& stats);
    // Every sampled process retired (the end of the recording).
    void retire_all();

    [[nodiscard]] bool anything_alive() const;
    [[nodiscard]] std::size_t sampled() const noexcept { return samplers_.size(); }
    // Passes traced threads' stops on (a signal they got while seized).
    void service_tracers() noexcept;
    [[nodiscard]] const PauseStats& pauses() const noexcept { return pauses_; }
    // Said at the end: processes that replaced their program more often than is said one by one.
    void say_exec_counts() const;

  private:
    bool try_attach(pid_t pid, bool report_errors);
    void add_sampler(std::unique_ptr<python::PythonProcess> process);
    void retire(ProcessSampler& sampler);
    void retry_pending(std::uint64_t now_ns, std::uint64_t elapsed_ns);
    void scan_children();
    // A process just seen (a child that forked, a pid found by the scan): try it now.
    void consider(pid_t pid);
    // New children and execs from the scheduler's events (--subprocesses).
    void take_process_events();
    void replaced(pid_t pid);                      // a sampled process exec'd
    [[nodiscard]] bool exec_said(pid_t pid) const; // a warning, not a -v line

    ThreadRegistry& registry_;
    CaptureQueue& queue_;
    const SamplerOptions& options_;
    bool subprocesses_;
    const std::uint64_t& pass_elapsed_ns_;
    model::RecordingTotals& totals_;
    Listener listener_;
    process::SchedWatch* sched_ = nullptr;

    std::vector<std::unique_ptr<ProcessSampler>> samplers_;
    std::uint32_t next_slot_ = 0;
    std::set<pid_t> roots_;      // processes whose descendants are followed
    std::set<pid_t> known_;      // every pid considered (Python or not)
    std::set<pid_t> pending_;    // not (yet) Python: retried
    std::set<pid_t> replaced_;   // exec'd a new program: waiting to see whether it is Python
    std::set<pid_t> not_python_; // pending, and not Python when last looked at
    // Execs of each process: a root's first kExecsSaid are warnings, the others said with -v.
    static constexpr std::uint32_t kExecsSaid = 2;
    std::map<pid_t, std::uint32_t> execs_;
    // Processes just forked or exec'd: the dynamic loader may not have mapped libpython yet,
    // so "not Python" is no verdict until this time (monotonic ns).
    std::map<pid_t, std::uint64_t> young_until_;
    std::map<pid_t, python::TargetInfo> discovered_; // found, not initialized yet
    std::optional<pid_t> watched_;
    std::function<bool()> watched_alive_;
    PauseStats pauses_;
    bool waiting_note_printed_ = false;
    std::uint64_t next_scan_ = 0, next_pending_ = 0, next_not_python_ = 0;
    std::uint64_t fast_pending_until_ = 0; // until then pending pids are polled often
};

} // namespace spyglass::sampling
