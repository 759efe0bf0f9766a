// One thread, one tick, resolved: what the session hands to its sinks, and the sink interface.
#pragma once

#include <cstdint>
#include <functional>

#include "spyglass/model/frame_table.hpp"
#include "spyglass/model/recording.hpp"
#include "spyglass/model/wait.hpp"

namespace spyglass::model {

enum class StackStatus : std::uint8_t {
    ok,
    torn,      // the thread kept changing its stack while it was read: a marker frame
    truncated, // the chain could not be read to its end: frames so far + a marker
};

[[nodiscard]] constexpr const char* stack_status_name(StackStatus status) noexcept {
    return status == StackStatus::ok ? "ok" : status == StackStatus::torn ? "torn" : "truncated";
}

// What samples are summed by, in every sink: defined once, hashed once.
struct SampleKey {
    std::uint32_t thread = 0; // index in the session's thread table (SampleSink::thread)
    StackId stack{};          // innermost frame first
    bool on_cpu = false;      // the kernel had the thread running or runnable
    bool gil = false;         // the thread held the GIL
    WaitId wait{};            // what an off-CPU thread waited for (0: not known)
    LabelSetId labels{};      // the sample's labels (0: none)
    friend bool operator==(const SampleKey&, const SampleKey&) = default;
};

struct SampleKeyHash {
    std::size_t operator()(const SampleKey& key) const noexcept {
        std::uint64_t h = (std::uint64_t{key.thread} << 34) ^
                          (std::uint64_t{key.stack.value} << 2) ^ (key.on_cpu ? 1u : 0u) ^
                          (key.gil ? 2u : 0u) ^
                          (std::uint64_t{key.wait.value} * 0xff51afd7ed558ccdull) ^
                          (std::uint64_t{key.labels.value} * 0xc4ceb9fe1a85ec53ull);
        return static_cast<std::size_t>((h * 0x9E3779B97F4A7C15ull) >> 17);
    }
};

// Sample::new_calls when the sample cannot say which of its calls are new (a torn or truncated
// stack, a raw recording of format version 4 or older).
inline constexpr std::uint16_t kCallsUnknown = 0xFFFF;

struct Sample {
    SampleKey key;
    std::uint64_t time_ns = 0;   // since the recording started
    std::uint64_t weight_ns = 0; // the time it stands for: since the thread's previous look
    std::uint64_t cpu_ns = 0;    // CPU time the thread used since its previous sample
    StackStatus status = StackStatus::ok;
    // How many of the stack's innermost Python frames are calls begun since the thread's
    // previous sample; the others (toward the root) are the calls that sample saw, still running
    // (docs/calls.md). The thread's first sample: all of them.
    std::uint16_t new_calls = kCallsUnknown;
};

// Where samples go: the aggregator behind the file formats, the top view. All calls come from
// one thread (the resolver's), in this order: start, then processes, threads and samples, then
// finish.
class SampleSink {
  public:
    virtual ~SampleSink() = default;
    virtual void start(const RecordingInfo&) {}
    // A process starts being sampled: sent before any of its threads and samples (again for a
    // process that exec'd and is sampled anew).
    virtual void process(const ProcessInfo& /*info*/) {}
    // A thread seen for the first time, or renamed: `index` is what later samples refer to.
    virtual void thread(std::uint32_t index, const ThreadInfo& info) = 0;
    virtual void sample(const Sample& sample) = 0;
    // The recording has reached `time_ns` (since its start): no sample before it is still to
    // come. Sent every 100 ms or so, samples or not, so that a sink that cuts time into
    // windows, or flushes on request, does so even while every thread is left out (--mode cpu).
    virtual void advance(std::uint64_t /*time_ns*/) {}
    // The frame and stack tables were emptied to bound memory (long recordings with --window):
    // every id given before means nothing after this call. Sent only to sinks that expect it.
    virtual void tables_reset() {}
    virtual void finish(const RecordingTotals&) {}
};

} // namespace spyglass::model
