// One look at every thread of a process: what `spyglass dump` prints.
#pragma once

#include <string>
#include <vector>

#include <sys/types.h>

#include "spyglass/error.hpp"
#include "spyglass/python/interpreter.hpp"
#include "spyglass/python/objects.hpp"
#include "spyglass/sampling/frame_table.hpp"
#include "spyglass/sampling/paused_read.hpp"
#include "spyglass/sampling/stack_reader.hpp"

namespace spyglass::sampling {

struct SnapshotOptions {
    bool locals = false; // read each frame's local variables
    PauseMode pause = PauseMode::when_torn;
    std::size_t max_value_chars = 120;
};

struct ThreadSnapshot {
    pid_t tid = 0;
    std::uint64_t thread_id = 0;
    std::string name;
    char os_state = '?'; // /proc state letter
    bool on_cpu = false; // running or runnable
    bool holds_gil = false;
    std::uint32_t interp_index = 0;
    StackOutcome outcome = StackOutcome::ok;
    bool paused = false;                                    // stopped for the read
    std::vector<FrameId> frames;                            // innermost first
    std::vector<std::vector<python::LocalVariable>> locals; // per frame, with --locals
};

struct ProcessSnapshot {
    pid_t pid = 0;
    std::vector<std::string> command;
    python::PythonVersion version;
    std::string executable;
    std::string python_binary;
    std::vector<std::string> notes;
    std::vector<ThreadSnapshot> threads;
    PauseStats pauses;
};

Result<ProcessSnapshot> take_snapshot(python::PythonProcess& process, FrameTable& frames,
                                      const SnapshotOptions& options);

} // namespace spyglass::sampling
