// Reading a raw recording back (`spyglass report`): the file and block headers checked, the
// records replayed into a sink. The format itself (its version, its header, its byte-level
// pieces) is the writer's: spyglass/output/raw.hpp and raw_codec.hpp.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "spyglass/error.hpp"
#include "spyglass/model/frame_table.hpp"
#include "spyglass/model/sample.hpp"
#include "spyglass/output/raw.hpp"

namespace spyglass::output {

// How far a raw file could be read.
struct RawReadStatus {
    bool complete = false;        // its end record was read: the recording finished normally
    bool damaged = false;         // a block failed its checksum or did not decode (else: cut short)
    std::uint64_t good_bytes = 0; // where the last good block ends
    std::uint64_t file_bytes = 0;
    std::uint64_t blocks = 0; // good record blocks
    std::uint64_t samples = 0;
    std::uint64_t last_time_ns = 0;
    std::string problem; // what stopped the reading, when not complete
};

class RawReader {
  public:
    // Reads and checks the file header and the recording's header: a file that is not a raw
    // recording, or is of a newer version, is an error here; so is a directory or a device.
    // A regular file is read block by block; a pipe is read whole first (a replay reads it
    // twice), up to `max_stream_bytes`.
    static Result<std::unique_ptr<RawReader>> open(const std::string& path,
                                                   std::uint64_t max_stream_bytes);
    // `name` is what messages call it.
    static Result<std::unique_ptr<RawReader>>
    from_memory(std::string_view bytes, const std::string& name = "the raw recording");
    ~RawReader();
    RawReader(const RawReader&) = delete;
    RawReader& operator=(const RawReader&) = delete;

    [[nodiscard]] const RawHeader& header() const noexcept { return header_; }
    [[nodiscard]] const model::RecordingInfo& info() const noexcept { return info_; }

    // Replays the recording into `sink`: start, then threads and samples in the order they
    // were recorded, then finish, with the totals written at the end or, for a file cut
    // short, made from what was read. Whole blocks only: a block that does not check out and
    // everything after it are left out. Samples refer to frames() and stacks(), which hold
    // what the file defined (the same ids as the recording's tables, until a table reset).
    RawReadStatus replay(model::SampleSink& sink);

    // Every name each thread had, by thread index (one replay).
    std::vector<std::vector<std::string>> thread_names();

    [[nodiscard]] const model::FrameTable& frames() const noexcept { return frames_; }
    [[nodiscard]] const model::StackTable& stacks() const noexcept { return stacks_; }

  private:
    RawReader() = default;
    Result<void> read_headers(const std::string& name);

    std::vector<char> memory_; // from_memory's bytes (fmemopen reads them)
    std::FILE* file_ = nullptr;
    std::uint64_t data_offset_ = 0; // the first record block
    RawHeader header_;
    model::RecordingInfo info_;
    model::FrameTable frames_;
    model::StackTable stacks_;
};

// Whether `bytes` (a file's first bytes) start like a raw recording.
bool looks_like_raw(std::string_view bytes) noexcept;

} // namespace spyglass::output
