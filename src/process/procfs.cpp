#include "spyglass/process/procfs.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <csignal>
#include <cstring>

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include "spyglass/process/checked.hpp"
#include "spyglass/process/open_limit.hpp"

namespace spyglass::process {

namespace {

// The soft limit of open descriptors, read once (after raise_open_limit).
long cached_open_limit() noexcept {
    static const long limit = static_cast<long>(open_limit());
    return limit;
}

std::string proc_path(pid_t pid, std::string_view rest) {
    std::string path = "/proc/" + std::to_string(pid);
    path += rest;
    return path;
}

template <class T>
bool parse_number(std::string_view text, T& out, int base = 10) {
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out, base);
    return ec == std::errc() && end == text.data() + text.size();
}

std::string_view next_field(std::string_view& text) {
    std::size_t begin = text.find_first_not_of(' ');
    if (begin == std::string_view::npos) {
        text = {};
        return {};
    }
    std::size_t end = text.find(' ', begin);
    std::string_view field = text.substr(begin, end == std::string_view::npos ? end : end - begin);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end);
    return field;
}

Error errno_error(int err, pid_t pid, std::string_view what) {
    if (err == ENOENT || err == ESRCH)
        return Error{Errc::process_gone, fmt::format("process {} does not exist", pid)};
    if (err == EACCES || err == EPERM)
        return Error{Errc::permission_denied, fmt::format("cannot read {} of process {}: {}", what,
                                                          pid, std::strerror(err))};
    return Error{Errc::io,
                 fmt::format("cannot read {} of process {}: {}", what, pid, std::strerror(err))};
}

} // namespace

std::optional<std::string> read_small_file(const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::nullopt;
    std::string out;
    char buffer[4096];
    for (;;) {
        ssize_t got = ::read(fd, buffer, sizeof buffer);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        out.append(buffer, static_cast<std::size_t>(got));
    }
    ::close(fd);
    return out;
}

std::vector<MapEntry> parse_maps(std::string_view text) {
    std::vector<MapEntry> maps;
    while (!text.empty()) {
        std::size_t eol = text.find('\n');
        std::string_view line = text.substr(0, eol);
        text = eol == std::string_view::npos ? std::string_view{} : text.substr(eol + 1);

        std::string_view rest = line;
        std::string_view range = next_field(rest);
        std::string_view perms = next_field(rest);
        std::string_view offset = next_field(rest);
        std::string_view device = next_field(rest);
        std::string_view inode = next_field(rest);
        std::size_t dash = range.find('-');
        MapEntry entry;
        if (dash == std::string_view::npos || perms.size() < 4 || device.empty() ||
            !parse_number(range.substr(0, dash), entry.start, 16) ||
            !parse_number(range.substr(dash + 1), entry.end, 16) ||
            !parse_number(offset, entry.offset, 16) || !parse_number(inode, entry.inode) ||
            entry.start >= entry.end)
            continue;
        entry.readable = perms[0] == 'r';
        entry.writable = perms[1] == 'w';
        entry.executable = perms[2] == 'x';
        std::size_t path_begin = rest.find_first_not_of(' ');
        if (path_begin != std::string_view::npos) entry.path = std::string(rest.substr(path_begin));
        maps.push_back(std::move(entry));
    }
    return maps;
}

Result<std::vector<MapEntry>> read_maps(pid_t pid) {
    errno = 0;
    auto text = read_small_file(proc_path(pid, "/maps"));
    if (!text) return std::unexpected(errno_error(errno, pid, "the memory map"));
    if (text->empty() && !process_exists(pid))
        return fail(Errc::process_gone, "process {} exited", pid);
    return parse_maps(*text);
}

AddressSpace::AddressSpace(const std::vector<MapEntry>& maps) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> readable;
    for (const MapEntry& entry : maps)
        if (entry.readable && entry.start < entry.end)
            readable.emplace_back(entry.start, entry.end);
    std::sort(readable.begin(), readable.end());
    for (const auto& range : readable) {
        if (!ranges_.empty() && range.first <= ranges_.back().second)
            ranges_.back().second = std::max(ranges_.back().second, range.second);
        else
            ranges_.push_back(range);
    }
}

