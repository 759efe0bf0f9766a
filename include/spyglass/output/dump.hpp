// `spyglass dump` output: human-readable text and JSON for scripts.
#pragma once

#include <string>

#include "spyglass/model/frame_table.hpp"
#include "spyglass/model/snapshot.hpp"

namespace spyglass::output {

// Source paths are shortened as in every other text output (short_filename) unless
// full_filenames; the JSON always has the full path.
std::string format_dump_text(const model::ProcessSnapshot& snapshot,
                             const model::FrameTable& frames, bool full_filenames = false);
std::string format_dump_json(const model::ProcessSnapshot& snapshot,
                             const model::FrameTable& frames);

} // namespace spyglass::output
