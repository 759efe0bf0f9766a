#include "spyglass/analysis/diff.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "spyglass/output/writer.hpp"

namespace spyglass::output {

namespace {

struct Weights {
    double self = 0, total = 0;
};

// label -> self and total weight, and the profile's total.
double frame_weights(const model::Profile& profile, std::unordered_map<std::string, Weights>& out) {
    DisplayFrames display(profile);
    std::vector<DisplayFrames::Id> ids;
    std::unordered_set<DisplayFrames::Id> seen;
    std::vector<Weights*> by_id;
    double total = 0;
    for (const model::AggregatedSample& sample : profile.samples) {
        if (sample.count == 0) continue;
        const auto weight = static_cast<double>(profile.periods(sample.weight_ns, sample.count));
        total += weight;
        display.stack(sample.key.thread, sample.key.stack, sample.key.on_cpu, sample.key.wait, ids);
        seen.clear();
        Weights* leaf = nullptr;
        for (DisplayFrames::Id id : ids) {
            const DisplayFrames::Entry& entry = display[id];
            if (entry.synthetic) continue;
            if (by_id.size() <= id) by_id.resize(display.size(), nullptr);
            if (by_id[id] == nullptr) by_id[id] = &out[entry.label];
            if (seen.insert(id).second) by_id[id]->total += weight; // recursion counts once
            leaf = by_id[id];
        }
        if (leaf != nullptr) leaf->self += weight;
    }
    return total;
}

} // namespace

ProfileDiff diff_profiles(const model::Profile& base, const model::Profile& current) {
    std::unordered_map<std::string, Weights> before, after;
    ProfileDiff diff;
    diff.base_weight = frame_weights(base, before);
    diff.new_weight = frame_weights(current, after);
    auto share = [](double part, double whole) { return whole > 0 ? part / whole : 0.0; };
    std::unordered_map<std::string, FrameShare> frames;
    for (const auto& [label, w] : before) {
        FrameShare& f = frames[label];
        f.label = label;
        f.base_self = share(w.self, diff.base_weight);
        f.base_total = share(w.total, diff.base_weight);
    }
    for (const auto& [label, w] : after) {
        FrameShare& f = frames[label];
        f.label = label;
        f.new_self = share(w.self, diff.new_weight);
        f.new_total = share(w.total, diff.new_weight);
    }
    for (auto& [label, f] : frames)
        diff.frames.push_back(std::move(f));
    auto size = [](const FrameShare& f) {
        return std::max(std::fabs(f.self_change()), std::fabs(f.total_change()));
    };
    std::sort(diff.frames.begin(), diff.frames.end(),
              [&](const FrameShare& a, const FrameShare& b) {
                  return size(a) != size(b) ? size(a) > size(b) : a.label < b.label;
              });
    return diff;
}

std::string diff_table(const ProfileDiff& diff, std::size_t top) {
    std::string out = fmt::format("{:>8} {:>8} {:>8}   {:>8} {:>8} {:>8}   {}\n", "self", "",
                                  "change", "total", "", "change", "frame");
    out += fmt::format("{:>8} {:>8} {:>8}   {:>8} {:>8} {:>8}\n", "base", "new", "", "base", "new",
                       "");
    auto pct = [](double v) { return fmt::format("{:.2f}%", 100 * v); };
    auto signed_pct = [](double v) { return fmt::format("{:+.2f}%", 100 * v); };
    for (std::size_t i = 0; i < diff.frames.size() && i < top; ++i) {
        const FrameShare& f = diff.frames[i];
        out += fmt::format("{:>8} {:>8} {:>8}   {:>8} {:>8} {:>8}   {}\n", pct(f.base_self),
                           pct(f.new_self), signed_pct(f.self_change()), pct(f.base_total),
                           pct(f.new_total), signed_pct(f.total_change()), f.label);
    }
    return out;
}

} // namespace spyglass::output
