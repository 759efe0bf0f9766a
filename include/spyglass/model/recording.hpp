// What a recording is about and how it went: the session hands these to every sink (a start
// event with RecordingInfo, a finish event with RecordingTotals), so that no output depends on
// the command line copying fields around. Plain data: no layer below is visible from here.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <sys/types.h>

#include "spyglass/model/wait.hpp"

namespace spyglass::model {

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

// A process that starts being sampled (SampleSink::process): what its interpreter is.
struct ProcessInfo {
    pid_t pid = 0;
    std::string python_version; // "3.12.1" (micro 0 when discovery knew only the minor)
    std::string interpreter;    // the ELF object holding it, as the target maps it: the
                                // executable, or the libpython it loaded
};

// The start event: fixed for the whole recording.
struct RecordingInfo {
    std::vector<std::string> command; // the launched command, or the target's command line
    SampleMode mode = SampleMode::wall;
    bool gil_only = false;
    bool subprocesses = false;
    double rate_hz = 100;
    std::uint64_t period_ns = 10'000'000;
    std::uint64_t start_unix_ns = 0;
    WaitDetail waits = WaitDetail::full; // what the samples say of what threads waited for
};

// Thread pauses (a thread stopped for one read of its stack), summarised.
struct PauseSummary {
    std::uint64_t pauses = 0;
    std::uint64_t failed = 0;    // needed but not made
    std::uint64_t timed_out = 0; // of which: the thread did not stop in time
    std::uint64_t refused = 0;   // of which: ptrace refused
    std::uint64_t p50_ns = 0, p99_ns = 0, max_ns = 0;
    std::string refusal; // why ptrace refused, once it did
};

enum class RecordingEnd : std::uint8_t { running, duration, stopped, targets_exited };

// The finish event, and the progress reported while recording.
struct RecordingTotals {
    RecordingEnd end = RecordingEnd::running;
    std::uint64_t elapsed_ns = 0;
    std::uint64_t ticks = 0;      // sampling passes
    std::uint64_t late_ticks = 0; // ticks missed because the previous pass came too late
    std::uint64_t samples = 0;    // thread samples taken (after --mode / --gil)
    std::uint64_t errors = 0;     // of which could not be read completely
    std::uint64_t dropped = 0;    // captures the resolver could not take in time (not counted)
    // Of the errors: samples with a frame whose code object could not be read, and stacks whose
    // frame chain points back into itself (corrupt memory, both).
    std::uint64_t unreadable_code = 0;
    std::uint64_t looping_stacks = 0;
    // Threads left out because their /proc files could not be opened (out of descriptors),
    // and the limit on open descriptors then.
    std::uint64_t threads_without_descriptors = 0;
    std::uint64_t open_limit = 0;
    std::size_t processes = 0; // sampled now
    bool waiting = false;      // no Python process yet (launch mode)
    bool found_interpreter = false;
    std::string python_version; // of the first process sampled
    std::vector<pid_t> pids;    // every process sampled, in the order they came
    PauseSummary pauses;
};

} // namespace spyglass::model
