// What a PID given as --pid names, before anything is attached: a process that may run Python,
// or something that never can (a kernel thread, a thread of another process, a process that
// has exited), which gets its own clear error instead of a misleading one.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include <sys/types.h>

#include "spyglass/error.hpp"

namespace spyglass::process {

struct TargetCheck {
    char state = '?'; // of the main thread, from /proc/PID/stat
    [[nodiscard]] bool stopped() const noexcept { return state == 'T' || state == 't'; }
};

// An error (Errc::process_gone, not_python or invalid_argument) that says what `pid` is when it
// cannot be a target:
//   "no process with PID 123"
//   "process 2 (kthreadd) is a kernel thread, not a Python process"
//   "4243 is a thread of process 4242 (python3); use --pid 4242"
//   "process 77 has exited (a zombie: its parent, process 76, has not reaped it yet)"
// else what the target's main thread is doing.
Result<TargetCheck> check_target_pid(pid_t pid);

// The flags field of a /proc/PID/stat text (PF_* bits), if it parses.
std::optional<std::uint64_t> parse_stat_flags(std::string_view stat);
// The Tgid: line of a /proc/PID/status text.
std::optional<pid_t> parse_tgid(std::string_view status);

inline constexpr std::uint64_t kKernelThreadFlag = 0x00200000; // PF_KTHREAD

} // namespace spyglass::process
