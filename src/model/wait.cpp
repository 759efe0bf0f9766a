#include "spyglass/model/wait.hpp"

namespace spyglass::model {

const char* wait_kind_name(WaitKind kind) noexcept {
    switch (kind) {
    case WaitKind::unknown:
        return "unknown";
    case WaitKind::cpu_starved:
        return "cpu-starved";
    case WaitKind::sleep:
        return "sleep";
    case WaitKind::socket:
        return "socket";
    case WaitKind::pipe:
        return "pipe";
    case WaitKind::file:
        return "file";
    case WaitKind::io:
        return "io";
    case WaitKind::gil:
        return "gil";
    case WaitKind::lock:
        return "lock";
    case WaitKind::poll:
        return "poll";
    case WaitKind::idle_loop:
        return "idle-loop";
    case WaitKind::child:
        return "child";
    case WaitKind::stopped:
        return "stopped";
    case WaitKind::syscall:
        return "syscall";
    case WaitKind::file_lock:
        return "file-lock";
    case WaitKind::event:
        return "event";
    case WaitKind::kernel:
        return "kernel";
    }
    return "?";
}

WaitId WaitTable::intern(const Wait& wait) {
    auto it = index_.find(wait);
    if (it != index_.end()) return it->second;
    WaitId id(static_cast<std::uint32_t>(waits_.size()));
    waits_.push_back(wait);
    index_.emplace(wait, id);
    return id;
}

void WaitTable::clear() {
    waits_.clear();
    index_.clear();
    intern({});
}

} // namespace spyglass::model
