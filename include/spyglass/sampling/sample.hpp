// One thread, one tick: what the sampler hands to its sinks.
#pragma once

#include <cstdint>

#include <sys/types.h>

#include "spyglass/sampling/frame_table.hpp"
#include "spyglass/sampling/profile.hpp"
#include "spyglass/sampling/stack_reader.hpp"

namespace spyglass::sampling {

struct Sample {
    std::uint32_t thread = 0;  // index in the session's thread table (see SampleSink::thread)
    std::uint64_t time_ns = 0; // since the recording started
    StackId stack = 0;
    bool on_cpu = false;
    bool gil = false;
    std::uint64_t cpu_ns = 0; // CPU time the thread used since its previous sample
    StackOutcome outcome = StackOutcome::ok;
};

// Where samples go: the aggregator behind the file formats, the top view.
class SampleSink {
  public:
    virtual ~SampleSink() = default;
    // A thread seen for the first time, or renamed: `index` is what later samples refer to.
    virtual void thread(std::uint32_t index, const ThreadInfo& info) = 0;
    virtual void sample(const Sample& sample) = 0;
};

} // namespace spyglass::sampling
