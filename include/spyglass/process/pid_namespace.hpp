// Thread ids across PID namespaces. A target in a container numbers its threads in its own
// PID namespace, and that is what CPython stores (native_thread_id, struct pthread's tid); the
// kernel's /proc, ptrace and spyglass's outputs use ours. NSpid in /proc/TID/status lists a
// task's id in every namespace from ours down to its own.
#pragma once

#include <cstdint>
#include <unordered_map>

#include <sys/types.h>

namespace spyglass::process {

// Whether `pid` lives in a PID namespace below ours (NSpid has more than one id).
bool in_nested_pid_namespace(pid_t pid);

class NamespaceTids {
  public:
    explicit NamespaceTids(pid_t pid) noexcept : pid_(pid) {}
    // Our id for the thread the target calls `ns_tid`, or 0 if no thread of the process has
    // it. A miss rereads the process's threads, at most once per `kRefreshNs`.
    pid_t to_host(pid_t ns_tid);
    // The target's threads changed: reread them at the next lookup the rate allows.
    void invalidate() noexcept { dirty_ = true; }

  private:
    static constexpr std::uint64_t kRefreshNs = 20'000'000;
    void refresh();
    pid_t pid_;
    std::uint64_t last_refresh_ns_ = 0;
    bool dirty_ = false;
    std::unordered_map<pid_t, pid_t> host_of_; // namespace tid -> our tid
};

} // namespace spyglass::process
