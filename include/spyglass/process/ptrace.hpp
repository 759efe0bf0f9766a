// Stopping threads of another process, briefly and safely (RAII). PTRACE_SEIZE + PTRACE_INTERRUPT
// is used rather than PTRACE_ATTACH: it sends no SIGSTOP, so if spyglass dies while a thread is
// stopped, the kernel detaches it and the thread simply runs on.
#pragma once

#include <expected>
#include <vector>

#include <sys/types.h>

#include "spyglass/error.hpp"

namespace spyglass::process {

class StoppedThread {
  public:
    // Seizes and interrupts `tid`, waits until it is stopped. Errc::process_gone if it exited,
    // Errc::permission_denied without ptrace rights.
    static std::expected<StoppedThread, Errc> stop(pid_t tid) noexcept;

    StoppedThread(StoppedThread&& other) noexcept;
    StoppedThread& operator=(StoppedThread&& other) noexcept;
    StoppedThread(const StoppedThread&) = delete;
    StoppedThread& operator=(const StoppedThread&) = delete;
    ~StoppedThread(); // resumes the thread (re-injecting a signal that arrived meanwhile)

    [[nodiscard]] pid_t tid() const noexcept { return tid_; }
    void resume() noexcept;

  private:
    StoppedThread(pid_t tid, int pending_signal) noexcept
        : tid_(tid), pending_signal_(pending_signal) {}
    pid_t tid_ = -1;
    int pending_signal_ = 0;
};

// Stops every listed thread of a process, for a consistent snapshot; resumes all on destruction.
class ProcessPause {
  public:
    ProcessPause() = default;
    // Threads that exit meanwhile are skipped; a permission error fails the whole pause.
    std::expected<void, Errc> stop(const std::vector<pid_t>& tids) noexcept;
    void resume() noexcept { threads_.clear(); }
    ~ProcessPause() { resume(); }

  private:
    std::vector<StoppedThread> threads_;
};

} // namespace spyglass::process
