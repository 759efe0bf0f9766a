#include "spyglass/process/target_check.hpp"

#include <charconv>
#include <string>

#include "spyglass/process/procfs.hpp"

namespace spyglass::process {

namespace {

template <class T>
std::optional<T> number(std::string_view text) {
    T value{};
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
}

std::string comm_of(pid_t pid) {
    auto stat = read_stat(pid);
    return stat ? stat->comm : std::string("?");
}

} // namespace

std::optional<std::uint64_t> parse_stat_flags(std::string_view stat) {
    std::size_t close = stat.rfind(')');
    if (close == std::string_view::npos) return std::nullopt;
    std::string_view rest = stat.substr(close + 1);
    // After the name: state(3) ppid(4) pgrp(5) session(6) tty_nr(7) tpgid(8) flags(9).
    for (int field = 3; field <= 9; ++field) {
        std::size_t begin = rest.find_first_not_of(' ');
        if (begin == std::string_view::npos) return std::nullopt;
        rest.remove_prefix(begin);
        std::size_t end = rest.find_first_of(" \n");
        std::string_view value = rest.substr(0, end);
        if (field == 9) return number<std::uint64_t>(value);
        if (end == std::string_view::npos) return std::nullopt;
        rest.remove_prefix(end);
    }
    return std::nullopt;
}

std::optional<pid_t> parse_tgid(std::string_view status) {
    constexpr std::string_view kKey = "Tgid:";
    std::size_t at = status.starts_with(kKey) ? 0 : status.find("\nTgid:");
    if (at == std::string_view::npos) return std::nullopt;
    std::string_view rest = status.substr(at + (at == 0 ? 0 : 1) + kKey.size());
    rest.remove_prefix(std::min(rest.size(), rest.find_first_not_of(" \t")));
    return number<pid_t>(rest.substr(0, rest.find('\n')));
}

Result<TargetCheck> check_target_pid(pid_t pid) {
    std::string base = "/proc/" + std::to_string(pid);
    auto stat_text = read_small_file(base + "/stat");
    if (!stat_text || stat_text->empty()) {
        // Hidden from us (hidepid) but there: attaching will say what is refused.
        if (process_exists(pid)) return TargetCheck{};
        return fail(Errc::process_gone, "no process with PID {}", pid);
    }
    auto stat = parse_stat(*stat_text);
    if (!stat) return fail(Errc::corrupt, "cannot parse {}/stat", base);
    auto flags = parse_stat_flags(*stat_text);
    if (flags && (*flags & kKernelThreadFlag) != 0)
        return fail(Errc::not_python, "process {} ({}) is a kernel thread, not a Python process",
                    pid, stat->comm);
    if (auto status = read_small_file(base + "/status")) {
        if (auto tgid = parse_tgid(*status); tgid && *tgid != pid)
            return fail(Errc::invalid_argument, "{} is a thread of process {} ({}); use --pid {}",
                        pid, *tgid, comm_of(*tgid), *tgid);
    }
    if (stat->state == 'Z' || stat->state == 'X')
        return fail(Errc::process_gone,
                    "process {} has exited (a zombie: its parent, process {}, has not reaped it "
                    "yet); there is nothing left to sample",
                    pid, stat->ppid);
    return TargetCheck{stat->state};
}

} // namespace spyglass::process
