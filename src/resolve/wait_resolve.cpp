#include "spyglass/resolve/wait_resolve.hpp"

#include <algorithm>
#include <cstring>

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spyglass/process/procfs.hpp"
#include "spyglass/python/strings.hpp"

namespace spyglass::sampling {

namespace {

using model::WaitKind;

constexpr std::size_t kMaxSetShown = 3;   // descriptors named in a poll set's target
constexpr std::uint64_t kMaxPollFds = 64; // entries of a pollfd array read
constexpr std::uint64_t kMaxSelectFds = 1024;
constexpr std::size_t kMaxPath = 4096;

std::optional<std::string> read_link(const std::string& path) {
    char buffer[kMaxPath];
    ssize_t n = ::readlink(path.c_str(), buffer, sizeof buffer);
    if (n <= 0 || static_cast<std::size_t>(n) >= sizeof buffer) return std::nullopt;
    return std::string(buffer, static_cast<std::size_t>(n));
}

std::string describe_socket(const process::SocketInfo& info, std::string& detail) {
    const char* protocol = process::socket_protocol_name(info.protocol);
    if (info.protocol == process::SocketProtocol::unix_) {
        detail = info.local.empty() ? "unnamed" : info.local;
        if (info.local.empty()) return "unix (unnamed)";
        return fmt::format("unix {}{}", info.listening ? "listening " : "", info.local);
    }
    const char* state =
        info.protocol == process::SocketProtocol::tcp ? process::tcp_state_name(info.state) : "";
    detail = fmt::format("local {}{}{}{}{}", info.local, info.remote.empty() ? "" : ", peer ",
                         info.remote, *state != '\0' ? ", " : "", state);
    // The peer alone: the local port of a client differs with every connection, and a wait on
    // the same server should be one wait however many connections it is made on.
    if (!info.remote.empty()) return fmt::format("{} {}", protocol, info.remote);
    if (info.listening) return fmt::format("{} listening {}", protocol, info.local);
    return fmt::format("{} on {}", protocol, info.local);
}

// What a file's type says, without its link: a descriptor closed or reused before the resolver
// came to it (the capture's inode and mode are what it was).
std::string by_mode(std::uint32_t mode, std::uint64_t inode, WaitKind& kind) {
    if (S_ISSOCK(mode)) {
        kind = WaitKind::socket;
        return fmt::format("socket:[{}]", inode);
    }
    if (S_ISFIFO(mode)) {
        kind = WaitKind::pipe;
        return fmt::format("pipe:[{}]", inode);
    }
    kind = WaitKind::file;
    return "file (closed since)";
}

} // namespace

WaitResolver::WaitResolver(std::shared_ptr<process::RemoteMemory> memory,
                           const python::TargetInfo& target)
    : memory_(std::move(memory)), target_(target), pid_(target.pid), gil_(*memory_, target),
      fds_(target.pid) {}

const process::SocketInfo* WaitResolver::socket(std::uint64_t inode, std::uint64_t pass_ns) {
    auto it = sockets_.find(inode);
    if (it != sockets_.end()) return &it->second;
    // An inode the tables did not have when they were read: read them again, once a pass.
    if (sockets_pass_ == pass_ns) return nullptr;
    sockets_pass_ = pass_ns;
    sockets_ = process::read_sockets(pid_);
    ++stats_.net_parses;
    it = sockets_.find(inode);
    return it == sockets_.end() ? nullptr : &it->second;
}

WaitResolver::Descriptor WaitResolver::describe_link(std::int64_t fd,
                                                     const process::FdIdentity& identity,
                                                     std::uint64_t pass_ns) {
    Descriptor out;
    ++stats_.links_read;
    auto text = read_link(fmt::format("/proc/{}/fd/{}", pid_, fd));
    process::FdLink link;
    bool same = false;
    if (text) {
        link = process::parse_fd_link(*text);
        if (link.type == process::FdType::socket || link.type == process::FdType::pipe) {
            same = link.inode == identity.inode;
        } else {
            // A path's link says nothing of the inode: stat what the link leads to now.
            auto now = fds_.identify(fd);
            same = now && now->inode == identity.inode && now->device == identity.device;
        }
    }
    if (!same) {
        ++stats_.fd_changed;
        out.target = by_mode(identity.mode, identity.inode, out.kind);
        if (out.kind == WaitKind::socket)
            if (const process::SocketInfo* info = socket(identity.inode, pass_ns))
                out.target = describe_socket(*info, out.detail);
        return out;
    }
    switch (link.type) {
    case process::FdType::socket:
        out.kind = WaitKind::socket;
        if (const process::SocketInfo* info = socket(link.inode, pass_ns))
            out.target = describe_socket(*info, out.detail);
        else
            out.target = *text; // a protocol without a net table (netlink, packet...)
        break;
    case process::FdType::pipe:
        out.kind = WaitKind::pipe;
        out.target = *text;
        break;
    case process::FdType::path:
        if (S_ISFIFO(identity.mode)) {
            out.kind = WaitKind::pipe;
            out.target = fmt::format("fifo {}", link.name);
        } else {
            out.kind = WaitKind::file;
            out.regular = S_ISREG(identity.mode) || S_ISBLK(identity.mode);
            out.target =
                fmt::format("{} {}", S_ISCHR(identity.mode) ? "device" : "file", link.name);
        }
        break;
    case process::FdType::anon:
        if (link.name == "eventpoll") {
            out.kind = WaitKind::poll;
            out.target = "epoll";
        } else {
            out.kind = link.name == "eventfd" || link.name == "timerfd" ||
                               link.name == "signalfd" || link.name == "inotify"
                           ? WaitKind::event
                           : WaitKind::file;
            out.target = std::string(link.name);
        }
        break;
    case process::FdType::other:
        out.target = *text;
        break;
    }
    return out;
}

const WaitResolver::Descriptor&
WaitResolver::descriptor(std::int64_t fd, process::FdIdentity identity, std::uint64_t pass_ns) {
    Cached& cached = by_fd_[fd];
    if (identity.inode == 0) {
        // Not identified on the sampling thread (a descriptor of a poll set): now, then.
        if (auto now = fds_.identify(fd)) identity = *now;
    }
    if (identity.inode == 0) {
        cached = Cached{};
        cached.descriptor.kind = WaitKind::file;
        cached.descriptor.target = fmt::format("fd {} (closed)", fd);
        return cached.descriptor;
    }
    if (cached.inode != identity.inode) {
        cached.inode = identity.inode;
        cached.descriptor = describe_link(fd, identity, pass_ns);
    }
    return cached.descriptor;
}

std::string WaitResolver::set_of(const std::vector<int>& fds, std::uint64_t pass_ns) {
    std::string out = fmt::format("{} fds: ", fds.size());
    for (std::size_t i = 0; i < fds.size() && i < kMaxSetShown; ++i) {
        if (i != 0) out += ", ";
        out += descriptor(fds[i], {}, pass_ns).target;
    }
    if (fds.size() > kMaxSetShown) out += fmt::format(", +{} more", fds.size() - kMaxSetShown);
    return out;
}

std::optional<std::string> WaitResolver::path_at(process::Address address) {
    std::string path;
    char chunk[256];
    while (path.size() < kMaxPath) {
        // Up to the end of the page first: the next one may not be mapped.
        std::size_t length = std::min<std::uint64_t>(sizeof chunk, 4096 - (address & 4095));
        if (!memory_->read(address, chunk, length)) return std::nullopt;
        const char* end = static_cast<const char*>(std::memchr(chunk, '\0', length));
        path.append(chunk, end != nullptr ? static_cast<std::size_t>(end - chunk) : length);
        if (end != nullptr) break;
        address += length;
    }
    if (path.empty() || path.size() >= kMaxPath) return std::nullopt;
    // A path, not whatever the memory holds once the call returned (it is read after the
    // sample, and a short open's buffer is soon reused): no control characters, valid UTF-8
    // (the folded output is UTF-8, and such bytes were seen there).
    for (char c : path)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return std::nullopt;
    std::string checked;
    python::append_utf8_lossy(
        checked, std::span(reinterpret_cast<const std::uint8_t*>(path.data()), path.size()));
    if (checked != path) return std::nullopt;
    return path;
}

void WaitResolver::describe_futex(const RawWait& raw, python::Address interp,
                                  std::span<const model::FrameId> stack,
                                  const model::FrameTable& frames, WaitDescription& out) {
    const python::Address word = raw.args[0];
    out.detail = fmt::format("futex 0x{:x}", word);
    if (gil_.is_gil(word, interp)) {
        out.kind = WaitKind::gil;
        out.target = "GIL";
        return;
    }
    out.kind = WaitKind::lock;
    // The outermost of the innermost frames that are the standard library's primitives:
    // Queue.get waits in Condition.wait, and Queue.get is what the program called.
    std::optional<std::string> primitive;
    for (model::FrameId id : stack) {
        const model::Frame& frame = frames.get(id);
        if (frame.kind != model::FrameKind::python) break;
        auto found = python::sync_primitive(frames.strings().view(frame.function),
                                            frames.strings().view(frame.file));
        if (!found) break;
        primitive = std::move(found);
    }
    if (primitive)
        out.target = std::move(*primitive);
    else if (python::futex_identifies_lock(target_))
        out.target = fmt::format("lock 0x{:x}", word);
    else
        out.target = "lock";
}

void WaitResolver::describe_poll(const RawWait& raw, std::span<const model::FrameId> stack,
                                 const model::FrameTable& frames, std::uint64_t pass_ns,
                                 WaitDescription& out) {
    for (model::FrameId id : stack) {
        const model::Frame& frame = frames.get(id);
        if (frame.kind != model::FrameKind::python) break;
        if (python::is_event_loop_frame(frames.strings().view(frame.function),
                                        frames.strings().view(frame.file))) {
            out.kind = WaitKind::idle_loop;
            out.target = "asyncio loop";
            return;
        }
    }
    std::vector<int> fds;
    process::SyscallArgs args = process::syscall_args(raw.nr);
    if (args == process::SyscallArgs::epoll) {
        out.detail = fmt::format("epoll fd {}", raw.args[0]);
        if (auto text = process::read_small_file(
                fmt::format("/proc/{}/fdinfo/{}", pid_, static_cast<std::int64_t>(raw.args[0]))))
            fds = process::parse_epoll_fdinfo(*text);
    } else if (args == process::SyscallArgs::poll) {
        if (raw.args[1] == 0) { // poll(NULL, 0, timeout): a sleep
            out.kind = WaitKind::sleep;
            return;
        }
        std::uint64_t count = std::min(raw.args[1], kMaxPollFds);
        std::vector<std::int32_t> entries(count * 2); // struct pollfd: fd, events + revents
        if (memory_->read(raw.args[0], entries.data(), count * 8))
            for (std::uint64_t i = 0; i < count; ++i)
                if (entries[2 * i] >= 0) fds.push_back(entries[2 * i]);
    } else {
        std::uint64_t count = std::min(raw.args[0], kMaxSelectFds);
        if (count == 0) { // select(0, NULL, NULL, NULL, &timeout): 2.7's time.sleep
            out.kind = WaitKind::sleep;
            return;
        }
        std::vector<std::uint64_t> bits((count + 63) / 64), all(bits.size(), 0);
        for (int set = 1; set <= 3; ++set)
            if (raw.args[set] != 0 && memory_->read(raw.args[set], bits.data(), bits.size() * 8))
                for (std::size_t w = 0; w < bits.size(); ++w)
                    all[w] |= bits[w];
        for (std::uint64_t fd = 0; fd < count; ++fd)
            if ((all[fd / 64] >> (fd % 64)) & 1) fds.push_back(static_cast<int>(fd));
    }
    std::sort(fds.begin(), fds.end());
    fds.erase(std::unique(fds.begin(), fds.end()), fds.end());
    if (fds.size() == 1) {
        // One descriptor (a socket with a timeout is polled alone): a wait on that one.
        const Descriptor& only = descriptor(fds[0], {}, pass_ns);
        out.kind = only.kind;
        out.target = only.target;
        out.detail = fmt::format("fd {}{}{}", fds[0], only.detail.empty() ? "" : ", ", only.detail);
        return;
    }
    out.kind = WaitKind::poll;
    out.target = fds.empty() ? std::string() : set_of(fds, pass_ns);
}

void WaitResolver::describe_outside_syscall(const RawWait& raw, pid_t tid, WaitDescription& out) {
    if (raw.state == 'D') {
        out.kind = WaitKind::io;
    } else if (raw.state == 'T' || raw.state == 't') {
        out.kind = WaitKind::stopped;
    } else {
        out.kind = WaitKind::kernel;
        // Read now, not at the sample: the one case where the resolver looks at the thread
        // itself, and a rare one (a page fault that sleeps).
        auto wchan = process::read_small_file(fmt::format("/proc/{}/task/{}/wchan", pid_, tid));
        if (wchan && !wchan->empty() && *wchan != "0") out.target = *wchan;
    }
}

void WaitResolver::describe_path_wait(const RawWait& raw, WaitDescription& out) {
    // An open that blocks: a FIFO with no writer yet (or a slow file system).
    out.kind = WaitKind::file;
    const bool first = process::syscall_args(raw.nr) == process::SyscallArgs::path0;
    auto path = path_at(raw.args[first ? 0 : 1]);
    if (!path) return;
    std::string full = (*path)[0] == '/' ? process::path_in_target(pid_, *path)
                                         : fmt::format("/proc/{}/cwd/{}", pid_, *path);
    struct stat st {};
    bool fifo = ::stat(full.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
    out.kind = fifo ? WaitKind::pipe : WaitKind::file;
    out.target = fmt::format("{} {}", fifo ? "fifo" : "file", *path);
}

WaitDescription WaitResolver::describe(const RawWait& raw, pid_t tid, python::Address interp,
                                       std::span<const model::FrameId> stack,
                                       const model::FrameTable& frames, std::uint64_t pass_ns) {
    WaitDescription out;
    const bool stopped = raw.state == 'T' || raw.state == 't';
    switch (raw.read) {
    case WaitRead::none:
    case WaitRead::previous:
        return out;
    case WaitRead::cpu_starved:
        out.kind = WaitKind::cpu_starved;
        return out;
    case WaitRead::user:
        describe_outside_syscall(raw, tid, out);
        return out;
    case WaitRead::syscall:
        break;
    }
    std::string_view name = process::syscall_name(raw.nr);
    out.syscall = name.empty() ? fmt::format("syscall_{}", raw.nr) : std::string(name);
    if (stopped) {
        out.kind = WaitKind::stopped;
        return out;
    }
    switch (process::syscall_args(raw.nr)) {
    case process::SyscallArgs::fd: {
        const auto fd = static_cast<std::int64_t>(raw.args[0]);
        const Descriptor& what = raw.fd.inode != 0 ? descriptor(fd, raw.fd, pass_ns)
                                                   : descriptor(fd, process::FdIdentity{}, pass_ns);
        out.kind = what.kind;
        out.target = what.target;
        out.detail = fmt::format("fd {}{}{}", fd, what.detail.empty() ? "" : ", ", what.detail);
        constexpr std::uint64_t kSetLockWait = 7, kOfdSetLockWait = 38; // F_SETLKW, F_OFD_SETLKW
        if (name == "flock" ||
            (name == "fcntl" && (raw.args[1] == kSetLockWait || raw.args[1] == kOfdSetLockWait)))
            out.kind = WaitKind::file_lock;
        else if (raw.state == 'D' && what.regular)
            out.kind = WaitKind::io;
        break;
    }
    case process::SyscallArgs::futex:
        describe_futex(raw, interp, stack, frames, out);
        break;
    case process::SyscallArgs::poll:
    case process::SyscallArgs::select:
    case process::SyscallArgs::epoll:
        describe_poll(raw, stack, frames, pass_ns, out);
        break;
    case process::SyscallArgs::sleep:
        out.kind = WaitKind::sleep;
        break;
    case process::SyscallArgs::child: {
        out.kind = WaitKind::child;
        // wait4(pid, ...): -1 any child; waitid(idtype, id, ...): P_ALL 0, P_PID 1.
        auto first = static_cast<std::int64_t>(raw.args[0]);
        bool waitid = name == "waitid";
        if (waitid ? first == 1 : first > 0)
            out.target = fmt::format("pid {}", waitid ? raw.args[1] : raw.args[0]);
        else
            out.target = "any child";
        break;
    }
    case process::SyscallArgs::path0:
    case process::SyscallArgs::path1:
        describe_path_wait(raw, out);
        break;
    case process::SyscallArgs::none:
        out.kind = raw.state == 'D' ? WaitKind::io : WaitKind::syscall;
        break;
    }
    return out;
}

model::WaitId intern_wait(model::FrameTable& frames, const WaitDescription& wait,
                          model::WaitDetail detail) {
    if (!wait.known() || detail == model::WaitDetail::off) return {};
    model::Wait interned{wait.kind, {}, {}};
    if (detail == model::WaitDetail::full) {
        if (!wait.syscall.empty()) interned.syscall = frames.strings().intern(wait.syscall);
        if (!wait.target.empty()) interned.target = frames.strings().intern(wait.target);
    }
    return frames.waits().intern(interned);
}

} // namespace spyglass::sampling
