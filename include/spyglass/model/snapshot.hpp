// One look at every thread of a process, resolved: what `spyglass dump` prints.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <sys/types.h>

#include "spyglass/model/frame_table.hpp"
#include "spyglass/model/recording.hpp"
#include "spyglass/model/sample.hpp"

namespace spyglass::model {

struct LocalValue {
    std::string name;
    std::string value; // repr-like, bounded
    bool argument = false;
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
    bool paused = false;                         // stopped for the read
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
