#include "spyglass/model/calls.hpp"

#include <algorithm>
#include <cmath>

namespace spyglass::model {

namespace {

constexpr std::size_t kBuckets = 1 + static_cast<std::size_t>(DurationHistogram::kOctaves) *
                                         DurationHistogram::kBucketsPerOctave;
constexpr std::uint32_t kNotPython = 0xFFFFFFFF;

double lower_of(double bucket) {
    return static_cast<double>(DurationHistogram::kFirstNs) *
           std::exp2((bucket - 1) / DurationHistogram::kBucketsPerOctave);
}

} // namespace

std::size_t DurationHistogram::bucket_of(std::uint64_t ns) noexcept {
    if (ns < kFirstNs) return 0;
    double octaves = std::log2(static_cast<double>(ns) / static_cast<double>(kFirstNs));
    auto index = static_cast<std::size_t>(1 + std::floor(octaves * kBucketsPerOctave));
    // log2 may round an exact bucket edge down: the edge belongs to the bucket it starts.
    if (index + 1 < kBuckets && static_cast<double>(ns) >= lower_of(static_cast<double>(index + 1)))
        ++index;
    return std::min(index, kBuckets - 1);
}

std::uint64_t DurationHistogram::bucket_lower_ns(std::size_t index) noexcept {
    if (index == 0) return 0;
    return static_cast<std::uint64_t>(std::llround(lower_of(static_cast<double>(index))));
}

void DurationHistogram::add(std::uint64_t ns) {
    std::size_t bucket = bucket_of(ns);
    if (counts_.size() <= bucket) counts_.resize(bucket + 1, 0);
    ++counts_[bucket];
    ++count_;
    min_ns_ = std::min(min_ns_, ns);
    max_ns_ = std::max(max_ns_, ns);
    sum_ns_ += ns;
}

void DurationHistogram::merge(const DurationHistogram& other) {
    if (other.count_ == 0) return;
    if (counts_.size() < other.counts_.size()) counts_.resize(other.counts_.size(), 0);
    for (std::size_t i = 0; i < other.counts_.size(); ++i)
        counts_[i] += other.counts_[i];
    count_ += other.count_;
    min_ns_ = std::min(min_ns_, other.min_ns_);
    max_ns_ = std::max(max_ns_, other.max_ns_);
    sum_ns_ += other.sum_ns_;
}

std::uint64_t DurationHistogram::quantile(double q) const noexcept {
    if (count_ == 0) return 0;
    q = std::clamp(q, 0.0, 1.0);
    auto rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count_)));
    rank = std::clamp<std::uint64_t>(rank, 1, count_);
    if (rank == count_) return max_ns_;
    std::uint64_t seen = 0;
    for (std::size_t i = 0; i < counts_.size(); ++i) {
        seen += counts_[i];
        if (seen < rank) continue;
        if (i == 0) return min_ns();
        auto middle =
            static_cast<std::uint64_t>(std::llround(lower_of(static_cast<double>(i) + 0.5)));
        return std::clamp(middle, min_ns(), max_ns_);
    }
    return max_ns_;
}

std::vector<DurationHistogram::Bucket> DurationHistogram::buckets(int per_octave) const {
    std::vector<Bucket> out;
    if (per_octave <= 0 || per_octave > kBucketsPerOctave || kBucketsPerOctave % per_octave != 0)
        per_octave = kBucketsPerOctave;
    const std::size_t merge = static_cast<std::size_t>(kBucketsPerOctave / per_octave);
    for (std::size_t i = 0; i < counts_.size(); ++i) {
        if (counts_[i] == 0) continue;
        std::size_t first = i == 0 ? 0 : 1 + (i - 1) / merge * merge;
        std::size_t end = i == 0 ? 1 : first + merge;
        if (!out.empty() && out.back().lower_ns == bucket_lower_ns(first)) {
            out.back().count += counts_[i];
            continue;
        }
        out.push_back({bucket_lower_ns(first), bucket_lower_ns(end), counts_[i]});
    }
    return out;
}

std::size_t CallTracker::FunctionKeyHash::operator()(const FunctionKey& key) const noexcept {
    std::uint64_t h = (std::uint64_t{key.function.value} << 32) ^ key.file.value;
    h ^= (static_cast<std::uint64_t>(static_cast<std::uint32_t>(key.first_line)) << 17) ^
         (std::uint64_t{key.thread} * 0xff51afd7ed558ccdull);
    return static_cast<std::size_t>((h * 0x9E3779B97F4A7C15ull) >> 13);
}

CallTracker::CallTracker(const FrameTable& frames, const StackTable& stacks, bool per_thread)
    : frames_(frames), stacks_(stacks), per_thread_(per_thread) {}

