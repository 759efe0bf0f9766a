#include "spyglass/process/exec_watch.hpp"

#include <string>

#include <fcntl.h>
#include <unistd.h>

#include "spyglass/process/procfs.hpp"

namespace spyglass::process {

ExecWatch::ExecWatch(pid_t pid, std::uint64_t probe) noexcept : pid_(pid), probe_(probe) {
    std::string path = "/proc/" + std::to_string(pid) + "/mem";
    mem_fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
}

ExecWatch::~ExecWatch() {
    if (mem_fd_ >= 0) ::close(mem_fd_);
}

bool ExecWatch::replaced() const noexcept {
    if (mem_fd_ < 0 || probe_ == 0) return false;
    char byte = 0;
    // The old address space answers with its byte; a released one with end-of-file.
    if (::pread(mem_fd_, &byte, 1, static_cast<off_t>(probe_)) != 0) return false;
    auto stat = read_stat(pid_);
    return stat && stat->state != 'Z' && stat->state != 'X';
}

} // namespace spyglass::process
