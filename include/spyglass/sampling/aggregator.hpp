// Aggregates samples as they come, so memory stays bounded by the number of distinct stacks
// (and, for speedscope, by the run-length encoded timeline), not by the recording's length.
#pragma once

#include <unordered_map>
#include <vector>

#include "spyglass/sampling/profile.hpp"
#include "spyglass/sampling/sample.hpp"

namespace spyglass::sampling {

class Aggregator final : public SampleSink {
  public:
    Aggregator(const FrameTable& frames, const StackTable& stacks, bool keep_timeline,
               SampleMode mode, bool gil_only);

    void thread(std::uint32_t index, const ThreadInfo& info) override;
    void sample(const Sample& sample) override;

    // The profile so far (copies the aggregated counts; the tables are shared).
    [[nodiscard]] Profile profile(const ProfileInfo& info) const;
    [[nodiscard]] std::uint64_t kept_samples() const noexcept { return kept_; }

  private:
    struct Key {
        std::uint32_t thread;
        StackId stack;
        bool on_cpu;
        bool gil;
        friend bool operator==(const Key&, const Key&) = default;
    };
    struct KeyHash {
        std::size_t operator()(const Key& k) const noexcept {
            std::uint64_t h = (std::uint64_t{k.thread} << 34) ^ (std::uint64_t{k.stack} << 2) ^
                              (k.on_cpu ? 1u : 0u) ^ (k.gil ? 2u : 0u);
            return static_cast<std::size_t>(h * 0x9E3779B97F4A7C15ull >> 17);
        }
    };
    struct Totals {
        std::uint64_t count = 0;
        std::uint64_t cpu_ns = 0;
    };

    const FrameTable& frames_;
    const StackTable& stacks_;
    bool keep_timeline_;
    SampleMode mode_;
    bool gil_only_;
    std::vector<ThreadInfo> threads_;
    std::unordered_map<Key, Totals, KeyHash> totals_;
    std::vector<TimelineEntry> timeline_;
    std::vector<std::int64_t> last_timeline_entry_; // per thread: index into timeline_, or -1
    std::uint64_t kept_ = 0;
};

} // namespace spyglass::sampling
