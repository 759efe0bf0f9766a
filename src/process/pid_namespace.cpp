#include "spyglass/process/pid_namespace.hpp"

#include <charconv>
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

#include "spyglass/clock.hpp"
#include "spyglass/process/procfs.hpp"

namespace spyglass::process {

namespace {

// The ids of the NSpid line of a status file, outermost (ours) first.
std::vector<pid_t> nspids(const std::string& status_path) {
    std::vector<pid_t> ids;
    auto text = read_small_file(status_path);
    if (!text) return ids;
    std::size_t at = text->find("\nNSpid:");
    if (at == std::string::npos) return ids;
    std::size_t end = text->find('\n', at + 1);
    std::string_view line = std::string_view(*text).substr(
        at + 7, end == std::string::npos ? std::string::npos : end - at - 7);
    while (!line.empty()) {
        std::size_t begin = line.find_first_not_of(" \t");
        if (begin == std::string_view::npos) break;
        line.remove_prefix(begin);
        pid_t id = 0;
        auto [next, ec] = std::from_chars(line.data(), line.data() + line.size(), id);
        if (ec != std::errc()) break;
        ids.push_back(id);
        line.remove_prefix(static_cast<std::size_t>(next - line.data()));
    }
    return ids;
}

} // namespace

bool in_nested_pid_namespace(pid_t pid) {
    return nspids("/proc/" + std::to_string(pid) + "/status").size() > 1;
}

void NamespaceTids::refresh() {
    last_refresh_ns_ = monotonic_ns();
    auto tids = list_tasks(pid_);
    if (!tids) return;
    host_of_.clear();
    for (pid_t tid : *tids) {
        auto ids =
            nspids("/proc/" + std::to_string(pid_) + "/task/" + std::to_string(tid) + "/status");
        if (!ids.empty()) host_of_[ids.back()] = tid;
    }
}

pid_t NamespaceTids::to_host(pid_t ns_tid) {
    if (ns_tid <= 0) return 0;
    auto it = host_of_.find(ns_tid);
    bool may_refresh = last_refresh_ns_ == 0 || monotonic_ns() - last_refresh_ns_ >= kRefreshNs;
    if (it != host_of_.end() && !(dirty_ && may_refresh)) return it->second;
    if (!may_refresh) return 0;
    dirty_ = false;
    refresh();
    it = host_of_.find(ns_tid);
    return it == host_of_.end() ? 0 : it->second;
}

} // namespace spyglass::process
