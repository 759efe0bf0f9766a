// Which samples of a recording to keep, for `spyglass report`: a time slice, threads (by name
// or TID), processes, on-CPU only, GIL holders only, labels. A sink in front of another.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "spyglass/model/labels.hpp"
#include "spyglass/model/sample.hpp"

namespace spyglass::model {

struct Selection {
    std::optional<std::uint64_t> from_ns; // since the start, inclusive
    std::optional<std::uint64_t> to_ns;   // since the start, exclusive
    std::vector<std::string> threads;     // a thread's name (any it had) or its TID
    std::vector<pid_t> pids;
    bool cpu_only = false;
    bool gil_only = false;
    std::vector<LabelText> labels; // --where: the sample has every one of them

    [[nodiscard]] bool everything() const noexcept {
        return !from_ns && !to_ns && threads.empty() && pids.empty() && !cpu_only && !gil_only &&
               labels.empty();
    }
};

class SelectingSink final : public SampleSink {
  public:
    // `names`: every name each thread index had over the whole recording (a thread is named
    // by the threading module a moment after it is first seen; a slice by name must hold its
    // first samples too). `frames`: the table the samples' label sets are in (a selection by
    // labels keeps nothing without it).
    SelectingSink(Selection selection, std::vector<std::vector<std::string>> names,
                  SampleSink& next, const FrameTable* frames = nullptr);

    void start(const RecordingInfo& info) override { next_.start(info); }
    // Forwarded unless --pid leaves the process out.
    void process(const ProcessInfo& info) override;
    void thread(std::uint32_t index, const ThreadInfo& info) override;
    void sample(const Sample& sample) override;
    void advance(std::uint64_t time_ns) override { next_.advance(time_ns); }
    void finish(const RecordingTotals& totals) override;

    [[nodiscard]] std::uint64_t kept() const noexcept { return kept_; }
    [[nodiscard]] std::uint64_t first_ns() const noexcept { return first_ns_; }
    [[nodiscard]] std::uint64_t last_ns() const noexcept { return last_ns_; }

  private:
    bool thread_selected(std::uint32_t index) const;
    bool labels_selected(LabelSetId id) const;

    Selection selection_;
    std::vector<std::vector<std::string>> names_;
    SampleSink& next_;
    const FrameTable* frames_;
    std::vector<ThreadInfo> threads_;
    std::vector<char> selected_; // per thread index, once known
    std::vector<pid_t> pids_;    // of the samples kept
    std::uint64_t kept_ = 0, first_ns_ = 0, last_ns_ = 0;
};

} // namespace spyglass::model
