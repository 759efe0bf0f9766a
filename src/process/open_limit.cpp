#include "spyglass/process/open_limit.hpp"

#include <cerrno>

#include <sys/resource.h>

namespace spyglass::process {

namespace {
rlimit started_with{RLIM_INFINITY, RLIM_INFINITY};
bool raised = false;
} // namespace

void raise_open_limit() noexcept {
    rlimit limits{};
    if (::getrlimit(RLIMIT_NOFILE, &limits) != 0) return;
    started_with = limits;
    if (limits.rlim_cur == limits.rlim_max) return;
    limits.rlim_cur = limits.rlim_max;
    raised = ::setrlimit(RLIMIT_NOFILE, &limits) == 0;
}

std::uint64_t open_limit() noexcept {
    rlimit limits{};
    if (::getrlimit(RLIMIT_NOFILE, &limits) != 0 || limits.rlim_cur == RLIM_INFINITY)
        return std::uint64_t{1} << 20;
    return limits.rlim_cur;
}

void restore_open_limit() noexcept {
    if (raised) ::setrlimit(RLIMIT_NOFILE, &started_with);
}

bool out_of_descriptors(int err) noexcept {
    return err == EMFILE || err == ENFILE;
}

} // namespace spyglass::process