bool AddressSpace::readable(std::uint64_t address, std::uint64_t length) const noexcept {
    auto it = std::upper_bound(ranges_.begin(), ranges_.end(), address,
                               [](std::uint64_t a, const auto& range) { return a < range.first; });
    if (it == ranges_.begin()) return false;
    --it;
    return range_within(address, length, it->first, it->second - it->first);
}

std::optional<TaskStat> parse_stat(std::string_view text) {
    std::size_t open = text.find('(');
    std::size_t close = text.rfind(')');
    if (open == std::string_view::npos || close == std::string_view::npos || close < open)
        return std::nullopt;
    TaskStat stat;
    stat.comm = std::string(text.substr(open + 1, close - open - 1));
    std::string_view rest = text.substr(close + 1);
    // Fields after the name, counted from 3 as in proc(5).
    std::string_view fields[20];
    for (auto& field : fields)
        field = next_field(rest);
    if (fields[0].size() != 1) return std::nullopt;
    stat.state = fields[0][0];
    // field 4 ppid, 14 utime, 15 stime, 22 starttime -> indexes 1, 11, 12, 19
    if (!parse_number(fields[1], stat.ppid) || !parse_number(fields[11], stat.utime_ticks) ||
        !parse_number(fields[12], stat.stime_ticks) || !parse_number(fields[19], stat.start_ticks))
        return std::nullopt;
    return stat;
}

Result<TaskStat> read_stat(pid_t pid) {
    errno = 0;
    auto text = read_small_file(proc_path(pid, "/stat"));
    if (!text) return std::unexpected(errno_error(errno, pid, "the status"));
    auto stat = parse_stat(*text);
    if (!stat) return fail(Errc::corrupt, "cannot parse /proc/{}/stat", pid);
    return *stat;
}

Result<TaskStat> read_task_stat(pid_t pid, pid_t tid) {
    errno = 0;
    auto text = read_small_file(proc_path(pid, "/task/" + std::to_string(tid) + "/stat"));
    if (!text) return std::unexpected(errno_error(errno, pid, "a thread status"));
    auto stat = parse_stat(*text);
    if (!stat) return fail(Errc::corrupt, "cannot parse /proc/{}/task/{}/stat", pid, tid);
    return *stat;
}

Result<std::vector<pid_t>> list_tasks(pid_t pid) {
    std::string path = proc_path(pid, "/task");
    DIR* dir = ::opendir(path.c_str());
    if (dir == nullptr) return std::unexpected(errno_error(errno, pid, "the thread list"));
    std::vector<pid_t> tids;
    while (dirent* entry = ::readdir(dir)) {
        pid_t tid = 0;
        if (parse_number(std::string_view(entry->d_name), tid)) tids.push_back(tid);
    }
    ::closedir(dir);
    std::sort(tids.begin(), tids.end());
    return tids;
}

std::optional<std::string> task_comm(pid_t pid, pid_t tid) {
    auto text = read_small_file(proc_path(pid, "/task/" + std::to_string(tid) + "/comm"));
    if (!text) return std::nullopt;
    while (!text->empty() && text->back() == '\n')
        text->pop_back();
    return text;
}

Result<std::string> exe_path(pid_t pid) {
    std::string link = proc_path(pid, "/exe");
    char buffer[4096];
    ssize_t n = ::readlink(link.c_str(), buffer, sizeof buffer - 1);
    if (n < 0) return std::unexpected(errno_error(errno, pid, "the executable path"));
    std::string path(buffer, static_cast<std::size_t>(n));
    constexpr std::string_view deleted = " (deleted)";
    if (path.ends_with(deleted)) path.resize(path.size() - deleted.size());
    return path;
}

std::vector<std::string> cmdline(pid_t pid) {
    std::vector<std::string> args;
    auto text = read_small_file(proc_path(pid, "/cmdline"));
    if (!text) return args;
    std::string_view rest = *text;
    while (!rest.empty()) {
        std::size_t nul = rest.find('\0');
        args.emplace_back(rest.substr(0, nul));
        if (nul == std::string_view::npos) break;
        rest = rest.substr(nul + 1);
    }
    return args;
}

bool process_exists(pid_t pid) noexcept {
    if (pid <= 0) return false;
    if (::kill(pid, 0) == 0) return true;
    return errno == EPERM;
}

