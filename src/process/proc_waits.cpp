#include "spyglass/process/proc_waits.hpp"

#include <charconv>
#include <cstring>
#include <span>

#include <arpa/inet.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spyglass/process/procfs.hpp"

namespace spyglass::process {

namespace {

#include "syscall_table.inc"

constexpr std::int64_t kSyscallCount = static_cast<std::int64_t>(std::size(kSyscallNames));

// Which argument says what a call waits on. Knowledge of the calls, not of their numbers: the
// numbers come from the generated table.
constexpr std::string_view kFdCalls[] = {
    "read",    "write",     "readv",     "writev",     "pread64",  "pwrite64",        "preadv",
    "pwritev", "preadv2",   "pwritev2",  "recvfrom",   "recvmsg",  "recvmmsg",        "sendto",
    "sendmsg", "sendmmsg",  "accept",    "accept4",    "connect",  "shutdown",        "flock",
    "fcntl",   "fsync",     "fdatasync", "ioctl",      "sendfile", "sync_file_range", "splice",
    "tee",     "fallocate", "ftruncate", "getdents64", "close"};
constexpr std::string_view kFutexCalls[] = {"futex"};
constexpr std::string_view kPollCalls[] = {"poll", "ppoll"};
constexpr std::string_view kSelectCalls[] = {"select", "pselect6"};
constexpr std::string_view kEpollCalls[] = {"epoll_wait", "epoll_pwait", "epoll_pwait2"};
constexpr std::string_view kSleepCalls[] = {"nanosleep", "clock_nanosleep"};
constexpr std::string_view kChildCalls[] = {"wait4", "waitid"};
constexpr std::string_view kPath0Calls[] = {"open", "creat"};
constexpr std::string_view kPath1Calls[] = {"openat", "openat2"};

struct Group {
    SyscallArgs args;
    std::span<const std::string_view> names;
};
constexpr Group kGroups[] = {
    {SyscallArgs::fd, kFdCalls},       {SyscallArgs::futex, kFutexCalls},
    {SyscallArgs::poll, kPollCalls},   {SyscallArgs::select, kSelectCalls},
    {SyscallArgs::epoll, kEpollCalls}, {SyscallArgs::sleep, kSleepCalls},
    {SyscallArgs::child, kChildCalls}, {SyscallArgs::path0, kPath0Calls},
    {SyscallArgs::path1, kPath1Calls},
};

constexpr auto kArgsByNumber = [] {
    std::array<SyscallArgs, std::size(kSyscallNames)> table{};
    for (std::size_t nr = 0; nr < table.size(); ++nr)
        for (const Group& group : kGroups)
            for (std::string_view name : group.names)
                if (kSyscallNames[nr] == name) table[nr] = group.args;
    return table;
}();

// A name missing from the generated table would silently classify nothing.
constexpr bool every_name_known() {
    for (const Group& group : kGroups)
        for (std::string_view wanted : group.names) {
            bool found = false;
            for (std::string_view name : kSyscallNames)
                found = found || name == wanted;
            if (!found) return false;
        }
    return true;
}
static_assert(every_name_known(), "a call named here is not in syscall_table.inc");

std::string_view next_token(std::string_view& text) noexcept {
    std::size_t begin = text.find_first_not_of(" \t\n");
    if (begin == std::string_view::npos) {
        text = {};
        return {};
    }
    std::size_t end = text.find_first_of(" \t\n", begin);
    std::string_view token = text.substr(begin, end == std::string_view::npos ? end : end - begin);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end);
    return token;
}

template <class T>
bool number(std::string_view text, T& out, int base = 10) noexcept {
    if (base == 16 && text.starts_with("0x")) text.remove_prefix(2);
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out, base);
    return ec == std::errc() && end == text.data() + text.size() && !text.empty();
}

