#include "spyglass/process/launch.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spyglass/process/open_limit.hpp"

namespace spyglass::process {

Result<Child> Child::launch(const std::vector<std::string>& argv) {
    if (argv.empty()) return fail(Errc::invalid_argument, "no command to run");
    int pipe_fds[2];
    if (::pipe2(pipe_fds, O_CLOEXEC) != 0)
        return fail(Errc::io, "cannot create a pipe: {}", std::strerror(errno));
    std::vector<char*> args;
    for (const std::string& arg : argv)
        args.push_back(const_cast<char*>(arg.c_str()));
    args.push_back(nullptr);

    pid_t pid = ::fork();
    if (pid < 0) {
        int err = errno;
        ::close(pipe_fds[0]);
        ::close(pipe_fds[1]);
        return fail(Errc::io, "cannot fork: {}", std::strerror(err));
    }
    if (pid == 0) {
        // The child gets default signal handling, whatever spyglass set up.
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        for (int sig : {SIGINT, SIGTERM, SIGPIPE, SIGCHLD, SIGQUIT, SIGHUP})
            ::signal(sig, SIG_DFL);
        restore_open_limit();
        ::execvp(args[0], args.data());
        int err = errno;
        ssize_t ignored = ::write(pipe_fds[1], &err, sizeof err);
        (void)ignored;
        ::_exit(127);
    }
    ::close(pipe_fds[1]);
    int exec_error = 0;
    ssize_t got;
    do {
        got = ::read(pipe_fds[0], &exec_error, sizeof exec_error);
    } while (got < 0 && errno == EINTR);
    ::close(pipe_fds[0]);
    if (got == sizeof exec_error) {
        int status;
        ::waitpid(pid, &status, 0);
        return fail(Errc::not_found, "cannot run {}: {}", argv[0], std::strerror(exec_error));
    }
    return Child(pid);
}

Child::Child(Child&& other) noexcept
    : pid_(std::exchange(other.pid_, -1)), status_(other.status_) {}

Child::~Child() {
    if (pid_ > 0 && !status_) {
        int status;
        if (::waitpid(pid_, &status, WNOHANG) == pid_) status_ = status;
    }
}

bool Child::exited() const noexcept {
    if (status_) return true;
    siginfo_t info{};
    if (::waitid(P_PID, static_cast<id_t>(pid_), &info, WEXITED | WNOHANG | WNOWAIT) != 0)
        return errno == ECHILD;
    return info.si_pid == pid_;
}

int Child::wait() noexcept {
    if (!status_) {
        int status = 0;
        pid_t got;
        do {
            got = ::waitpid(pid_, &status, 0);
        } while (got < 0 && errno == EINTR);
        status_ = got == pid_ ? status : 0;
    }
    if (WIFEXITED(*status_)) return WEXITSTATUS(*status_);
    if (WIFSIGNALED(*status_)) return 128 + WTERMSIG(*status_);
    return 1;
}

void Child::signal(int signal_number) const noexcept {
    if (pid_ > 0 && !status_) ::kill(pid_, signal_number);
}

} // namespace spyglass::process