std::vector<pid_t> list_children(pid_t parent) {
    std::vector<pid_t> children;
    DIR* dir = ::opendir("/proc");
    if (dir == nullptr) return children;
    while (dirent* entry = ::readdir(dir)) {
        pid_t pid = 0;
        if (!parse_number(std::string_view(entry->d_name), pid)) continue;
        auto text = read_small_file("/proc/" + std::string(entry->d_name) + "/stat");
        if (!text) continue;
        auto stat = parse_stat(*text);
        if (stat && stat->ppid == parent) children.push_back(pid);
    }
    ::closedir(dir);
    std::sort(children.begin(), children.end());
    return children;
}

pid_t parse_namespaced_pid(std::string_view status, pid_t fallback) {
    constexpr std::string_view kKey = "\nNSpid:";
    std::size_t at = status.find(kKey);
    if (at == std::string_view::npos) return fallback;
    std::string line(status.substr(at + kKey.size()));
    line.resize(std::min(line.size(), line.find('\n')));
    std::replace(line.begin(), line.end(), '\t', ' ');
    std::string_view rest = line;
    pid_t last = fallback;
    for (std::string_view field = next_field(rest); !field.empty(); field = next_field(rest)) {
        pid_t value = 0;
        if (!parse_number(field, value) || value <= 0) return fallback;
        last = value;
    }
    return last;
}

pid_t namespaced_pid(pid_t pid) {
    auto text = read_small_file(proc_path(pid, "/status"));
    if (!text) return pid;
    return parse_namespaced_pid(*text, pid);
}

std::string path_in_target(pid_t pid, std::string_view path) {
    std::string result = proc_path(pid, "/root");
    result += path;
    return result;
}

TaskStatReader::TaskStatReader(pid_t pid, pid_t tid) noexcept : pid_(pid), tid_(tid) {
    open_files();
}

namespace {
// Opens a file of a thread unless that would leave fewer descriptors than a few dozen: the
// files of the target's modules (--native), of its descriptors, of a new process, must still
// open when there are more threads than descriptors.
int open_thread_file(const std::string& path) noexcept {
    const long reserved = std::min(64L, cached_open_limit() / 4);
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd >= 0 && fd >= cached_open_limit() - reserved) {
        ::close(fd);
        errno = EMFILE;
        return -1;
    }
    return fd;
}
} // namespace

void TaskStatReader::open_files() noexcept {
    std::string base = proc_path(pid_, "/task/" + std::to_string(tid_));
    if (stat_fd_ < 0) stat_fd_ = open_thread_file(base + "/stat");
    if (stat_fd_ >= 0 && schedstat_fd_ < 0) schedstat_fd_ = open_thread_file(base + "/schedstat");
    out_of_descriptors_ = (stat_fd_ < 0 || schedstat_fd_ < 0) && process::out_of_descriptors(errno);
}

bool TaskStatReader::reopen() noexcept {
    open_files();
    return !out_of_descriptors_;
}

TaskStatReader::~TaskStatReader() {
    close_all();
}

TaskStatReader::TaskStatReader(TaskStatReader&& other) noexcept
    : pid_(other.pid_), tid_(other.tid_), stat_fd_(other.stat_fd_),
      schedstat_fd_(other.schedstat_fd_), syscall_fd_(other.syscall_fd_),
      out_of_descriptors_(other.out_of_descriptors_) {
    other.stat_fd_ = other.schedstat_fd_ = other.syscall_fd_ = -1;
}

TaskStatReader& TaskStatReader::operator=(TaskStatReader&& other) noexcept {
    if (this != &other) {
        close_all();
        pid_ = other.pid_;
        tid_ = other.tid_;
        stat_fd_ = std::exchange(other.stat_fd_, -1);
        schedstat_fd_ = std::exchange(other.schedstat_fd_, -1);
        syscall_fd_ = std::exchange(other.syscall_fd_, -1);
        out_of_descriptors_ = other.out_of_descriptors_;
    }
    return *this;
}

void TaskStatReader::close_all() noexcept {
    if (stat_fd_ >= 0) ::close(stat_fd_);
    if (schedstat_fd_ >= 0) ::close(schedstat_fd_);
    if (syscall_fd_ >= 0) ::close(syscall_fd_);
    stat_fd_ = schedstat_fd_ = syscall_fd_ = -1;
}