// "0100007F:1538" (IPv4) or 32 hex digits ":port" (IPv6), as the kernel prints them: each
// 32-bit word of the address in host (little-endian) order.
bool format_address(std::string_view text, bool ipv6, std::string& out) {
    std::size_t colon = text.find(':');
    if (colon == std::string_view::npos) return false;
    std::string_view hex = text.substr(0, colon);
    unsigned port = 0;
    if (!number(text.substr(colon + 1), port, 16) || port > 0xffff) return false;
    if (hex.size() != (ipv6 ? 32u : 8u)) return false;
    unsigned char bytes[16];
    for (std::size_t word = 0; word < hex.size() / 8; ++word) {
        std::uint32_t value = 0;
        if (!number(hex.substr(word * 8, 8), value, 16)) return false;
        std::memcpy(bytes + 4 * word, &value, 4); // x86-64: the word as it was in memory
    }
    char buffer[INET6_ADDRSTRLEN];
    static constexpr unsigned char kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    if (ipv6 && std::memcmp(bytes, kMapped, 12) == 0) {
        // A dual-stack socket talking IPv4: shown as the IPv4 peer it is.
        if (inet_ntop(AF_INET, bytes + 12, buffer, sizeof buffer) == nullptr) return false;
        ipv6 = false;
    } else if (inet_ntop(ipv6 ? AF_INET6 : AF_INET, bytes, buffer, sizeof buffer) == nullptr) {
        return false;
    }
    out = ipv6 ? "[" + std::string(buffer) + "]" : std::string(buffer);
    out += ':';
    out += std::to_string(port);
    return true;
}

bool unspecified(std::string_view hex_address) {
    std::size_t colon = hex_address.find(':');
    return hex_address.substr(0, colon).find_first_not_of('0') == std::string_view::npos;
}

} // namespace

std::string_view syscall_name(std::int64_t nr) noexcept {
    if (nr < 0 || nr >= kSyscallCount) return {};
    return kSyscallNames[static_cast<std::size_t>(nr)];
}

std::optional<std::int64_t> syscall_number(std::string_view name) noexcept {
    for (std::int64_t nr = 0; nr < kSyscallCount; ++nr)
        if (!name.empty() && kSyscallNames[static_cast<std::size_t>(nr)] == name) return nr;
    return std::nullopt;
}

SyscallArgs syscall_args(std::int64_t nr) noexcept {
    if (nr < 0 || nr >= kSyscallCount) return SyscallArgs::none;
    return kArgsByNumber[static_cast<std::size_t>(nr)];
}

std::optional<SyscallState> parse_syscall(std::string_view text) noexcept {
    SyscallState state;
    std::string_view first = next_token(text);
    if (first == "running") return state;
    if (!number(first, state.nr)) return std::nullopt;
    if (state.nr == -1) {
        state.where = SyscallState::Where::user;
        return state;
    }
    if (state.nr < 0) return std::nullopt;
    state.where = SyscallState::Where::syscall;
    // Six arguments, then the stack and instruction pointers.
    for (std::uint64_t& arg : state.args)
        if (!number(next_token(text), arg, 16)) return std::nullopt;
    return state;
}

FdLink parse_fd_link(std::string_view link) noexcept {
    FdLink out;
    auto bracketed = [&](std::string_view prefix, FdType type) {
        if (!link.starts_with(prefix) || !link.ends_with("]")) return false;
        std::string_view inside = link.substr(prefix.size(), link.size() - prefix.size() - 1);
        if (!number(inside, out.inode)) return false;
        out.type = type;
        return true;
    };
    if (bracketed("socket:[", FdType::socket) || bracketed("pipe:[", FdType::pipe)) return out;
    if (link.starts_with("anon_inode:")) {
        out.type = FdType::anon;
        out.name = link.substr(11);
        if (out.name.size() >= 2 && out.name.front() == '[' && out.name.back() == ']')
            out.name = out.name.substr(1, out.name.size() - 2);
        return out;
    }
    if (link.starts_with("/")) {
        out.type = FdType::path;
        out.name = link;
        return out;
    }
    out.name = link;
    return out;
}

FdDirectory::~FdDirectory() {
    if (dir_fd_ >= 0) ::close(dir_fd_);
}

std::optional<FdIdentity> FdDirectory::identify(std::int64_t fd) noexcept {
    if (fd < 0 || fd > 0x7fffffff) return std::nullopt;
    if (!tried_) {
        tried_ = true;
        char path[40] = "/proc/";
        char* end = std::to_chars(path + 6, path + 24, pid_).ptr;
        std::memcpy(end, "/fd", 4);
        dir_fd_ = ::open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }
    if (dir_fd_ < 0) return std::nullopt;
    char name[24];
    *std::to_chars(name, name + sizeof name - 1, fd).ptr = '\0';
    struct stat st {};
    if (::fstatat(dir_fd_, name, &st, 0) != 0) return std::nullopt;
    return FdIdentity{static_cast<std::uint64_t>(st.st_ino), static_cast<std::uint64_t>(st.st_dev),
                      static_cast<std::uint32_t>(st.st_mode)};
}

