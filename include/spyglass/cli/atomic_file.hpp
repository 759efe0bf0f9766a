// A file written whole or not at all: what a reader of a window file (or of the output a
// SIGUSR1 wrote) sees is the previous version or the new one, never half of one.
#pragma once

#include <cstdio>
#include <functional>
#include <string>

#include "spyglass/error.hpp"

namespace spyglass::cli {

// Writes `path` through `write` into a temporary file in the same directory (a rename never
// crosses file systems), flushes and fsyncs it, then renames it over `path`. On any error the
// temporary file is removed and `path` is left as it was. "-" writes to standard output.
Result<void> write_file_atomically(const std::string& path,
                                   const std::function<Result<void>(std::FILE*)>& write);

} // namespace spyglass::cli
