// A recording, aggregated: what every output format is written from. Outputs read only this
// (and the frame/stack tables it points to), never the target.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "spyglass/model/calls.hpp"
#include "spyglass/model/frame_table.hpp"
#include "spyglass/model/recording.hpp"
#include "spyglass/model/sample.hpp"

namespace spyglass::model {

// Samples that share a key, summed.
struct AggregatedSample {
    SampleKey key;
    std::uint64_t count = 0;     // samples taken
    std::uint64_t weight_ns = 0; // the time they stand for
    std::uint64_t cpu_ns = 0;    // CPU time the thread used in the intervals these samples ended
};

// Samples in time order, one thread's consecutive identical samples merged: for speedscope.
struct TimelineEntry {
    std::uint32_t thread = 0;
    StackId stack{};
    bool on_cpu = false;
    std::uint64_t start_ns = 0;  // since the start of the recording
    std::uint32_t count = 0;     // consecutive samples of this thread with this stack and state
    std::uint64_t weight_ns = 0; // the time they stand for
    WaitId wait{};               // what they waited for (the same for all of them)
};

struct LabelOptions {
    bool full_filenames = false; // else shortened: site-packages/..., lib/pythonX.Y/..., cwd
    bool line_numbers = true;    // --nolineno turns them off
};

// Display choices of the command line (not facts of the recording).
// How -f calls writes its table: chosen by -o's extension (.json, .svg, else text).
enum class CallsStyle : std::uint8_t { table, json, svg };

struct DisplayOptions {
    bool per_thread_roots = false; // --threads: a root frame per thread
    LabelOptions labels;
    CallsStyle calls_style = CallsStyle::table;
    std::size_t calls_top = 0; // -f calls / --calls: the slowest N functions (0: all)
};

struct Profile {
    const FrameTable* frames = nullptr;
    const StackTable* stacks = nullptr;
    std::vector<ProcessInfo> processes; // in the order they were first sampled
    std::vector<ThreadInfo> threads;
    std::vector<AggregatedSample> samples;
    std::vector<TimelineEntry> timeline; // empty unless it was asked for (speedscope)
    CallTable calls;                     // empty unless it was asked for (-f calls)
    RecordingInfo info;
    RecordingTotals totals;
    DisplayOptions display;

    // More than one process, or following them: a root frame per process.
    [[nodiscard]] bool per_process_roots() const noexcept {
        return totals.pids.size() > 1 || info.subprocesses;
    }
    // The weight of samples in sampling periods, for the formats that count samples (folded,
    // the flame graph): rounded, and at least 1 for samples that exist.
    [[nodiscard]] std::uint64_t periods(std::uint64_t weight_ns, std::uint64_t count) const;
};

} // namespace spyglass::model
