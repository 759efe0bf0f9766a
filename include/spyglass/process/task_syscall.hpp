// What a thread is doing in the kernel, from /proc/PID/task/TID/syscall: the system call it is
// blocked in with its arguments, and its user stack pointer and program counter — enough to
// copy its stack and unwind it without stopping it. Kept open and re-read with pread.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include <sys/types.h>

namespace spyglass::process {

struct TaskSyscall {
    bool running = false;     // "running": on a CPU, nothing to read
    std::int64_t number = -1; // -1: blocked, but not in a system call (a fault)
    std::array<std::uint64_t, 6> args{};
    std::uint64_t sp = 0, pc = 0;
    friend bool operator==(const TaskSyscall&, const TaskSyscall&) = default;
};

// Parses the text of the file ("nr a1 .. a6 sp pc", "-1 sp pc" or "running").
std::optional<TaskSyscall> parse_task_syscall(std::string_view text);

class TaskSyscallReader {
  public:
    TaskSyscallReader(pid_t pid, pid_t tid) noexcept;
    ~TaskSyscallReader();
    TaskSyscallReader(TaskSyscallReader&& other) noexcept;
    TaskSyscallReader& operator=(TaskSyscallReader&& other) noexcept;
    TaskSyscallReader(const TaskSyscallReader&) = delete;
    TaskSyscallReader& operator=(const TaskSyscallReader&) = delete;

    // Nothing when the thread is gone or the file cannot be read (no permission).
    std::optional<TaskSyscall> read() noexcept;

  private:
    int fd_ = -1;
};

} // namespace spyglass::process
