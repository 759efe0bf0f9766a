// The differential flame graph of `spyglass diff`: the new profile's shape, each frame coloured
// by how its share of all samples changed from the base profile (flamegraph.cpp). The table of
// the same comparison is an analysis (spyglass/analysis/diff.hpp).
#pragma once

#include <cstdio>
#include <string_view>

#include "spyglass/error.hpp"
#include "spyglass/model/profile.hpp"

namespace spyglass::output {

// The differential flame graph (flamegraph.cpp). `title`: what is compared.
Result<void> write_diff_flamegraph(const model::Profile& base, const model::Profile& current,
                                   std::string_view title, std::FILE* out);

} // namespace spyglass::output
