// Noticing that a process replaced its program (execve): its PID, threads' names and often its
// executable stay, but every address spyglass learned is void. A descriptor of /proc/PID/mem
// opened at attach holds the address space of that moment; once the process has exec'd, that
// address space is gone and reading through the old descriptor returns nothing.
#pragma once

#include <cstdint>

#include <sys/types.h>

namespace spyglass::process {

class ExecWatch {
  public:
    // `probe` is an address known to be mapped at attach (the interpreter's runtime state).
    ExecWatch(pid_t pid, std::uint64_t probe) noexcept;
    ~ExecWatch();
    ExecWatch(const ExecWatch&) = delete;
    ExecWatch& operator=(const ExecWatch&) = delete;

    // True once the address space seen at attach is gone while the process lives on (it
    // exec'd). False while it is the same, when the process is gone, or when it cannot tell.
    [[nodiscard]] bool replaced() const noexcept;

  private:
    pid_t pid_;
    std::uint64_t probe_;
    int mem_fd_ = -1;
};

} // namespace spyglass::process
