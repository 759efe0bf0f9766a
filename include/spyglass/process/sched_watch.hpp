// Which threads ran, from the kernel's own scheduler events, instead of reading every thread's
// /proc schedstat each tick: one perf_event_open per CPU with context-switch records
// (PERF_RECORD_SWITCH_CPU_WIDE) in a ring buffer that spyglass reads from memory, no system call
// per thread. A thread that was not switched in since the previous pass and is not running has
// not executed an instruction: its stack cannot have changed. Needs CAP_PERFMON (or root, or
// kernel.perf_event_paranoid <= 0); without it, open() returns nothing and the sampler reads
// schedstat as before.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <sys/types.h>

namespace spyglass::process {

class SchedWatch {
  public:
    // One event per online CPU; nullptr when the kernel refuses (no permission, seccomp).
    static std::unique_ptr<SchedWatch> open();
    ~SchedWatch();
    SchedWatch(const SchedWatch&) = delete;
    SchedWatch& operator=(const SchedWatch&) = delete;

    // Threads of these processes are followed (others' switches are skipped).
    void follow(pid_t tgid) { tgids_.insert(tgid); }
    // Processes whose new children (forks, at any depth) are reported by take_children(), and
    // whose execs by take_execs(): what --subprocesses follows.
    void follow_descendants(pid_t pid) { ancestors_.insert(pid); }
    std::vector<pid_t> take_children() { return std::exchange(children_, {}); }
    std::vector<pid_t> take_execs() { return std::exchange(execs_, {}); }
    // /proc said, after this watch began, that `tid` was not on a CPU: from now on a switch in
    // is what says it ran (a thread asleep all along makes no records at all).
    void note_off_cpu(pid_t tid) { threads_.try_emplace(tid, Thread{}); }
    // A thread that is gone: forget what was seen of it.
    void forget(pid_t tid) { threads_.erase(tid); }

    // Reads the records since the previous poll. Returns false when some were lost: then no
    // thread may be assumed idle for this pass.
    bool poll();

    enum class Seen : std::uint8_t {
        unknown, // no switch of it seen yet: ask /proc
        idle,    // not switched in since the previous poll, and not on a CPU now
        ran,     // switched in since the previous poll, or on a CPU now
    };
    [[nodiscard]] Seen seen(pid_t tid) const noexcept;
    // Whether a thread of `tgid` was created or exited in the records of the last poll.
    [[nodiscard]] bool threads_changed(pid_t tgid) const noexcept {
        return changed_.contains(tgid);
    }
    // Whether the thread was left runnable (preempted) at its last switch out: /proc's 'R'.
    [[nodiscard]] bool runnable(pid_t tid) const noexcept;
    // When the thread was last switched in, if the records polled so far have it on a CPU: two
    // polls that give the same time saw one stretch on a CPU, never switched out in between.
    [[nodiscard]] std::optional<std::uint64_t> on_cpu_since(pid_t tid) const noexcept;

    // A thread's switches so far, the records not yet polled included (read, not consumed):
    // whether it is on a CPU now, and how often it was switched in. Unknown (never seen): nullopt.
    struct OnCpu {
        bool running = false;
        bool preempted = false; // switched out runnable: waiting for a CPU
        std::uint64_t switch_ins = 0;
        std::uint64_t switched_in_ns = 0; // the latest switch in (CLOCK_MONOTONIC)
    };
    [[nodiscard]] std::optional<OnCpu> peek(pid_t tid) const;

    [[nodiscard]] std::uint64_t records() const noexcept { return records_; }
    [[nodiscard]] std::uint64_t lost_polls() const noexcept { return lost_polls_; }

  private:
    struct Ring {
        int fd = -1;
        void* base = nullptr;
        std::size_t mapped = 0;
    };
    struct Thread {
        std::uint64_t switched_in = 0; // the poll that last saw it switched in
        bool running = false;
        bool preempted = false;
        std::uint64_t switch_ins = 0;
        std::uint64_t switched_in_ns = 0;
        std::uint64_t latest_ns = 0; // the time of its latest record so far
    };
    SchedWatch() = default;
    void handle(const unsigned char* record, std::size_t size);

    std::vector<Ring> rings_;
    std::size_t data_size_ = 0;
    std::unordered_set<pid_t> tgids_;
    std::unordered_map<pid_t, Thread> threads_;
    std::unordered_set<pid_t> changed_;   // tgids with a fork or exit in the last poll
    std::unordered_set<pid_t> ancestors_; // their descendants are reported
    std::vector<pid_t> children_, execs_;
    std::uint64_t poll_ = 0;
    std::uint64_t records_ = 0, lost_polls_ = 0;
    std::vector<unsigned char> scratch_; // a record that wraps around the ring's end
};

} // namespace spyglass::process