namespace {

// "run_ns delay_ns slices"
void parse_schedstat(const char* at, const char* end, std::uint64_t& run_ns,
                     std::uint64_t& delay_ns, std::uint64_t& slices) noexcept {
    at = std::from_chars(at, end, run_ns).ptr;
    if (at < end && *at == ' ') at = std::from_chars(at + 1, end, delay_ns).ptr;
    if (at < end && *at == ' ') std::from_chars(at + 1, end, slices);
}

} // namespace

std::expected<TaskStatReader::Reading, Errc> TaskStatReader::read_schedstat() noexcept {
    if (out_of_descriptors_ && !reopen()) return std::unexpected(Errc::io);
    if (schedstat_fd_ < 0) return std::unexpected(Errc::process_gone);
    char buffer[128];
    ssize_t n = ::pread(schedstat_fd_, buffer, sizeof buffer - 1, 0);
    if (n <= 0) return std::unexpected(Errc::process_gone);
    Reading reading;
    parse_schedstat(buffer, buffer + n, reading.run_ns, reading.delay_ns, reading.slices);
    return reading;
}

std::expected<TaskStatReader::RunMark, Errc> TaskStatReader::read_run_mark() noexcept {
    auto reading = read_schedstat();
    if (!reading) return std::unexpected(reading.error());
    return RunMark{reading->run_ns, reading->slices};
}

namespace {
// The "processor" field (the 39th) of a stat line, given from its third field (the state) on;
// -1 if the line is cut short or the field is not a number.
int stat_processor(std::string_view fields) noexcept {
    std::string_view field;
    for (int number = 3; number <= 39; ++number)
        field = next_field(fields);
    int cpu = -1;
    return parse_number(field, cpu) ? cpu : -1;
}
} // namespace

std::expected<TaskStatReader::Reading, Errc> TaskStatReader::read() noexcept {
    if (out_of_descriptors_ && !reopen()) return std::unexpected(Errc::io);
    if (stat_fd_ < 0) return std::unexpected(Errc::process_gone);
    Reading reading;
    char buffer[512];
    ssize_t n = ::pread(stat_fd_, buffer, sizeof buffer - 1, 0);
    if (n <= 0) return std::unexpected(Errc::process_gone);
    std::string_view text(buffer, static_cast<std::size_t>(n));
    std::size_t close = text.rfind(')');
    if (close == std::string_view::npos || close + 2 >= text.size())
        return std::unexpected(Errc::corrupt);
    reading.state = text[close + 2];
    reading.cpu = stat_processor(text.substr(close + 2));
    if (schedstat_fd_ >= 0) {
        n = ::pread(schedstat_fd_, buffer, sizeof buffer - 1, 0);
        if (n > 0) {
            parse_schedstat(buffer, buffer + n, reading.run_ns, reading.delay_ns, reading.slices);
        }
    }
    return reading;
}

std::expected<SyscallState, Errc> TaskStatReader::read_syscall() noexcept {
    char buffer[256];
    ssize_t n = -1;
    int fd = syscall_fd_;
    bool kept = fd >= 0;
    if (!kept) {
        char path[64] = "/proc/";
        char* at = std::to_chars(path + 6, path + 20, pid_).ptr;
        std::memcpy(at, "/task/", 6);
        at = std::to_chars(at + 6, at + 20, tid_).ptr;
        std::memcpy(at, "/syscall", 9);
        fd = ::open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            if (errno == EACCES || errno == EPERM) return std::unexpected(Errc::permission_denied);
            if (errno == ENOENT || errno == ESRCH) return std::unexpected(Errc::process_gone);
            return std::unexpected(Errc::io); // out of descriptors (or another failure)
        }
        // Kept while descriptors are plentiful; past half the limit each read opens its own.
        kept = fd < cached_open_limit() / 2;
        if (kept) syscall_fd_ = fd;
    }
    n = ::pread(fd, buffer, sizeof buffer - 1, 0);
    int error = errno;
    if (!kept) ::close(fd);
    if (n < 0 && (error == EACCES || error == EPERM))
        return std::unexpected(Errc::permission_denied);
    if (n <= 0) return std::unexpected(Errc::process_gone);
    auto state = parse_syscall(std::string_view(buffer, static_cast<std::size_t>(n)));
    if (!state) return std::unexpected(Errc::corrupt);
    return *state;
}

} // namespace spyglass::process
