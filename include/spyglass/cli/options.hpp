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
};

int run_dump(const DumpOptions& options);

// Prints "spyglass: error: <message>" on one line to stderr.
void print_error(const std::string& message);

} // namespace spyglass::cli
