// Profiles read back from files, for `spyglass diff`: pprof (gzipped or not, spyglass's or
// another tool's), raw recordings, and folded stacks. Each becomes a model::Profile with its
// own tables, so that the same labels come out of it as out of the recording it was made from.
// Inputs are bounded: a directory or a device is refused, and what is held in memory whole
// (a pprof or folded file, a decompressed pprof, anything read from a pipe) stops at a limit.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "spyglass/error.hpp"
#include "spyglass/input/raw_reader.hpp"
#include "spyglass/model/aggregator.hpp"
#include "spyglass/model/profile.hpp"
#include "spyglass/model/projector.hpp"
#include "spyglass/model/select.hpp"

namespace spyglass::output {

// The most bytes of one input held in memory whole, unless SPYGLASS_MAX_INPUT_MB says more
// (docs/reliability-input.md). A raw recording in a regular file is read block by block and
// may be larger.
inline constexpr std::uint64_t kDefaultMaxInputBytes = 256ull << 20;

// An input file, opened for reading: a regular file (of `size` bytes when opened) or a
// stream (a pipe, a FIFO, a socket). A directory or a device is an error: /dev/zero never
// ends, and a terminal would wait for typing.
class InputFile {
  public:
    static Result<InputFile> open(const std::string& path);
    InputFile(InputFile&& other) noexcept;
    InputFile& operator=(InputFile&& other) = delete;
    InputFile(const InputFile&) = delete;
    ~InputFile();

    [[nodiscard]] int fd() const noexcept { return fd_; }
    [[nodiscard]] bool regular() const noexcept { return regular_; }
    [[nodiscard]] std::uint64_t size() const noexcept { return size_; }
    // The descriptor becomes the caller's.
    int release() noexcept;
    // The first `n` bytes (fewer at the end).
    Result<std::string> read_head(const std::string& path, std::size_t n);
    // All of it after `bytes` (what was read before), at most `max_bytes` in all (more is an
    // error that says `what` is read whole).
    Result<std::string> read_all(const std::string& path, std::uint64_t max_bytes,
                                 std::string_view what, std::string bytes = {});

  private:
    InputFile(int fd, bool regular, std::uint64_t size) : fd_(fd), regular_(regular), size_(size) {}
    int fd_ = -1;
    bool regular_ = false;
    std::uint64_t size_ = 0;
};

// What `spyglass report` makes of a raw recording: the samples a selection keeps (a slice,
// threads, processes, on-CPU or GIL samples), projected as -F and --nolineno say, aggregated.
class SelectedProfile {
  public:
    // `names`: every name of each thread (RawReader::thread_names), for a --thread by name.
    SelectedProfile(RawReader& reader, model::Selection selection,
                    std::vector<std::vector<std::string>> names, model::FrameTransform transform,
                    bool keep_timeline);
    ~SelectedProfile();
    SelectedProfile(const SelectedProfile&) = delete;
    SelectedProfile& operator=(const SelectedProfile&) = delete;

    // Follow calls too (-f calls, report --calls): Profile::calls. Before replay().
    void track_calls(bool per_thread);
    // Replays the whole recording through the selection (once).
    RawReadStatus replay();
    // Refers to the reader's tables, or this object's own once projected: keep both alive.
    [[nodiscard]] model::Profile profile(const model::DisplayOptions& display) const;
    // The samples the selection kept.
    [[nodiscard]] std::uint64_t kept() const noexcept;

  private:
    RawReader& reader_;
    std::unique_ptr<model::ProjectingSink> projector_;
    std::unique_ptr<model::Aggregator> aggregator_;
    std::unique_ptr<model::SelectingSink> select_;
};

struct LoadedProfile {
    std::string kind; // "pprof", "raw" or "folded"
    std::unique_ptr<RawReader> raw;
    model::FrameTable frames;
    model::StackTable stacks;
    model::Profile profile; // refers to the tables above, or the raw reader's
    std::string warning;    // a raw recording that was cut, and so on
};

// `cpu_only`: only the samples of threads that were on a CPU (pprof's state label, folded
// stacks without the [off-cpu] frame). `max_bytes`: what one input may hold in memory.
// `where`: only the samples with every one of these labels (raw and pprof; folded stacks have
// none: an error).
Result<std::unique_ptr<LoadedProfile>> load_profile(const std::string& path, bool cpu_only,
                                                    const model::DisplayOptions& display,
                                                    std::uint64_t max_bytes = kDefaultMaxInputBytes,
                                                    std::span<const model::LabelText> where = {});
// The same from the input's bytes (named `name` in messages).
Result<std::unique_ptr<LoadedProfile>>
load_profile_bytes(const std::string& name, const std::string& bytes, bool cpu_only,
                   const model::DisplayOptions& display,
                   std::uint64_t max_bytes = kDefaultMaxInputBytes,
                   std::span<const model::LabelText> where = {});

} // namespace spyglass::output
