// `spyglass dump` output: human-readable text and JSON for scripts.
#pragma once

#include <string>

#include "spyglass/sampling/frame_table.hpp"
#include "spyglass/sampling/snapshot.hpp"

namespace spyglass::output {

// Source paths are shortened as in every other text output (short_filename) unless
// full_filenames; the JSON always has the full path.
std::string format_dump_text(const sampling::ProcessSnapshot& snapshot,
                             const sampling::FrameTable& frames, bool full_filenames = false);
std::string format_dump_json(const sampling::ProcessSnapshot& snapshot,
                             const sampling::FrameTable& frames);

} // namespace spyglass::output
