#include "spyglass/sampling/aggregator.hpp"

#include <algorithm>

namespace spyglass::sampling {

Aggregator::Aggregator(const FrameTable& frames, const StackTable& stacks, bool keep_timeline,
                       SampleMode mode, bool gil_only)
    : frames_(frames), stacks_(stacks), keep_timeline_(keep_timeline), mode_(mode),
      gil_only_(gil_only) {}

void Aggregator::thread(std::uint32_t index, const ThreadInfo& info) {
    if (threads_.size() <= index) {
        threads_.resize(index + 1);
        last_timeline_entry_.resize(index + 1, -1);
    }
    threads_[index] = info;
}

void Aggregator::sample(const Sample& sample) {
    if (mode_ == SampleMode::cpu && !sample.on_cpu) return;
    if (gil_only_ && !sample.gil) return;
    ++kept_;
    Totals& totals = totals_[Key{sample.thread, sample.stack, sample.on_cpu, sample.gil}];
    ++totals.count;
    totals.cpu_ns += sample.cpu_ns;
    if (!keep_timeline_) return;
    if (sample.thread >= last_timeline_entry_.size())
        last_timeline_entry_.resize(sample.thread + 1, -1);
    std::int64_t& last = last_timeline_entry_[sample.thread];
    if (last >= 0) {
        TimelineEntry& entry = timeline_[static_cast<std::size_t>(last)];
        if (entry.stack == sample.stack && entry.on_cpu == sample.on_cpu) {
            ++entry.count;
            return;
        }
    }
    last = static_cast<std::int64_t>(timeline_.size());
    timeline_.push_back({sample.thread, sample.stack, sample.on_cpu, sample.time_ns, 1});
}

Profile Aggregator::profile(const ProfileInfo& info) const {
    Profile profile;
    profile.frames = &frames_;
    profile.stacks = &stacks_;
    profile.threads = threads_;
    profile.info = info;
    profile.samples.reserve(totals_.size());
    for (const auto& [key, totals] : totals_)
        profile.samples.push_back(
            {key.thread, key.stack, key.on_cpu, key.gil, totals.count, totals.cpu_ns});
    // Deterministic order for the writers (and golden files).
    std::sort(profile.samples.begin(), profile.samples.end(),
              [](const AggregatedSample& a, const AggregatedSample& b) {
                  return std::tie(a.thread, a.stack, a.on_cpu, a.gil) <
                         std::tie(b.thread, b.stack, b.on_cpu, b.gil);
              });
    profile.timeline = timeline_;
    return profile;
}

} // namespace spyglass::sampling
