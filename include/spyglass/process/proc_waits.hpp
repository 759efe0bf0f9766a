// What the kernel shows of a blocked thread and of a process's descriptors: the system call a
// thread is in (/proc/PID/task/TID/syscall), what a descriptor is (/proc/PID/fd/N), the
// addresses and states of sockets (/proc/PID/net/{tcp,tcp6,udp,udp6,unix}: the target's own
// network namespace) and the descriptors of an epoll set (/proc/PID/fdinfo/N). The parsers the
// sampling thread uses (parse_syscall, FdDirectory) allocate nothing.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <sys/types.h>

namespace spyglass::process {

// --- x86-64 system calls: names from the kernel's list (syscall_table.inc, generated) ---

// "read", "futex"...; empty for a number no call has.
[[nodiscard]] std::string_view syscall_name(std::int64_t nr) noexcept;
// The number of a named call, for tests and for tables keyed by name.
[[nodiscard]] std::optional<std::int64_t> syscall_number(std::string_view name) noexcept;

// Which argument of a call says what it waits on.
enum class SyscallArgs : std::uint8_t {
    none,
    fd,     // the first argument is a descriptor: read, recvfrom, accept, connect, flock...
    futex,  // the first argument is the futex word's address
    poll,   // poll / ppoll: a pollfd array and its length
    select, // select / pselect6: the descriptor count and three fd_set pointers
    epoll,  // epoll_wait / epoll_pwait / epoll_pwait2: the epoll descriptor
    sleep,  // nanosleep / clock_nanosleep
    child,  // wait4 / waitid
    path0,  // open / creat: the path is the first argument (a pointer in the target)
    path1,  // openat / openat2: the path is the second argument
};
[[nodiscard]] SyscallArgs syscall_args(std::int64_t nr) noexcept;

// One read of /proc/PID/task/TID/syscall.
struct SyscallState {
    enum class Where : std::uint8_t {
        running, // "running": on a CPU (or woken) when the file was read
        user,    // "-1 sp pc": blocked, but not in a system call (a page fault, a stop)
        syscall, // "nr a0 ... a5 sp pc": in system call `nr`
    };
    Where where = Where::running;
    std::int64_t nr = -1;
    std::array<std::uint64_t, 6> args{};
};
[[nodiscard]] std::optional<SyscallState> parse_syscall(std::string_view text) noexcept;

// --- descriptors ---

enum class FdType : std::uint8_t {
    path,   // a file, directory, FIFO or device: `name` is the path
    socket, // "socket:[inode]"
    pipe,   // "pipe:[inode]"
    anon,   // "anon_inode:[eventfd]", "anon_inode:[eventpoll]", "anon_inode:inotify": `name`
    other,  // anything else ("net:[...]", "mnt:[...]")
};
struct FdLink {
    FdType type = FdType::other;
    std::uint64_t inode = 0; // sockets and pipes
    std::string_view name;   // the path (" (deleted)" kept), or the anon inode's kind
};
// The text of a /proc/PID/fd/N link.
[[nodiscard]] FdLink parse_fd_link(std::string_view link) noexcept;

// What the sampling thread learns of a descriptor without reading its link: the inode, device
// and type of the file it refers to (one fstatat through /proc/PID/fd, kept open).
struct FdIdentity {
    std::uint64_t inode = 0;
    std::uint64_t device = 0;
    std::uint32_t mode = 0; // st_mode: S_ISSOCK, S_ISFIFO, S_ISREG...
};

class FdDirectory {
  public:
    explicit FdDirectory(pid_t pid) noexcept : pid_(pid) {}
    ~FdDirectory();
    FdDirectory(const FdDirectory&) = delete;
    FdDirectory& operator=(const FdDirectory&) = delete;
    // Opened on first use. nullopt: no such descriptor (closed meanwhile), or no access.
    [[nodiscard]] std::optional<FdIdentity> identify(std::int64_t fd) noexcept;

  private:
    pid_t pid_;
    int dir_fd_ = -1;
    bool tried_ = false;
};

// --- sockets ---

enum class SocketProtocol : std::uint8_t { tcp, udp, unix_ };
[[nodiscard]] const char* socket_protocol_name(SocketProtocol protocol) noexcept;

struct SocketInfo {
    SocketProtocol protocol = SocketProtocol::tcp;
    std::string local;  // "127.0.0.1:5432", "[::1]:8080"; a unix socket's path (may be empty)
    std::string remote; // empty when there is no peer (listening, unconnected)
    int state = 0;      // TCP: 1 ESTABLISHED ... 10 LISTEN; unix: 1 unconnected, 3 connected
    bool listening = false;
};
using SocketTable = std::unordered_map<std::uint64_t, SocketInfo>; // by inode

// The rows of /proc/net/tcp, tcp6, udp or udp6 (`ipv6` for the *6 files), added to `out` by
// inode; rows that do not parse, and rows without an inode (TIME_WAIT), are skipped.
void parse_net_inet(std::string_view text, SocketProtocol protocol, bool ipv6, SocketTable& out);
// The rows of /proc/net/unix.
void parse_net_unix(std::string_view text, SocketTable& out);
// TCP_ESTABLISHED... as `ss` names them ("ESTAB", "LISTEN", "SYN-SENT"...); "" for 0.
[[nodiscard]] const char* tcp_state_name(int state) noexcept;
// The five tables of `pid`'s network namespace.
SocketTable read_sockets(pid_t pid);

// The descriptors an epoll set watches: the "tfd:" lines of /proc/PID/fdinfo/EPFD.
[[nodiscard]] std::vector<int> parse_epoll_fdinfo(std::string_view text);

} // namespace spyglass::process
