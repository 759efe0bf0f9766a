// Two profiles compared (`spyglass diff`): per frame, its self and total share of all samples
// in each, and the differential flame graph (the new profile's shape, each frame coloured by
// how its share changed). Shares, not counts: two recordings of different lengths compare.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "spyglass/error.hpp"
#include "spyglass/model/profile.hpp"

namespace spyglass::output {

// Shares are fractions of each profile's total weight (0..1).
struct FrameShare {
    std::string label;
    double base_self = 0, new_self = 0;
    double base_total = 0, new_total = 0;
    [[nodiscard]] double self_change() const noexcept { return new_self - base_self; }
    [[nodiscard]] double total_change() const noexcept { return new_total - base_total; }
};

struct ProfileDiff {
    std::vector<FrameShare> frames;         // the biggest change (self or total) first
    double base_weight = 0, new_weight = 0; // in sampling periods
};

// Frames by their label (what folded stacks show); pseudo-frames ([off-cpu], roots) are left
// out: a sample's self time is its innermost Python frame's.
ProfileDiff diff_profiles(const model::Profile& base, const model::Profile& current);

// The first `top` rows as a table for a terminal.
std::string diff_table(const ProfileDiff& diff, std::size_t top);

} // namespace spyglass::output
