// Profiles read back from files, for `spyglass diff`: pprof (gzipped or not, spyglass's or
// another tool's), raw recordings, and folded stacks. Each becomes a model::Profile with its
// own tables, so that the same labels come out of it as out of the recording it was made from.
#pragma once

#include <memory>
#include <string>

#include "spyglass/error.hpp"
#include "spyglass/model/profile.hpp"
#include "spyglass/output/raw.hpp"

namespace spyglass::output {

struct LoadedProfile {
    std::string kind; // "pprof", "raw" or "folded"
    std::unique_ptr<RawReader> raw;
    model::FrameTable frames;
    model::StackTable stacks;
    model::Profile profile; // refers to the tables above, or the raw reader's
    std::string warning;    // a raw recording that was cut, and so on
};

// `cpu_only`: only the samples of threads that were on a CPU (pprof's state label, folded
// stacks without the [off-cpu] frame).
Result<std::unique_ptr<LoadedProfile>> load_profile(const std::string& path, bool cpu_only,
                                                    const model::DisplayOptions& display);

} // namespace spyglass::output
