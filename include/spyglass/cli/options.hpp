// What the command line asked for, as plain data: the commands take these, not CLI11 objects.
#pragma once

#include <string>
#include <vector>

#include <sys/types.h>

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
    bool native = false;        // --native: native (C/C++) frames merged with the Python ones
    bool native_all = false;    // --native-all: and the interpreter's own frames
    std::string waits = "full"; // --waits: full | kind
    bool no_waits = false;      // --no-waits
};

struct RecordOptions {
    SamplingOptions sampling;
    std::string output;
    std::string format; // empty: from the output's extension
    bool threads = false;
    bool full_filenames = false;
    bool hide_progress = false;
};

int run_record(const RecordOptions& options);

struct TopOptions {
    SamplingOptions sampling;
    double delay = 1.0;   // seconds between refreshes
    bool once = false;    // no terminal UI: sample --duration seconds (default 5), print, exit
    bool lines = false;   // start aggregated by line instead of by function
    bool waiting = false; // start with the "Waiting on" view
    bool full_filenames = false;
};

int run_top(const TopOptions& options);

// Prints "spyglass: error: <message>" on one line to stderr.
void print_error(const std::string& message);

} // namespace spyglass::cli
