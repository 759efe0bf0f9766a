// Starting a sampling session from the command line's options: attach to --pid, or launch the
// command and wait for its interpreter. Shared by record and top.
#pragma once

#include <memory>
#include <optional>

#include "spyglass/cli/options.hpp"
#include "spyglass/error.hpp"
#include "spyglass/process/launch.hpp"
#include "spyglass/sampling/session.hpp"

namespace spyglass::cli {

struct Started {
    std::unique_ptr<sampling::Session> session;
    std::unique_ptr<process::Child> child; // launch mode (stable address: the session asks it)
    std::vector<std::string> command;      // what is being profiled, for titles
};

// Checks the options (one clear error for a bad combination) and attaches or launches.
Result<Started> start_session(const SamplingOptions& options, model::FrameTable& frames,
                              model::StackTable& stacks, bool keep_timeline = false);

// The exit code for a session's end: the launched command's status, else 0.
int finish(Started& started);

} // namespace spyglass::cli
