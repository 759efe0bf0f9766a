// One sink in front of several: record sends the same samples to the raw file, the profile of
// the whole recording and the windows. Each event goes to every sink, in the order given.
#pragma once

#include <vector>

#include "spyglass/model/sample.hpp"

namespace spyglass::model {

class TeeSink final : public SampleSink {
  public:
    void add(SampleSink& sink) { sinks_.push_back(&sink); }
    [[nodiscard]] bool empty() const noexcept { return sinks_.empty(); }

    void start(const RecordingInfo& info) override {
        for (SampleSink* sink : sinks_)
            sink->start(info);
    }
    void process(const ProcessInfo& info) override {
        for (SampleSink* sink : sinks_)
            sink->process(info);
    }
    void thread(std::uint32_t index, const ThreadInfo& info) override {
        for (SampleSink* sink : sinks_)
            sink->thread(index, info);
    }
    void sample(const Sample& sample) override {
        for (SampleSink* sink : sinks_)
            sink->sample(sample);
    }
    void advance(std::uint64_t time_ns) override {
        for (SampleSink* sink : sinks_)
            sink->advance(time_ns);
    }
    void tables_reset() override {
        for (SampleSink* sink : sinks_)
            sink->tables_reset();
    }
    void finish(const RecordingTotals& totals) override {
        for (SampleSink* sink : sinks_)
            sink->finish(totals);
    }

  private:
    std::vector<SampleSink*> sinks_;
};

} // namespace spyglass::model
