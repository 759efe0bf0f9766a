// A recording, aggregated: what every output format is written from. Outputs read only this
// (and the frame/stack tables it points to), never the target.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <sys/types.h>

#include "spyglass/sampling/frame_table.hpp"

namespace spyglass::sampling {

enum class SampleMode : std::uint8_t {
    wall, // every thread every tick: running and waiting
    cpu,  // only samples whose thread was on a CPU
};

struct ThreadInfo {
    pid_t pid = 0;
    pid_t tid = 0;
    std::uint64_t thread_id = 0; // pthread_t / threading.get_ident()
    std::string name;            // threading.Thread.name, else the OS thread name
};

// Samples that share thread, stack, CPU state and GIL state, summed.
struct AggregatedSample {
    std::uint32_t thread = 0; // index into Profile::threads
    StackId stack = 0;        // innermost frame first
    bool on_cpu = false;      // the kernel had the thread running or runnable
    bool gil = false;         // the thread held the GIL
    std::uint64_t count = 0;  // number of samples
    std::uint64_t cpu_ns = 0; // CPU time the thread used in the intervals these samples ended
};

// Samples in time order, one thread's consecutive identical samples merged: for speedscope.
struct TimelineEntry {
    std::uint32_t thread = 0;
    StackId stack = 0;
    bool on_cpu = false;
    std::uint64_t start_ns = 0; // since the start of the recording
    std::uint32_t count = 0;    // consecutive samples of this thread with this stack and state
};

struct LabelOptions {
    bool full_filenames = false; // else shortened: site-packages/..., lib/pythonX.Y/..., cwd
    bool line_numbers = true;    // --nolineno turns them off
};

struct ProfileInfo {
    std::vector<std::string> command; // the launched command, or the target's command line
    std::vector<pid_t> pids;          // every process recorded
    std::string python_version;
    SampleMode mode = SampleMode::wall;
    bool gil_only = false;
    bool per_thread_roots = false;  // --threads: a root frame per thread
    bool per_process_roots = false; // more than one process: a root frame per pid
    double rate_hz = 100;
    std::uint64_t period_ns = 10'000'000;
    std::uint64_t start_unix_ns = 0;
    std::uint64_t duration_ns = 0;
    std::uint64_t samples = 0;    // thread samples taken (before --mode/--gil filtering)
    std::uint64_t ticks = 0;      // sampling passes
    std::uint64_t late_ticks = 0; // passes that came too late and were skipped
    std::uint64_t errors = 0;     // thread samples that could not be read completely
    LabelOptions labels;
};

struct Profile {
    const FrameTable* frames = nullptr;
    const StackTable* stacks = nullptr;
    std::vector<ThreadInfo> threads;
    std::vector<AggregatedSample> samples;
    std::vector<TimelineEntry> timeline; // empty unless it was asked for (speedscope)
    ProfileInfo info;
};

} // namespace spyglass::sampling