const char* socket_protocol_name(SocketProtocol protocol) noexcept {
    switch (protocol) {
    case SocketProtocol::tcp:
        return "tcp";
    case SocketProtocol::udp:
        return "udp";
    case SocketProtocol::unix_:
        return "unix";
    }
    return "?";
}

const char* tcp_state_name(int state) noexcept {
    static constexpr const char* kNames[] = {"",           "ESTAB",      "SYN-SENT",  "SYN-RECV",
                                             "FIN-WAIT-1", "FIN-WAIT-2", "TIME-WAIT", "CLOSE",
                                             "CLOSE-WAIT", "LAST-ACK",   "LISTEN",    "CLOSING"};
    return state >= 0 && state < static_cast<int>(std::size(kNames)) ? kNames[state] : "?";
}

void parse_net_inet(std::string_view text, SocketProtocol protocol, bool ipv6, SocketTable& out) {
    constexpr int kTcpListen = 10;
    while (!text.empty()) {
        std::size_t eol = text.find('\n');
        std::string_view line = text.substr(0, eol);
        text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
        std::string_view fields[10];
        for (std::string_view& field : fields)
            field = next_token(line);
        // sl local remote st tx:rx tr:tm retrnsmt uid timeout inode
        if (!fields[0].ends_with(":")) continue; // the header
        std::uint64_t inode = 0;
        int state = 0;
        if (!number(fields[9], inode) || inode == 0 || !number(fields[3], state, 16)) continue;
        SocketInfo info;
        info.protocol = protocol;
        info.state = state;
        if (!format_address(fields[1], ipv6, info.local)) continue;
        if (!unspecified(fields[2]) && !format_address(fields[2], ipv6, info.remote)) continue;
        info.listening = protocol == SocketProtocol::tcp && state == kTcpListen;
        out.insert_or_assign(inode, std::move(info));
    }
}

void parse_net_unix(std::string_view text, SocketTable& out) {
    constexpr std::uint32_t kAcceptConnections = 0x10000; // __SO_ACCEPTCON
    while (!text.empty()) {
        std::size_t eol = text.find('\n');
        std::string_view line = text.substr(0, eol);
        text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);
        // Num RefCount Protocol Flags Type St Inode [Path]
        std::string_view fields[7];
        for (std::string_view& field : fields)
            field = next_token(line);
        if (!fields[0].ends_with(":")) continue; // the header
        std::uint32_t flags = 0;
        int state = 0;
        std::uint64_t inode = 0;
        if (!number(fields[3], flags, 16) || !number(fields[5], state, 16) ||
            !number(fields[6], inode) || inode == 0)
            continue;
        SocketInfo info;
        info.protocol = SocketProtocol::unix_;
        info.state = state;
        info.listening = (flags & kAcceptConnections) != 0;
        std::size_t path = line.find_first_not_of(" \t");
        if (path != std::string_view::npos) info.local = std::string(line.substr(path));
        out.insert_or_assign(inode, std::move(info));
    }
}

SocketTable read_sockets(pid_t pid) {
    SocketTable table;
    const std::string base = "/proc/" + std::to_string(pid) + "/net/";
    struct File {
        const char* name;
        SocketProtocol protocol;
        bool ipv6;
    };
    for (const File& file :
         {File{"tcp", SocketProtocol::tcp, false}, File{"tcp6", SocketProtocol::tcp, true},
          File{"udp", SocketProtocol::udp, false}, File{"udp6", SocketProtocol::udp, true}})
        if (auto text = read_small_file(base + file.name))
            parse_net_inet(*text, file.protocol, file.ipv6, table);
    if (auto text = read_small_file(base + "unix")) parse_net_unix(*text, table);
    return table;
}

std::vector<int> parse_epoll_fdinfo(std::string_view text) {
    std::vector<int> fds;
    for (std::size_t at = text.find("tfd:"); at != std::string_view::npos;
         at = text.find("tfd:", at + 4)) {
        std::string_view rest = text.substr(at + 4);
        int fd = -1;
        if (number(next_token(rest), fd) && fd >= 0) fds.push_back(fd);
    }
    return fds;
}

} // namespace spyglass::process
