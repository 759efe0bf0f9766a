// What the command line asked for, as plain data: the commands take these, not CLI11 objects.
#pragma once

#include <string>
#include <vector>

#include <sys/types.h>

#include "spyglass/handoff/label_source.hpp"

namespace spyglass::cli {

struct DumpOptions {
    pid_t pid = 0;
    bool json = false;
    bool locals = false;
    bool blocking = false;
    bool nonblocking = false;  // py-spy's spelling of the default
    bool subprocesses = false; // also the Python processes among its descendants
    bool full_filenames = false;
    bool native = false;        // with each thread's native (C/C++) frames
    bool native_all = false;    // and the interpreter's own frames
    std::string waits = "full"; // --waits: full | kind
    bool no_waits = false;      // --no-waits
};

int run_dump(const DumpOptions& options);

// What record and top share: which process, how often, what to keep.
struct SamplingOptions {
    pid_t pid = 0;
    std::vector<std::string> command; // after "--": launch it
    double rate = 100;                // Hz
    double duration = 0;              // seconds; 0 = until Ctrl-C or the target exits
    std::string mode = "wall";        // wall | cpu
    bool gil = false;
    bool subprocesses = false;
    bool blocking = false;
    bool nonblocking = false; // asked for explicitly (py-spy's spelling); today's default
    bool idle = false;        // py-spy's --idle: include waiting threads, i.e. --mode wall
    bool function = false;
    bool nolineno = false;
    bool jitter = false;
    bool native = false;             // --native: native (C/C++) frames merged with the Python ones
    bool native_all = false;         // --native-all: and the interpreter's own frames
    std::string waits = "full";      // --waits: full | kind
    bool no_waits = false;           // --no-waits
    std::vector<std::string> labels; // --label NAME=VALUE: on every sample
    // Labels read from the target per sample, each source's flag's (--context NAME: "context").
    std::vector<sampling::LabelSourceSpec> label_sources;
    std::size_t table_limit = 0; // not an option: bounded tables for --window (Resolver)
};

struct RecordOptions {
    SamplingOptions sampling;
    std::string output;
    std::string format; // empty: from the output's extension
    bool threads = false;
    bool full_filenames = false;
    bool hide_progress = false;
    std::string raw;                       // --raw FILE: every sample, for report
    double window = 0;                     // --window SECONDS: one profile per window
    std::string keep;                      // --keep DURATION: delete older window files
    std::string push;                      // --push URL: Pyroscope-compatible ingest
    std::string app;                       // --app NAME (default: the target's program)
    std::vector<std::string> tags;         // --tag k=v
    std::vector<std::string> push_headers; // --push-header 'Name: value'
    double push_timeout = 10;              // seconds per request
};

int run_record(const RecordOptions& options);

struct TopOptions {
    SamplingOptions sampling;
    double delay = 1.0;   // seconds between refreshes
    bool once = false;    // no terminal UI: sample --duration seconds (default 5), print, exit
    bool lines = false;   // start aggregated by line instead of by function
    bool waiting = false; // start with the "Waiting on" view
    bool calls = false;   // follow calls: start with the calls view (durations per function)
    bool full_filenames = false;
};

int run_top(const TopOptions& options);

struct ReportOptions {
    std::string input;
    std::string output; // empty: beside the input, as a flame graph
    std::string format;
    std::string from, to;             // seconds from the start, or wall-clock times
    std::vector<std::string> threads; // names or TIDs
    std::vector<pid_t> pids;
    std::string mode; // empty: as recorded
    bool gil = false;
    bool function = false;
    bool nolineno = false;
    bool per_thread = false; // -t/--threads
    bool full_filenames = false;
    bool summary = false;
    std::vector<std::string> where; // --where NAME=VALUE: samples with every one of these labels
    bool calls = false;             // --calls: -f calls, the text table on standard output
    std::size_t top = 0;            // --top N: with -f calls, the N functions with most time
};

int run_report(const ReportOptions& options);

struct DiffOptions {
    std::string base, current;
    std::string output; // a differential flame graph (SVG)
    std::size_t top = 0;
    std::string mode = "wall";
    bool full_filenames = false;
    std::vector<std::string> where; // --where NAME=VALUE: in both, samples with these labels
};

int run_diff(const DiffOptions& options);

// Prints "spyglass: error: <message>" on one line to stderr.
void print_error(const std::string& message);

} // namespace spyglass::cli
