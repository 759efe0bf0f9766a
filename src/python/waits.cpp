#include "spyglass/python/waits.hpp"

#include "spyglass/process/remote_field.hpp"

namespace spyglass::python {

namespace {

// glibc's sem_t on x86-64: the futex word is in its first 8 bytes, the whole is 32.
constexpr std::uint64_t kSemSize = 32;

std::string_view basename(std::string_view path) noexcept {
    std::size_t slash = path.rfind('/');
    return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// The last component of a qualified name: "Queue.get" -> "get".
std::string_view short_name(std::string_view function) noexcept {
    std::size_t dot = function.rfind('.');
    return dot == std::string_view::npos ? function : function.substr(dot + 1);
}

struct Known {
    std::string_view module; // the file's base name without ".py"
    std::string_view name;   // the function's own name
    std::string_view label;  // what it is, when the code object has no qualified name
};
// Functions of the standard library that block on a lock, named as 3.11+ qualifies them, so
// that a 3.8 and a 3.12 target say the same. A name that several classes of the module
// define (threading's wait) is left as the code object names it.
constexpr Known kKnown[] = {
    {"queue", "get", "Queue.get"},
    {"queue", "put", "Queue.put"},
    {"queue", "join", "Queue.join"},
    {"Queue", "get", "Queue.get"}, // 2.7's module name
    {"Queue", "put", "Queue.put"},
    {"Queue", "join", "Queue.join"},
    {"threading", "join", "Thread.join"},
    {"threading", "_wait_for_tstate_lock", "Thread.join"},
    {"threading", "acquire", ""},
    {"threading", "wait", ""},
    {"threading", "wait_for", "Condition.wait_for"},
    {"threading", "_wait", "Barrier.wait"},
    {"synchronize", "acquire", ""}, // multiprocessing
    {"synchronize", "wait", ""},
    {"_base", "result", "Future.result"}, // concurrent.futures
    {"_base", "wait", ""},
    {"_base", "as_completed", ""},
};

} // namespace

GilWords::GilWords(process::RemoteMemory& memory, const TargetInfo& target)
    : memory_(memory), target_(target) {
    const LayoutOffsets& o = target.layout.off;
    for (const auto& [at, size] : target.gil_statics)
        fixed_.push_back({at, size});
    if (target.runtime != 0 && o.runtime_gil != kAbsent && o.gil_size != kAbsent)
        if (auto gil = process::field_address(target.runtime, o.runtime_gil, o.gil_size))
            fixed_.push_back({*gil, o.gil_size});
}

bool GilWords::known() const noexcept {
    const LayoutOffsets& o = target_.layout.off;
    return !fixed_.empty() || target_.gil_lock_slot != 0 ||
           (o.interp_ceval_gil != kAbsent && o.gil_size != kAbsent);
}

bool GilWords::is_gil(Address futex, Address interp) {
    for (const Range& range : fixed_)
        if (range.contains(futex)) return true;
    if (target_.gil_lock_slot != 0) {
        // Created with the first thread (PyEval_InitThreads), never freed: read until it is set.
        if (!lock_) {
            auto pointer = memory_.read_value<std::uint64_t>(target_.gil_lock_slot);
            if (pointer && *pointer != 0) lock_ = Range{*pointer, kSemSize};
        }
        return lock_ && lock_->contains(futex);
    }
    const LayoutOffsets& o = target_.layout.off;
    if (interp == 0 || o.interp_ceval_gil == kAbsent || o.gil_size == kAbsent) return false;
    auto it = per_interp_.find(interp);
    if (it == per_interp_.end()) {
        auto pointer = process::read_field<std::uint64_t>(memory_, interp, o.interp_ceval_gil);
        if (!pointer || *pointer == 0) return false;
        it = per_interp_.emplace(interp, Range{*pointer, o.gil_size}).first;
    }
    return it->second.contains(futex);
}

bool futex_identifies_lock(const TargetInfo& target) noexcept {
    return !target.version.at_least(3, 13);
}

std::optional<std::string> sync_primitive(std::string_view function, std::string_view file) {
    std::string_view base = basename(file);
    if (!base.ends_with(".py")) return std::nullopt;
    std::string_view module = base.substr(0, base.size() - 3);
    std::string_view name = short_name(function);
    for (const Known& known : kKnown) {
        if (known.module != module || known.name != name) continue;
        // concurrent.futures' _base.py, not any _base.py.
        if (module == "_base" && file.find("concurrent/futures") == std::string_view::npos)
            return std::nullopt;
        std::string shown(module == "Queue" ? std::string_view("queue") : module);
        if (module == "synchronize") shown = "multiprocessing";
        if (module == "_base") shown = "concurrent.futures";
        shown += '.';
        // A qualified name (3.11+) says the class; else the table does, when it can.
        if (function.find('.') != std::string_view::npos)
            shown += function;
        else
            shown += known.label.empty() ? function : known.label;
        return shown;
    }
    return std::nullopt;
}

bool is_event_loop_frame(std::string_view function, std::string_view file) noexcept {
    return short_name(function) == "_run_once" && basename(file) == "base_events.py" &&
           file.find("asyncio") != std::string_view::npos;
}

} // namespace spyglass::python
