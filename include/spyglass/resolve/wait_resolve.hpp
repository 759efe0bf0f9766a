// What a wait is, from the raw numbers the sampling thread read (RawWait): on the resolver
// thread (or dump's), which has time for /proc links, net tables and the target's memory.
//   - a descriptor is described once per (fd, inode): its link is read and checked against the
//     inode the capture carries, and the description kept while that fd has that inode;
//   - sockets are looked up by inode in the target's net tables, which are parsed again only
//     when an inode is not in them, and at most once per pass;
//   - a futex word is the GIL's or another lock's (python/waits.hpp); which primitive the
//     thread waits in comes from its innermost Python frames.
// Targets carry addresses, ports and paths, never data.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>

#include <sys/types.h>

#include "spyglass/handoff/capture_queue.hpp"
#include "spyglass/model/frame_table.hpp"
#include "spyglass/model/wait.hpp"
#include "spyglass/process/memory.hpp"
#include "spyglass/process/proc_waits.hpp"
#include "spyglass/python/target.hpp"
#include "spyglass/python/waits.hpp"

namespace spyglass::sampling {

struct WaitDescription {
    model::WaitKind kind = model::WaitKind::unknown;
    std::string syscall; // "recvfrom", "futex"; empty outside a system call
    std::string target;  // "tcp 127.0.0.1:5432", "GIL", "lock 0x7f...", "file /var/db"...
    std::string detail;  // for dump: "fd 5, local 127.0.0.1:40312, ESTAB"
    [[nodiscard]] bool known() const noexcept { return kind != model::WaitKind::unknown; }
};

struct WaitResolveStats {
    std::uint64_t links_read = 0; // descriptors described (cache misses)
    std::uint64_t net_parses = 0; // times the net tables were read
    std::uint64_t fd_changed = 0; // descriptors closed or reused before they were described
};

class WaitResolver {
  public:
    WaitResolver(std::shared_ptr<process::RemoteMemory> memory, const python::TargetInfo& target);

    // `stack` is the sample's resolved stack (innermost first) in `frames`; `pass_ns` the
    // capture's time (the net tables are read at most once per distinct value).
    WaitDescription describe(const RawWait& raw, pid_t tid, python::Address interp,
                             std::span<const model::FrameId> stack, const model::FrameTable& frames,
                             std::uint64_t pass_ns);

    [[nodiscard]] const WaitResolveStats& stats() const noexcept { return stats_; }

  private:
    struct Descriptor {
        model::WaitKind kind = model::WaitKind::file;
        std::string target, detail;
        bool regular = false; // a regular file or block device: D there is disk I/O
    };
    // What descriptor `fd` is; `identity` from the sampling thread (inode 0: read it now).
    const Descriptor& descriptor(std::int64_t fd, process::FdIdentity identity,
                                 std::uint64_t pass_ns);
    Descriptor describe_link(std::int64_t fd, const process::FdIdentity& identity,
                             std::uint64_t pass_ns);
    const process::SocketInfo* socket(std::uint64_t inode, std::uint64_t pass_ns);
    std::string set_of(const std::vector<int>& fds, std::uint64_t pass_ns);
    std::optional<std::string> path_at(process::Address address);
    // Blocked outside a system call: in a page fault, stopped, or in uninterruptible I/O.
    void describe_outside_syscall(const RawWait& raw, pid_t tid, WaitDescription& out);
    // An open (or another call on a path) that blocks: a FIFO, or a slow file system.
    void describe_path_wait(const RawWait& raw, WaitDescription& out);
    void describe_futex(const RawWait& raw, python::Address interp,
                        std::span<const model::FrameId> stack, const model::FrameTable& frames,
                        WaitDescription& out);
    void describe_poll(const RawWait& raw, std::span<const model::FrameId> stack,
                       const model::FrameTable& frames, std::uint64_t pass_ns,
                       WaitDescription& out);

    std::shared_ptr<process::RemoteMemory> memory_;
    const python::TargetInfo& target_;
    pid_t pid_;
    python::GilWords gil_;
    process::FdDirectory fds_; // the resolver's own, for descriptors it identifies itself
    struct Cached {
        std::uint64_t inode = 0;
        Descriptor descriptor;
    };
    std::unordered_map<std::int64_t, Cached> by_fd_; // one entry per descriptor number
    process::SocketTable sockets_;
    std::uint64_t sockets_pass_ = ~std::uint64_t{0};
    WaitResolveStats stats_;
};

// Interns a description as the samples carry it: everything, or (WaitDetail::kind) the kind
// alone. 0 for an unknown wait.
model::WaitId intern_wait(model::FrameTable& frames, const WaitDescription& wait,
                          model::WaitDetail detail);

} // namespace spyglass::sampling
