#include "spyglass/capture/wait_capture.hpp"

#include <algorithm>

namespace spyglass::sampling {

RawWait read_raw_wait(process::TaskStatReader& stat, process::FdDirectory& fds, char state) {
    RawWait wait;
    wait.state = state;
    auto syscall = stat.read_syscall();
    if (!syscall || syscall->where == process::SyscallState::Where::running) return wait;
    if (syscall->where == process::SyscallState::Where::user) {
        wait.read = WaitRead::user;
        return wait;
    }
    wait.read = WaitRead::syscall;
    wait.nr = syscall->nr;
    std::copy_n(syscall->args.begin(), wait.args.size(), wait.args.begin());
    // The descriptor as it is now, while the thread is blocked on it: the resolver comes later,
    // when it may have been closed and its number reused.
    process::SyscallArgs args = process::syscall_args(syscall->nr);
    if (args == process::SyscallArgs::fd || args == process::SyscallArgs::epoll)
        wait.fd = fds.identify(static_cast<std::int64_t>(syscall->args[0]))
                      .value_or(process::FdIdentity{});
    return wait;
}

} // namespace spyglass::sampling
