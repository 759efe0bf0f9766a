#include "spyglass/process/ptrace.hpp"

#include <cerrno>
#include <csignal>
#include <utility>

#include <sys/ptrace.h>
#include <sys/wait.h>

namespace spyglass::process {

std::expected<StoppedThread, Errc> StoppedThread::stop(pid_t tid) noexcept {
    if (::ptrace(PTRACE_SEIZE, tid, nullptr, nullptr) != 0) {
        int err = errno;
        return std::unexpected(err == ESRCH ? Errc::process_gone : Errc::permission_denied);
    }
    if (::ptrace(PTRACE_INTERRUPT, tid, nullptr, nullptr) != 0) {
        ::ptrace(PTRACE_DETACH, tid, nullptr, nullptr);
        return std::unexpected(Errc::process_gone);
    }
    int pending = 0;
    for (;;) {
        int status = 0;
        pid_t got = ::waitpid(tid, &status, __WALL);
        if (got < 0) {
            if (errno == EINTR) continue;
            return std::unexpected(Errc::process_gone);
        }
        if (WIFEXITED(status) || WIFSIGNALED(status)) return std::unexpected(Errc::process_gone);
        if (!WIFSTOPPED(status)) continue;
        int event = status >> 16;
        if (event == PTRACE_EVENT_STOP) break; // our interrupt (or a group stop)
        // A signal arrived first: remember it for re-injection, let the interrupt land.
        pending = WSTOPSIG(status);
        if (::ptrace(PTRACE_CONT, tid, nullptr, nullptr) != 0)
            return std::unexpected(Errc::process_gone);
    }
    return StoppedThread(tid, pending);
}

StoppedThread::StoppedThread(StoppedThread&& other) noexcept
    : tid_(std::exchange(other.tid_, -1)), pending_signal_(other.pending_signal_) {}

StoppedThread& StoppedThread::operator=(StoppedThread&& other) noexcept {
    if (this != &other) {
        resume();
        tid_ = std::exchange(other.tid_, -1);
        pending_signal_ = other.pending_signal_;
    }
    return *this;
}

StoppedThread::~StoppedThread() {
    resume();
}

void StoppedThread::resume() noexcept {
    if (tid_ < 0) return;
    ::ptrace(PTRACE_DETACH, tid_, nullptr,
             reinterpret_cast<void*>(static_cast<long>(pending_signal_)));
    tid_ = -1;
}

std::expected<void, Errc> ProcessPause::stop(const std::vector<pid_t>& tids) noexcept {
    threads_.clear();
    threads_.reserve(tids.size());
    for (pid_t tid : tids) {
        auto stopped = StoppedThread::stop(tid);
        if (stopped) {
            threads_.push_back(std::move(*stopped));
        } else if (stopped.error() != Errc::process_gone) {
            threads_.clear();
            return std::unexpected(stopped.error());
        }
    }
    return {};
}

} // namespace spyglass::process
