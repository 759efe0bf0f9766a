// A file written whole or not at all: what a reader of a window file (or of the output a
// SIGUSR1 wrote) sees is the previous version or the new one, never half of one.
#pragma once

#include <cstdio>
#include <functional>
#include <string>

#include "spyglass/error.hpp"

namespace spyglass::delivery {

// Writes `path` through `write` as OutputFile writes a recording's output (output_path.hpp's
// rule): a regular file through a temporary file in the same directory, flushed, fsynced and
// renamed over it; a FIFO or a character device in place; another user's link in a sticky
// world-writable directory refused. On any error the temporary file is removed and a regular
// `path` is left as it was. "-" writes to standard output.
Result<void> write_file_atomically(const std::string& path,
                                   const std::function<Result<void>(std::FILE*)>& write);

} // namespace spyglass::delivery
