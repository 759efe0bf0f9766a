// One look at every thread of a process, resolved: what `spyglass dump` prints.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <sys/types.h>

#include "spyglass/model/frame_table.hpp"
#include "spyglass/model/recording.hpp"
#include "spyglass/model/sample.hpp"
#include "spyglass/model/wait.hpp"

namespace spyglass::model {

struct LocalValue {
    std::string name;
    std::string value; // repr-like, bounded
    bool argument = false;
};

// What a thread waited for when it was read (docs/waits.md); kind unknown: nothing known (it
// was on a CPU, or --no-waits).
struct WaitSnapshot {
    WaitKind kind = WaitKind::unknown;
    std::string syscall; // empty outside a system call, and with --waits=kind
    std::string target;  // "tcp 127.0.0.1:5432"; empty with --waits=kind
    std::string detail;  // "fd 5, local 127.0.0.1:40312, peer 127.0.0.1:5432, ESTAB"
};

struct ThreadSnapshot {
    pid_t tid = 0;
    std::uint64_t thread_id = 0;
    std::string name;
    char os_state = '?'; // /proc state letter
    bool on_cpu = false; // running or runnable
    bool holds_gil = false;
    std::uint32_t interp_index = 0;
    StackStatus status = StackStatus::ok;
    bool paused = false; // stopped for the read
    WaitSnapshot wait;
    std::vector<FrameId> frames;                 // innermost first
    std::vector<std::vector<LocalValue>> locals; // per frame, with --locals
};

struct ProcessSnapshot {
    pid_t pid = 0;
    std::vector<std::string> command;
    std::string python_version;
    std::string executable;
    std::string python_binary;
    std::vector<std::string> notes;
    std::vector<ThreadSnapshot> threads;
    PauseSummary pauses;
};

} // namespace spyglass::model
