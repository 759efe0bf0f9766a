#include "spyglass/process/task_syscall.hpp"

#include <charconv>
#include <string>
#include <utility>

#include <fcntl.h>
#include <unistd.h>

namespace spyglass::process {

namespace {

std::string_view next_word(std::string_view& text) {
    std::size_t begin = text.find_first_not_of(" \n");
    if (begin == std::string_view::npos) return text = {};
    std::size_t end = text.find_first_of(" \n", begin);
    std::string_view word = text.substr(begin, end == std::string_view::npos ? end : end - begin);
    text = end == std::string_view::npos ? std::string_view{} : text.substr(end);
    return word;
}

bool number(std::string_view word, std::uint64_t& out) {
    int base = 10;
    if (word.starts_with("0x")) {
        word.remove_prefix(2);
        base = 16;
    }
    auto [end, ec] = std::from_chars(word.data(), word.data() + word.size(), out, base);
    return ec == std::errc() && end == word.data() + word.size();
}

} // namespace

std::optional<TaskSyscall> parse_task_syscall(std::string_view text) {
    TaskSyscall out;
    std::string_view first = next_word(text);
    if (first == "running") {
        out.running = true;
        return out;
    }
    std::int64_t nr = 0;
    auto [end, ec] = std::from_chars(first.data(), first.data() + first.size(), nr);
    if (ec != std::errc() || end != first.data() + first.size()) return std::nullopt;
    out.number = nr;
    std::uint64_t words[8];
    std::size_t count = 0;
    for (std::string_view word = next_word(text); !word.empty() && count < 8;
         word = next_word(text))
        if (!number(word, words[count++])) return std::nullopt;
    if (nr < 0) {
        if (count != 2) return std::nullopt;
        out.sp = words[0];
        out.pc = words[1];
        return out;
    }
    if (count != 8) return std::nullopt;
    for (std::size_t i = 0; i < 6; ++i)
        out.args[i] = words[i];
    out.sp = words[6];
    out.pc = words[7];
    return out;
}

TaskSyscallReader::TaskSyscallReader(pid_t pid, pid_t tid) noexcept {
    std::string path = "/proc/" + std::to_string(pid) + "/task/" + std::to_string(tid) + "/syscall";
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
}

TaskSyscallReader::~TaskSyscallReader() {
    if (fd_ >= 0) ::close(fd_);
}

TaskSyscallReader::TaskSyscallReader(TaskSyscallReader&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)) {}

TaskSyscallReader& TaskSyscallReader::operator=(TaskSyscallReader&& other) noexcept {
    if (this != &other) {
        if (fd_ >= 0) ::close(fd_);
        fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
}

std::optional<TaskSyscall> TaskSyscallReader::read() noexcept {
    if (fd_ < 0) return std::nullopt;
    char buffer[256];
    ssize_t n = ::pread(fd_, buffer, sizeof buffer - 1, 0);
    if (n <= 0) return std::nullopt;
    return parse_task_syscall(std::string_view(buffer, static_cast<std::size_t>(n)));
}

} // namespace spyglass::process
