// What attaching learned about a target process: where its interpreter is, which layout it
// uses, the addresses of the runtime roots and type objects. Fixed for the target's lifetime.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <sys/types.h>

#include "spyglass/process/memory.hpp"
#include "spyglass/python/layout.hpp"

namespace spyglass::python {

using process::Address;

// Addresses of type objects and singletons in the target, for validating what is read.
// Zero means unknown (the check is skipped).
struct TypeAddresses {
    Address code = 0, frame = 0, unicode = 0, str = 0 /* 2.7 */, bytes = 0, type = 0, dict = 0,
            tuple = 0, list = 0, long_ = 0, int_ = 0 /* 2.7 */, float_ = 0, bool_ = 0, module = 0,
            none = 0, true_ = 0, false_ = 0;
    // The type of names and file names in code objects.
    [[nodiscard]] Address name_type(const Layout& layout) const noexcept {
        return layout.py2_strings ? str : unicode;
    }
    [[nodiscard]] Address bytes_type(const Layout& layout) const noexcept {
        return layout.py2_strings ? str : bytes;
    }
};

struct TargetInfo {
    pid_t pid = 0;
    std::string executable;    // /proc/PID/exe as the target sees it
    std::string python_binary; // the ELF object holding the interpreter: exe or libpython
    std::uint64_t load_bias = 0;
    PythonVersion version;      // full version when known (micro may be 0)
    std::string version_source; // how the version was found, for `dump` and logs
    Layout layout;
    Address runtime = 0;          // _PyRuntime (3.7+)
    Address interp_head_slot = 0; // where the pointer to the first PyInterpreterState lives
    Address tstate_current = 0;   // _PyThreadState_Current (2.7, 3.6)
    Address gil_locked = 0;       // 3.6 static gil_locked
    Address gil_last_holder = 0;  // 3.6 static gil_last_holder
    // 3.6: the statics a thread waiting for the GIL blocks on (gil_cond, gil_mutex,
    // switch_cond, switch_mutex), as (address, size); see python/waits.hpp.
    std::vector<std::pair<Address, std::uint64_t>> gil_statics;
    Address gil_lock_slot = 0;         // 2.7: &interpreter_lock (a pointer to the GIL's sem_t)
    int pthread_tid_offset = -1;       // glibc struct pthread -> kernel TID (needed up to 3.10)
    bool nested_pid_namespace = false; // a container's: its thread ids are not ours
    TypeAddresses types;
    std::vector<std::string> notes; // facts worth telling the user (stripped binary, debug offsets)
};

} // namespace spyglass::python
