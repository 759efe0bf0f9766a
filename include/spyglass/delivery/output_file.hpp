// The output file of a recording, opened before anything is attached so that an unwritable
// path is reported before the recording starts, not after it.
//
// Where it goes follows output_path.hpp's rule (one for every output): a regular file (new or
// existing) is written to a temporary file beside it, `<dir>/.<name>.spyglass-<pid>-<random>.tmp`,
// and renamed over it only once the whole profile is written and synced: an old file is never
// damaged, a partial profile never sits under the real name (a SIGKILLed spyglass leaves at
// most the temporary file). Through a symbolic link we may follow, the file the link points to
// is replaced and the link stays; another user's link in a sticky world-writable directory is
// refused. What rename must not replace is written in place: a FIFO (opened without blocking:
// "no reader on FIFO X" when nobody reads it), a character device (/dev/null; /dev/full is
// probed with one byte), a descriptor path (/dev/stdout, /dev/fd/N, /proc/self/fd/N), and "-",
// standard output. docs/reliability.md says what each fault does to each kind.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

#include "spyglass/delivery/output_path.hpp"
#include "spyglass/error.hpp"

namespace spyglass::delivery {

class OutputFile {
  public:
    // What the file holds: the profile (-o; an abort says what became of it), or the raw
    // recording written beside it (--raw; an abort removes its temporary file too), or a file
    // written whole at once (write_file_atomically: an abort leaves the others' cleanup as is).
    enum class Role : std::uint8_t { profile, raw_recording, whole_file };
    // "-" is standard output. Probes what can be probed: the directory takes a new file, the
    // disk has room for a byte, a FIFO has a reader, /dev/full is full.
    static Result<OutputFile> open(const std::string& path, Role role = Role::profile);
    OutputFile(OutputFile&& other) noexcept;
    OutputFile& operator=(OutputFile&&) = delete;
    ~OutputFile(); // removes the temporary file if commit() was never called

    // A stream for the profile, from its start.
    Result<std::FILE*> begin_write();
    // The descriptor itself, for a writer that makes its own write(2) calls (the raw
    // recording's blocks); commit() and keep_partial() close it.
    Result<int> begin_write_descriptor();
    // After a failed write: leaves the temporary file as it is (a raw recording is readable up
    // to its last whole block) and returns its name; the destination is unchanged. Empty when
    // the output was written directly (there is nothing else to keep).
    std::string keep_partial();
    // Flushes, syncs and closes; renames the temporary file into place.
    Result<void> commit();
    // commit() if `written` succeeded; else removes the temporary file. On failure the message
    // says what became of the destination ("prof.svg is unchanged").
    Result<void> finish(Result<void> written);
    [[nodiscard]] const std::string& path() const noexcept { return path_; }

  private:
    enum class Kind : std::uint8_t { temporary, direct, standard_output };
    OutputFile() = default;
    void discard() noexcept;
    void abort_cleanup(std::string_view remove_path, std::string_view outcome) const;
    void clear_cleanup() const;
    [[nodiscard]] std::string shown() const;   // the path for messages
    [[nodiscard]] std::string outcome() const; // what a failure or abort left at the path

    std::string path_;        // as given
    Destination destination_; // what is written or replaced
    TemporaryFile temporary_; // Kind::temporary: the file being written
    int fd_ = -1;
    std::FILE* stream_ = nullptr;
    Kind kind_ = Kind::temporary;
    Role role_ = Role::profile;
    bool existed_ = false; // the destination was a file before
    bool started_ = false; // begin_write() was called (a direct output got bytes)
    bool committed_ = false;
};

} // namespace spyglass::delivery