std::uint32_t CallTracker::function_of(FrameId frame, std::uint32_t thread) {
    // Merged: one lookup per frame id, then an array. Per thread: the key has the thread.
    if (!per_thread_ && frame.value < by_frame_.size() && by_frame_[frame.value] != 0) {
        std::uint32_t known = by_frame_[frame.value];
        return known == kNotPython ? kNotPython : known - 1;
    }
    const Frame& f = frames_.get(frame);
    std::uint32_t index = kNotPython;
    if (f.kind == FrameKind::python) {
        FunctionKey key{f.function, f.file, f.first_line, per_thread_ ? thread : kAllThreads};
        auto [it, added] = index_.try_emplace(key, static_cast<std::uint32_t>(stats_.size()));
        if (added) {
            CallStats stats;
            stats.function = key.function;
            stats.file = key.file;
            stats.first_line = key.first_line;
            stats.thread = key.thread;
            stats_.push_back(std::move(stats));
            stamp_.push_back(0);
        }
        index = it->second;
    }
    if (!per_thread_) {
        if (by_frame_.size() <= frame.value) by_frame_.resize(frame.value + 1, 0);
        by_frame_[frame.value] = index == kNotPython ? kNotPython : index + 1;
    }
    return index;
}

void CallTracker::close(const OpenCall& call, bool open) {
    CallStats& stats = stats_[call.function];
    if (open || call.from_start) {
        ++stats.open_calls;
        return;
    }
    ++stats.calls;
    if (call.back_to_back) ++stats.back_to_back;
    if (call.samples < 2)
        ++stats.short_calls;
    else
        stats.durations.add(call.weight_ns);
}

void CallTracker::sample(const Sample& sample) {
    ++sample_number_;
    const std::uint32_t thread = sample.key.thread;
    if (threads_.size() <= thread) threads_.resize(thread + 1);
    ThreadCalls& calls = threads_[thread];

    python_.clear();
    std::span<const FrameId> stack = stacks_.get(sample.key.stack);
    for (std::size_t i = stack.size(); i-- > 0;)
        if (std::uint32_t function = function_of(stack[i], thread); function != kNotPython)
            python_.push_back(function);
    for (std::uint32_t function : python_) {
        if (stamp_[function] == sample_number_) continue; // recursion: once per sample
        stamp_[function] = sample_number_;
        stats_[function].total_ns += sample.weight_ns;
        stats_[function].cpu_ns += sample.cpu_ns;
    }
    if (!python_.empty()) {
        stats_[python_.back()].self_ns += sample.weight_ns;
        stats_[python_.back()].self_cpu_ns += sample.cpu_ns;
    }

    // The calls that go on get the sample's whole time. Where calls end and others begin, the
    // change happened somewhere in the time the sample stands for: each side gets half of it
    // (after late ticks that time is long; at a steady rate each call gets half a period at
    // each end, the error of either end is within half a period, and the sum is unbiased).
    std::size_t going_on = calls.open.size();
    const std::uint64_t amount = cpu_time_ ? sample.cpu_ns : sample.weight_ns;
    if (sample.new_calls == kCallsUnknown) {
        // Which calls are new is not known: the ones running most likely still are.
        ++without_identity_;
    } else {
        identified_ = true;
        const std::size_t depth = python_.size();
        std::size_t keep = calls.seen ? depth - std::min<std::size_t>(sample.new_calls, depth) : 0;
        keep = std::min(keep, calls.open.size());
        for (std::size_t i = 0; i < keep; ++i)
            if (calls.open[i].function != python_[i]) {
                keep = i; // not the same function: not the same call, whatever was said
                break;
            }
        ended_.assign(calls.open.size(), kNotPython);
        for (std::size_t i = calls.open.size(); i-- > keep;) {
            calls.open[i].weight_ns += amount / 2;
            close(calls.open[i], false);
            ended_[i] = calls.open[i].function;
        }
        calls.open.resize(keep);
        for (std::size_t i = keep; i < depth; ++i) {
            OpenCall call;
            call.function = python_[i];
            call.from_start = !calls.seen;
            call.back_to_back = i < ended_.size() && ended_[i] == python_[i];
            calls.open.push_back(call);
        }
        calls.seen = true;
        going_on = keep;
    }
    for (std::size_t i = 0; i < calls.open.size(); ++i) {
        OpenCall& call = calls.open[i];
        ++call.samples;
        call.weight_ns += i < going_on ? amount : amount - amount / 2;
    }
}

CallTable CallTracker::table() const {
    CallTable table;
    table.known = identified_;
    table.per_thread = per_thread_;
    table.samples_without_identity = without_identity_;
    table.functions = stats_;
    for (const ThreadCalls& calls : threads_)
        for (const OpenCall& call : calls.open)
            ++table.functions[call.function].open_calls;
    return table;
}

} // namespace spyglass::model
