#include "spyglass/model/aggregator.hpp"

#include <algorithm>
#include <tuple>

namespace spyglass::model {

std::uint64_t Profile::periods(std::uint64_t weight_ns, std::uint64_t count) const {
    if (count == 0) return 0;
    std::uint64_t period = info.period_ns == 0 ? 1 : info.period_ns;
    return std::max<std::uint64_t>(1, (weight_ns + period / 2) / period);
}

Aggregator::Aggregator(const FrameTable& frames, const StackTable& stacks, bool keep_timeline)
    : frames_(frames), stacks_(stacks), keep_timeline_(keep_timeline) {}

void Aggregator::thread(std::uint32_t index, const ThreadInfo& info) {
    if (threads_.size() <= index) {
        threads_.resize(index + 1);
        last_timeline_entry_.resize(index + 1, -1);
    }
    threads_[index] = info;
}

void Aggregator::start(const RecordingInfo& info) {
    info_ = info;
    if (calls_) calls_->measure_cpu_time(info.mode == SampleMode::cpu);
}

void Aggregator::track_calls(bool per_thread) {
    calls_ = std::make_unique<CallTracker>(frames_, stacks_, per_thread);
    if (info_.mode == SampleMode::cpu) calls_->measure_cpu_time(true);
}

void Aggregator::sample(const Sample& sample) {
    ++kept_;
    if (calls_) calls_->sample(sample);
    Totals& totals = totals_by_key_[sample.key];
    ++totals.count;
    totals.weight_ns += sample.weight_ns;
    totals.cpu_ns += sample.cpu_ns;
    if (!keep_timeline_) return;
    const std::uint32_t thread = sample.key.thread;
    if (thread >= last_timeline_entry_.size()) last_timeline_entry_.resize(thread + 1, -1);
    std::int64_t& last = last_timeline_entry_[thread];
    if (last >= 0) {
        TimelineEntry& entry = timeline_[static_cast<std::size_t>(last)];
        if (entry.stack == sample.key.stack && entry.on_cpu == sample.key.on_cpu &&
            entry.wait == sample.key.wait) {
            ++entry.count;
            entry.weight_ns += sample.weight_ns;
            return;
        }
    }
    last = static_cast<std::int64_t>(timeline_.size());
    // The entry starts where the time its first sample stands for starts.
    std::uint64_t start =
        sample.time_ns >= sample.weight_ns ? sample.time_ns - sample.weight_ns : 0;
    timeline_.push_back(
        {thread, sample.key.stack, sample.key.on_cpu, start, 1, sample.weight_ns, sample.key.wait});
}

Profile Aggregator::profile(const DisplayOptions& display) const {
    Profile profile;
    profile.frames = &frames_;
    profile.stacks = &stacks_;
    profile.processes = processes_;
    profile.threads = threads_;
    profile.info = info_;
    profile.totals = totals_;
    profile.display = display;
    profile.samples.reserve(totals_by_key_.size());
    for (const auto& [key, totals] : totals_by_key_)
        profile.samples.push_back({key, totals.count, totals.weight_ns, totals.cpu_ns});
    // Deterministic order for the writers (and golden files).
    std::sort(profile.samples.begin(), profile.samples.end(),
              [](const AggregatedSample& a, const AggregatedSample& b) {
                  return std::tie(a.key.thread, a.key.stack, a.key.on_cpu, a.key.gil, a.key.wait,
                                  a.key.labels) < std::tie(b.key.thread, b.key.stack, b.key.on_cpu,
                                                           b.key.gil, b.key.wait, b.key.labels);
              });
    profile.timeline = timeline_;
    if (calls_) profile.calls = calls_->table();
    return profile;
}

} // namespace spyglass::model
