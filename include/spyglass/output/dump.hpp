// `spyglass dump` output: human-readable text and JSON for scripts.
#pragma once

#include <string>

#include "spyglass/sampling/frame_table.hpp"
#include "spyglass/sampling/snapshot.hpp"

namespace spyglass::output {

std::string format_dump_text(const sampling::ProcessSnapshot& snapshot,
                             const sampling::FrameTable& frames);
std::string format_dump_json(const sampling::ProcessSnapshot& snapshot,
                             const sampling::FrameTable& frames);

} // namespace spyglass::output
