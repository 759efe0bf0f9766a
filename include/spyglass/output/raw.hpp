// The raw recording (`--raw FILE`): every sample as it was taken, streamed to a compact,
// versioned, block-structured and checksummed file that `spyglass report` renders later into
// any format, any slice. docs/raw-format.md describes it byte by byte.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <sys/types.h>

#include "spyglass/error.hpp"
#include "spyglass/model/frame_table.hpp"
#include "spyglass/model/sample.hpp"

namespace spyglass::output {

// The version this spyglass writes and the newest it reads. A file of a newer version is
// refused, never guessed at.
// Version 2 added a native frame's module and the modules' build-ids, version 3 the process
// record (each process's Python version, also in a file cut before its end), version 4 the
// samples' label sets; versions 1 to 3 are read.
inline constexpr std::uint16_t kRawFormatVersion = 5;

// What a raw file says about itself besides the recording's start event.
struct RawHeader {
    std::uint16_t format_version = kRawFormatVersion;
    std::string spyglass_version;
    std::string host;
    pid_t target_pid = 0; // --pid; 0 for a launched command
};

// A sink that writes the raw file. Blocks go out with write(2) when they fill up and at least
// once a second of recording, so a file cut by SIGKILL or a full disk is whole up to its last
// block. A write error stops the writing (the recording goes on) and is kept for error().
class RawWriter final : public model::SampleSink {
  public:
    // "-" is standard output.
    static Result<std::unique_ptr<RawWriter>> open(const std::string& path,
                                                   const model::FrameTable& frames,
                                                   const model::StackTable& stacks,
                                                   RawHeader header);
    // Writes to `fd`, which stays the caller's (record's temporary file beside the
    // destination); `shown` names it in messages.
    static Result<std::unique_ptr<RawWriter>> to_descriptor(int fd, std::string shown,
                                                            const model::FrameTable& frames,
                                                            const model::StackTable& stacks,
                                                            RawHeader header);
    ~RawWriter() override;
    RawWriter(const RawWriter&) = delete;
    RawWriter& operator=(const RawWriter&) = delete;

    void start(const model::RecordingInfo& info) override;
    void process(const model::ProcessInfo& info) override;
    void thread(std::uint32_t index, const model::ThreadInfo& info) override;
    void sample(const model::Sample& sample) override;
    void advance(std::uint64_t time_ns) override;
    void tables_reset() override;
    void finish(const model::RecordingTotals& totals) override;

    [[nodiscard]] const std::optional<Error>& error() const noexcept { return error_; }
    [[nodiscard]] std::uint64_t bytes_written() const noexcept { return bytes_written_; }
    [[nodiscard]] const std::string& path() const noexcept { return path_; }

    struct Impl;

  private:
    RawWriter(std::string path, int fd, const model::FrameTable& frames,
              const model::StackTable& stacks, RawHeader header);
    void define_new_entries();
    void flush_block();
    void write_block(std::uint8_t type, std::uint8_t codec, std::string_view payload,
                     std::size_t raw_size);

    std::string path_;
    int fd_;
    bool owns_fd_ = true;
    const model::FrameTable& frames_;
    const model::StackTable& stacks_;
    RawHeader header_;
    std::unique_ptr<Impl> impl_;
    std::optional<Error> error_;
    std::uint64_t bytes_written_ = 0;
};

} // namespace spyglass::output
