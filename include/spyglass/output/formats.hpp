// The output formats of `spyglass record` and `spyglass report`, in one table: their names,
// file extensions and writers. The command line's --format choices and help, the shell
// completions, the man page and the default file names are all written from it, so a new
// format is one row here (and its writer). docs/output-formats.md describes each format.
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace spyglass::output {

enum class Format { flamegraph, folded, pprof, speedscope, chrometrace, calls };

class ProfileWriter;

std::unique_ptr<ProfileWriter> make_flamegraph_writer();
std::unique_ptr<ProfileWriter> make_folded_writer();
std::unique_ptr<ProfileWriter> make_pprof_writer();
std::unique_ptr<ProfileWriter> make_speedscope_writer();
std::unique_ptr<ProfileWriter> make_chrometrace_writer();
std::unique_ptr<ProfileWriter> make_calls_writer();

struct FormatInfo {
    Format format;
    std::string_view name;        // --format's word; "wrote NAME to ..."
    std::string_view pyspy_alias; // py-spy's word, which record's --format takes too, or ""
    std::string_view other_alias; // a word parse_format takes besides (not on the CLI), or ""
    std::string_view description; // what people call it: "flame graph"
    std::string_view viewer;      // where to open it, for the man page, or ""
    // Extensions (with the dot) that pick it from -o's name; the first names a default file.
    std::array<std::string_view, 3> extensions;
    bool needs_timeline; // needs the time-ordered sample list (Profile::timeline)
    bool needs_calls;    // needs the calls followed through the samples (Profile::calls)
    std::unique_ptr<ProfileWriter> (*make_writer)();
};

inline constexpr std::array<FormatInfo, 6> kFormats = {{
    {Format::flamegraph,
     "flamegraph",
     "",
     "svg",
     "flame graph",
     "",
     {".svg", ".html"},
     false,
     false,
     make_flamegraph_writer},
    {Format::folded,
     "folded",
     "raw",
     "collapsed",
     "folded stacks",
     "",
     {".txt", ".folded", ".collapsed"},
     false,
     false,
     make_folded_writer},
    {Format::pprof,
     "pprof",
     "",
     "",
     "pprof",
     "",
     {".pb.gz", ".pb", ".pprof"},
     false,
     false,
     make_pprof_writer},
    {Format::speedscope,
     "speedscope",
     "",
     "",
     "speedscope",
     "",
     {".json"},
     true,
     false,
     make_speedscope_writer},
    {Format::chrometrace,
     "chrometrace",
     "",
     "",
     "Chrome trace",
     "Perfetto, chrome://tracing",
     {".trace.json"},
     true,
     false,
     make_chrometrace_writer},
    // A table of each function's calls (docs/output-formats.md): -o's extension picks its style
    // (.json, .svg or .html, else text), so only its own extension picks the format itself.
    {Format::calls,
     "calls",
     "",
     "",
     "call durations",
     "",
     {".calls"},
     false,
     true,
     make_calls_writer},
}};

// Without -f and -o's extension naming none: a flame graph.
inline constexpr Format kDefaultFormat = Format::flamegraph;

const FormatInfo& format_info(Format format) noexcept;
const char* format_name(Format format) noexcept;
// A format's name, py-spy alias or other alias ("svg", "collapsed"); exact case.
std::optional<Format> parse_format(std::string_view name) noexcept;
// From the output file's extension (any case), the longest that matches (.trace.json before
// .json); none: kDefaultFormat.
Format format_for_path(std::string_view path) noexcept;
bool needs_timeline(Format format) noexcept;
bool needs_calls(Format format) noexcept;
// The extension of a default file name, without the dot ("pb.gz").
std::string_view default_extension(Format format) noexcept;

// The words --format takes: every name, and with py-spy's aliases (record) those after their
// format's name.
std::vector<std::string> format_words(bool with_pyspy_aliases);
// The names for a sentence: "flamegraph, folded (or raw), pprof, speedscope, chrometrace or
// calls".
std::string format_names_text(bool with_pyspy_aliases);
// "flame graph, folded stacks, pprof, speedscope, Chrome trace or call durations"
// (`last_joiner` "or").
std::string format_descriptions_text(std::string_view last_joiner);
// "unknown format NAME: use flamegraph, folded, pprof, speedscope, chrometrace or calls".
std::string unknown_format_message(std::string_view name);

} // namespace spyglass::output
