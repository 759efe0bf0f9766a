// `spyglass dump` output: human-readable text and JSON for scripts.
#pragma once

#include <string>

#include "spyglass/model/frame_table.hpp"
#include "spyglass/model/snapshot.hpp"

namespace spyglass::output {

std::string format_dump_text(const model::ProcessSnapshot& snapshot,
                             const model::FrameTable& frames);
std::string format_dump_json(const model::ProcessSnapshot& snapshot,
                             const model::FrameTable& frames);

} // namespace spyglass::output
