// A process that execs while spyglass attaches to it: discovery read one program and the
// thread states are read in the next, which fails as a bad address or reads nonsense. Attach
// again, from the start, a few times; then say that it kept exec'ing.
#pragma once

#include <utility>

#include <sys/types.h>

#include "spyglass/error.hpp"

namespace spyglass::python {

inline constexpr int kAttachAttemptsAcrossExec = 3;

// `attempt()` returns {the result of one attach from discovery on, whether the process exec'd
// since that attach began}. An attach that an exec overlapped is made again, whatever it
// returned: what it learned may be of the old program.
template <class T, class Attempt>
Result<T> attach_across_exec(pid_t pid, Attempt attempt) {
    for (int made = 1;; ++made) {
        auto [result, exec_since] = attempt();
        if (!exec_since) return std::move(result);
        if (made == kAttachAttemptsAcrossExec)
            return fail(Errc::bad_address,
                        "process {} replaced its program (exec) while spyglass attached to it, "
                        "{} times in a row: try again",
                        pid, made);
    }
}

} // namespace spyglass::python
