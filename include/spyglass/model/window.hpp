// Continuous recording: time cut into windows of a fixed length (window k holds the samples of
// [k × length, (k + 1) × length) since the start), each summed on its own with its own frame
// and stack tables, handed over when it ends. Memory is one window's distinct stacks, however
// long the recording: the session's tables can be emptied at any moment (tables_reset) since no
// window refers to them.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "spyglass/model/aggregator.hpp"
#include "spyglass/model/projector.hpp"

namespace spyglass::model {

struct Window {
    Window(bool keep_timeline) : aggregator(frames, stacks, keep_timeline) {}
    Window(const Window&) = delete;
    Window& operator=(const Window&) = delete;

    FrameTable frames;
    StackTable stacks;
    Aggregator aggregator; // on the two tables above
    std::uint64_t index = 0;
    std::uint64_t start_ns = 0; // since the recording started
    std::uint64_t end_ns = 0;   // the planned end; a partial window ends earlier
    std::uint64_t samples = 0;
    bool partial = false;    // the recording ended inside it
    std::vector<pid_t> pids; // of the threads it has samples of
    RecordingInfo info;      // the recording's, start time moved to the window's start
    RecordingTotals totals;  // of this window

    // The window as a profile: its own samples, info and totals.
    [[nodiscard]] Profile profile(const DisplayOptions& display) const;
};

class WindowCutter final : public SampleSink {
  public:
    // `done` takes every window when it ends (on the resolver's thread: hand it on, don't
    // write it there). `snapshot` writes the window so far, at once, when `flush_requests`
    // has moved (SIGUSR1): the window goes on, its file is written again when it ends.
    using Done = std::function<void(std::unique_ptr<Window>)>;
    using Snapshot = std::function<void(const Window&)>;
    WindowCutter(const FrameTable& frames, const StackTable& stacks, std::uint64_t length_ns,
                 FrameTransform transform, bool keep_timeline, Done done,
                 const std::atomic<int>* flush_requests = nullptr, Snapshot snapshot = {});

    void start(const RecordingInfo& info) override;
    // Each window is told of the processes it has samples of, before their first.
    void process(const ProcessInfo& info) override;
    void thread(std::uint32_t index, const ThreadInfo& info) override;
    void sample(const Sample& sample) override;
    void advance(std::uint64_t time_ns) override;
    void tables_reset() override { projector_.forget(); }
    void finish(const RecordingTotals& totals) override;

    [[nodiscard]] std::uint64_t windows() const noexcept { return next_index_; }

  private:
    void open(std::uint64_t index);
    void close(bool partial, std::uint64_t end_ns);
    // Closes every window that ends at or before `time_ns`, and looks at flush requests.
    void catch_up(std::uint64_t time_ns);
    // The window's own totals and info, at the moment it is closed or written.
    void stamp(Window& window, std::uint64_t end_ns) const;

    StackProjector projector_;
    std::uint64_t length_ns_;
    bool keep_timeline_;
    Done done_;
    const std::atomic<int>* flush_requests_;
    Snapshot snapshot_;
    int flushes_seen_ = 0;
    RecordingInfo info_;
    std::vector<ProcessInfo> processes_; // the latest of each pid
    std::vector<ThreadInfo> threads_;
    std::vector<std::uint64_t> announced_; // per thread: 1 + the window it was last given to
    std::unique_ptr<Window> current_;
    std::uint64_t next_index_ = 0;
    std::uint64_t last_time_ns_ = 0;
    std::string python_version_;
};

} // namespace spyglass::model
