// The output file of a recording, opened before anything is attached so that an unwritable
// path is reported before the recording starts, not after it.
#pragma once

#include <cstdio>
#include <string>

#include "spyglass/error.hpp"

namespace spyglass::cli {

class OutputFile {
  public:
    // "-" is standard output. The file is created if missing but not truncated yet.
    static Result<OutputFile> open(const std::string& path);
    OutputFile(OutputFile&& other) noexcept;
    OutputFile& operator=(OutputFile&&) = delete;
    ~OutputFile(); // removes a file it created if commit() was never called

    // Empties the file and returns a stream positioned at its start.
    Result<std::FILE*> begin_write();
    // Flushes and closes; fails on a write error (disk full).
    Result<void> commit();
    [[nodiscard]] const std::string& path() const noexcept { return path_; }

  private:
    OutputFile() = default;
    std::string path_;
    std::FILE* stream_ = nullptr;
    bool created_ = false;
    bool committed_ = false;
    bool is_stdout_ = false;
};

} // namespace spyglass::cli
