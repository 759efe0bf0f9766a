// The table of output formats (spyglass/output/formats.hpp) is consistent: every Format has one
// row, names and extensions are unique, and the lookups and the words and sentences written
// from it (--format's choices and help, the man page, completions) name every format.
#include <algorithm>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "spyglass/output/formats.hpp"
#include "spyglass/output/writer.hpp"

namespace {

using namespace spyglass;
using output::Format;
using output::FormatInfo;
using output::kFormats;

constexpr Format kEveryFormat[] = {Format::flamegraph, Format::folded,      Format::pprof,
                                   Format::speedscope, Format::chrometrace, Format::calls};

TEST(FormatTable, EveryFormatHasOneRow) {
    static_assert(std::size(kEveryFormat) == kFormats.size());
    for (Format format : kEveryFormat) {
        int rows = 0;
        for (const FormatInfo& info : kFormats)
            rows += info.format == format ? 1 : 0;
        EXPECT_EQ(rows, 1) << static_cast<int>(format);
        EXPECT_EQ(output::format_info(format).format, format);
    }
}

TEST(FormatTable, WordsAndExtensionsAreUnique) {
    std::set<std::string_view> words, extensions;
    for (const FormatInfo& info : kFormats) {
        for (std::string_view word : {info.name, info.pyspy_alias, info.other_alias})
            if (!word.empty()) {
                EXPECT_TRUE(words.insert(word).second) << word;
            }
        EXPECT_FALSE(info.description.empty()) << info.name;
        EXPECT_FALSE(info.extensions[0].empty()) << info.name;
        EXPECT_NE(info.make_writer, nullptr) << info.name;
        for (std::string_view extension : info.extensions)
            if (!extension.empty()) {
                EXPECT_EQ(extension.front(), '.') << extension;
                EXPECT_TRUE(extensions.insert(extension).second) << extension;
            }
    }
}

TEST(FormatTable, LookupsRoundTripEveryRow) {
    for (const FormatInfo& info : kFormats) {
        EXPECT_EQ(output::format_name(info.format), info.name);
        for (std::string_view word : {info.name, info.pyspy_alias, info.other_alias})
            if (!word.empty()) {
                EXPECT_EQ(output::parse_format(word), info.format) << word;
            }
        for (std::string_view extension : info.extensions)
            if (!extension.empty()) {
                EXPECT_EQ(output::format_for_path("dir/out" + std::string(extension)), info.format)
                    << extension;
            }
        EXPECT_EQ(
            output::format_for_path("out." + std::string(output::default_extension(info.format))),
            info.format);
        EXPECT_EQ(output::needs_timeline(info.format), info.needs_timeline);
        EXPECT_EQ(output::needs_calls(info.format), info.needs_calls);
        EXPECT_NE(output::make_writer(info.format), nullptr) << info.name;
    }
    EXPECT_EQ(output::format_for_path("out.unknown"), output::kDefaultFormat);
}

TEST(FormatTable, CommandLineWordsNameEveryFormat) {
    const std::vector<std::string> report = output::format_words(false);
    const std::vector<std::string> record = output::format_words(true);
    const std::string names = output::format_names_text(true);
    const std::string unknown = output::unknown_format_message("x");
    const std::string described = output::format_descriptions_text("or");
    for (const FormatInfo& info : kFormats) {
        const std::string name(info.name);
        EXPECT_EQ(std::count(report.begin(), report.end(), name), 1) << name;
        EXPECT_EQ(std::count(record.begin(), record.end(), name), 1) << name;
        if (!info.pyspy_alias.empty()) {
            EXPECT_EQ(std::count(record.begin(), record.end(), info.pyspy_alias), 1);
        }
        EXPECT_NE(names.find(name), std::string::npos) << name;
        EXPECT_NE(unknown.find(name), std::string::npos) << name;
        EXPECT_NE(described.find(info.description), std::string::npos) << name;
    }
    EXPECT_EQ(report.size(), kFormats.size());
    // The words the help, the completions (from the IsMember set) and the man page show.
    EXPECT_EQ(names, "flamegraph, folded (or raw), pprof, speedscope, chrometrace or calls");
    EXPECT_EQ(unknown, "unknown format x: use flamegraph, folded, pprof, speedscope, "
                       "chrometrace or calls");
    EXPECT_EQ(described, "flame graph, folded stacks, pprof, speedscope, Chrome trace or call "
                         "durations");
}

// -f calls is picked by its own extension only: .json, .svg and .txt belong to other formats,
// and pick the calls table's style instead (-f calls -o calls.json).
TEST(FormatTable, CallsFormat) {
    EXPECT_EQ(output::parse_format("calls"), Format::calls);
    EXPECT_EQ(output::format_for_path("out.calls"), Format::calls);
    EXPECT_EQ(output::format_for_path("calls.json"), Format::speedscope);
    EXPECT_EQ(output::format_for_path("calls.txt"), Format::folded);
    EXPECT_EQ(output::format_for_path("calls.svg"), Format::flamegraph);
    EXPECT_EQ(output::default_extension(Format::calls), "calls");
    EXPECT_TRUE(output::needs_calls(Format::calls));
    EXPECT_FALSE(output::needs_timeline(Format::calls));
    for (Format format : kEveryFormat)
        if (format != Format::calls) {
            EXPECT_FALSE(output::needs_calls(format)) << output::format_name(format);
        }
}

} // namespace
