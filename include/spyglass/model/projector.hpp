// Samples carried from one pair of frame/stack tables into another, each distinct stack copied
// once. A window keeps its own small tables this way (the session's can then be emptied without
// touching it), and --function / --nolineno become a choice made when a profile is shown, not
// when the samples were resolved: a raw recording keeps every line and its function's first.
#pragma once

#include <cstdint>
#include <vector>

#include "spyglass/model/frame_table.hpp"
#include "spyglass/model/sample.hpp"

namespace spyglass::model {

struct FrameTransform {
    bool function_lines = false; // --function: a frame's line becomes its function's first
    bool no_lines = false;       // --nolineno: no line at all
};

class StackProjector {
  public:
    StackProjector(const FrameTable& from_frames, const StackTable& from_stacks,
                   FrameTransform transform);

    // From now on, copy into these (a new window's tables); what was copied before is not
    // looked up any more.
    void retarget(FrameTable& frames, StackTable& stacks);
    // The source tables were emptied (SampleSink::tables_reset): their ids mean new things.
    void forget();

    StackId stack(StackId id);
    WaitId wait(WaitId id);
    LabelSetId labels(LabelSetId id);
    // The key with its stack, wait and labels in the target tables.
    SampleKey key(const SampleKey& key) {
        SampleKey out = key;
        out.stack = stack(key.stack);
        out.wait = wait(key.wait);
        out.labels = labels(key.labels);
        return out;
    }

  private:
    FrameId frame(FrameId id);
    StringId string(StringId id);

    const FrameTable& from_frames_;
    const StackTable& from_stacks_;
    FrameTransform transform_;
    FrameTable* to_frames_ = nullptr;
    StackTable* to_stacks_ = nullptr;
    // Source id -> target id, invalid() until copied. Bounded by the source tables (which the
    // resolver bounds) and emptied with every retarget.
    std::vector<FrameId> frames_;
    std::vector<StackId> stacks_;
    std::vector<StringId> strings_;
    std::vector<WaitId> waits_;
    std::vector<LabelSetId> label_sets_;
    std::vector<FrameId> scratch_;
    std::vector<Label> label_scratch_;
};

// A sink that forwards to another with every stack projected into tables of its own.
class ProjectingSink final : public SampleSink {
  public:
    ProjectingSink(const FrameTable& frames, const StackTable& stacks, FrameTransform transform);
    // The tables the forwarded samples refer to (for the next sink's constructor).
    [[nodiscard]] const FrameTable& frames() const noexcept { return frames_; }
    [[nodiscard]] const StackTable& stacks() const noexcept { return stacks_; }
    void forward_to(SampleSink& sink) noexcept { next_ = &sink; }

    void start(const RecordingInfo& info) override { next_->start(info); }
    void process(const ProcessInfo& info) override { next_->process(info); }
    void thread(std::uint32_t index, const ThreadInfo& info) override {
        next_->thread(index, info);
    }
    void sample(const Sample& sample) override;
    void advance(std::uint64_t time_ns) override { next_->advance(time_ns); }
    void tables_reset() override { projector_.forget(); }
    void finish(const RecordingTotals& totals) override { next_->finish(totals); }

  private:
    FrameTable frames_;
    StackTable stacks_;
    StackProjector projector_;
    SampleSink* next_ = nullptr;
};

} // namespace spyglass::model
