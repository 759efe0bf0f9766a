// Everything spyglass learns about a process from /proc: mappings, tasks, names, scheduler
// state. Paths into the target's files go through /proc/PID/root so containers work.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <sys/types.h>

#include "spyglass/error.hpp"
#include "spyglass/process/proc_waits.hpp"

namespace spyglass::process {

struct MapEntry {
    std::uint64_t start = 0;
    std::uint64_t end = 0;
    std::uint64_t offset = 0;
    std::uint64_t inode = 0;
    bool readable = false;
    bool writable = false;
    bool executable = false;
    std::string path; // empty for anonymous mappings; "[heap]", "[stack]" for special ones

    [[nodiscard]] bool contains(std::uint64_t address) const noexcept {
        return address >= start && address < end;
    }
};

// Parses the text of /proc/PID/maps; lines that do not parse are skipped.
std::vector<MapEntry> parse_maps(std::string_view text);
Result<std::vector<MapEntry>> read_maps(pid_t pid);

// The address ranges a pointer may legally point into: sorted, readable, merged.
class AddressSpace {
  public:
    AddressSpace() = default;
    explicit AddressSpace(const std::vector<MapEntry>& maps);
    [[nodiscard]] bool readable(std::uint64_t address, std::uint64_t length = 1) const noexcept;

  private:
    std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges_;
};

// Scheduler state of one task, from /proc/PID/task/TID/stat.
struct TaskStat {
    char state = '?'; // R running/runnable, S sleeping, D disk, T stopped, t traced, Z, I, X
    pid_t ppid = 0;
    std::uint64_t utime_ticks = 0;
    std::uint64_t stime_ticks = 0;
    std::uint64_t start_ticks = 0; // since boot: tells a reused PID from the original
    std::string comm;

    [[nodiscard]] bool on_cpu() const noexcept { return state == 'R'; }
};

// Parses a stat line. The command name may contain spaces and ')': parsing starts at the last ')'.
std::optional<TaskStat> parse_stat(std::string_view text);

Result<TaskStat> read_stat(pid_t pid);
Result<TaskStat> read_task_stat(pid_t pid, pid_t tid);
Result<std::vector<pid_t>> list_tasks(pid_t pid);
std::optional<std::string> task_comm(pid_t pid, pid_t tid);
Result<std::string> exe_path(pid_t pid);
std::vector<std::string> cmdline(pid_t pid);
bool process_exists(pid_t pid) noexcept;

// Children of `pid` (direct), by scanning /proc: CONFIG_PROC_CHILDREN is often off.
std::vector<pid_t> list_children(pid_t pid);

// The PID of `pid` as its own PID namespace sees it (last NSpid entry), else `pid`.
pid_t namespaced_pid(pid_t pid);
// The last NSpid entry of a /proc/PID/status text; `fallback` unless every entry is a PID > 0.
pid_t parse_namespaced_pid(std::string_view status, pid_t fallback);

// A path to a file of the target, as the target sees it: /proc/PID/root/<path>.
std::string path_in_target(pid_t pid, std::string_view path);

// Reads a whole small file (for /proc), without following the iostream machinery.
std::optional<std::string> read_small_file(const std::string& path);

// Keeps /proc/PID/task/TID/{stat,schedstat} open and rereads them with pread: two system calls
// per sample instead of six. The thread's syscall file (what it is blocked in) is opened the
// first time it is asked for: most threads of a service wait, but a CPU-bound one never does.
class TaskStatReader {
  public:
    TaskStatReader(pid_t pid, pid_t tid) noexcept;
    ~TaskStatReader();
    TaskStatReader(TaskStatReader&& other) noexcept;
    TaskStatReader& operator=(TaskStatReader&& other) noexcept;
    TaskStatReader(const TaskStatReader&) = delete;
    TaskStatReader& operator=(const TaskStatReader&) = delete;

    struct Reading {
        char state = '?';
        int cpu = -1;               // the CPU it last ran on (stat's "processor"); -1 unknown
        std::uint64_t run_ns = 0;   // on-CPU time since the task started (schedstat)
        std::uint64_t delay_ns = 0; // time spent runnable, waiting for a CPU (schedstat)
        std::uint64_t slices = 0;   // times it was put on a CPU (schedstat)
    };
    // Whether a thread ran between two readings. The run time of a thread that is on a CPU now
    // is brought up to date only at the scheduler's tick or at its next switch: one that woke
    // and runs shows the same run time for up to a tick, but one more slice.
    struct RunMark {
        std::uint64_t run_ns = 0;
        std::uint64_t slices = 0;
        bool operator==(const RunMark&) const = default;
    };
    // Fails with process_gone once the task has exited, with io when its files could not be
    // opened for lack of descriptors (opened again at each read until they can be).
    std::expected<Reading, Errc> read() noexcept;
    // Only the run time and slices (one pread of schedstat).
    std::expected<RunMark, Errc> read_run_mark() noexcept;
    // schedstat alone (run time, delay, slices; state '?', cpu -1): for a thread whose state
    // is known otherwise, one cheap pread instead of stat's formatting of 52 fields.
    std::expected<Reading, Errc> read_schedstat() noexcept;
    // What the thread is blocked in now (one pread of /proc/PID/task/TID/syscall). Fails with
    // permission_denied without ptrace access, process_gone once the task has exited.
    std::expected<SyscallState, Errc> read_syscall() noexcept;
    [[nodiscard]] pid_t tid() const noexcept { return tid_; }
    // Whether its files could not be opened for lack of descriptors (EMFILE, ENFILE).
    [[nodiscard]] bool out_of_descriptors() const noexcept { return out_of_descriptors_; }

  private:
    void close_all() noexcept;
    void open_files() noexcept;
    // Opens again what could not be opened for lack of descriptors: false while it still cannot.
    bool reopen() noexcept;
    pid_t pid_ = 0;
    pid_t tid_ = 0;
    int stat_fd_ = -1;
    int schedstat_fd_ = -1;
    int syscall_fd_ = -1; // -1: not opened yet (or it could not be: each read opens it then)
    bool out_of_descriptors_ = false;
};

} // namespace spyglass::process
