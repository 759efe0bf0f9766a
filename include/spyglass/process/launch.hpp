// Running a command as a child of spyglass (for `record -- CMD` and `top -- CMD`).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <sys/types.h>

#include "spyglass/error.hpp"

namespace spyglass::process {

class Child {
  public:
    // Forks and execs `argv` (searched in PATH) with spyglass's stdin, stdout and stderr. Fails
    // with the reason exec failed ("No such file or directory").
    static Result<Child> launch(const std::vector<std::string>& argv);

    Child(Child&& other) noexcept;
    Child& operator=(Child&&) = delete;
    ~Child(); // reaps the child if it has exited; never kills it

    [[nodiscard]] pid_t pid() const noexcept { return pid_; }
    // True once the child has exited (it stays a zombie until wait()).
    [[nodiscard]] bool exited() const noexcept;
    // Waits for the child and returns its status as a shell would: the exit code, or 128 + the
    // signal that killed it.
    int wait() noexcept;
    void signal(int signal_number) const noexcept;

  private:
    explicit Child(pid_t pid) noexcept : pid_(pid) {}
    pid_t pid_ = -1;
    std::optional<int> status_;
};

} // namespace spyglass::process
