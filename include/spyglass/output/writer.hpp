// The output formats of `spyglass record`, behind one small interface.
#pragma once

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "spyglass/error.hpp"
#include "spyglass/sampling/profile.hpp"

namespace spyglass::output {

enum class Format { flamegraph, folded, pprof, speedscope };

const char* format_name(Format format) noexcept;
std::optional<Format> parse_format(std::string_view name) noexcept;
// From the output file's extension: .svg/.html flame graph, .txt/.folded/.collapsed folded,
// .pb/.pb.gz/.pprof pprof, .json speedscope; anything else: flame graph.
Format format_for_path(std::string_view path) noexcept;
// Whether the format needs the time-ordered sample list (Profile::timeline).
bool needs_timeline(Format format) noexcept;

class ProfileWriter {
  public:
    virtual ~ProfileWriter() = default;
    // Writes the whole profile to `out`. Errors are I/O errors (disk full, closed pipe).
    virtual Result<void> write(const sampling::Profile& profile, std::FILE* out) = 0;
};

std::unique_ptr<ProfileWriter> make_writer(Format format);

// "function (file:line)" as every text format shows a frame (file shortened unless
// full_filenames; no line with --nolineno; markers as they are).
std::string frame_label(const sampling::Profile& profile, sampling::FrameId frame);
// Shortens a source path for display: after site-packages/ or dist-packages/, after
// lib/pythonX.Y/, else unchanged.
std::string short_filename(std::string_view path);

// The pseudo-frame that folded stacks and speedscope put on top of a sample whose thread was
// off-CPU (docs/output-formats.md).
inline constexpr std::string_view kOffCpuFrame = "[off-cpu]";

} // namespace spyglass::output
