// Aggregates samples as they come, so memory stays bounded by the number of distinct stacks
// (and, for speedscope, by the run-length encoded timeline), not by the recording's length.
#pragma once

#include <memory>
#include <unordered_map>
#include <vector>

#include "spyglass/model/calls.hpp"
#include "spyglass/model/profile.hpp"
#include "spyglass/model/sample.hpp"

namespace spyglass::model {

class Aggregator final : public SampleSink {
  public:
    Aggregator(const FrameTable& frames, const StackTable& stacks, bool keep_timeline);

    void start(const RecordingInfo& info) override;
    void process(const ProcessInfo& info) override { processes_.push_back(info); }
    void thread(std::uint32_t index, const ThreadInfo& info) override;
    void sample(const Sample& sample) override;
    void finish(const RecordingTotals& totals) override { totals_ = totals; }
    // Follow calls too (-f calls, report --calls): Profile::calls. Before the first sample.
    void track_calls(bool per_thread);

    // The profile so far (copies the aggregated counts; the tables are shared).
    [[nodiscard]] Profile profile(const DisplayOptions& display) const;
    [[nodiscard]] std::uint64_t kept_samples() const noexcept { return kept_; }

  private:
    struct Totals {
        std::uint64_t count = 0;
        std::uint64_t weight_ns = 0;
        std::uint64_t cpu_ns = 0;
    };

    const FrameTable& frames_;
    const StackTable& stacks_;
    bool keep_timeline_;
    RecordingInfo info_;
    RecordingTotals totals_;
    std::vector<ProcessInfo> processes_;
    std::vector<ThreadInfo> threads_;
    std::unordered_map<SampleKey, Totals, SampleKeyHash> totals_by_key_;
    std::vector<TimelineEntry> timeline_;
    std::vector<std::int64_t> last_timeline_entry_; // per thread: index into timeline_, or -1
    std::uint64_t kept_ = 0;
    std::unique_ptr<CallTracker> calls_;
};

} // namespace spyglass::model
