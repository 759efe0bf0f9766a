// Golden files: the exact output of every format for the synthetic profile of
// tests/tools/output_fixture.hpp (three threads, on/off-CPU, a marker, non-ASCII and
// XML/JSON-special names, --threads roots), in tests/golden/output/.
//
// After an intended change of a format, regenerate them and review the diff:
//
//   SPYGLASS_UPDATE_GOLDEN=1 build-output/tests/spyglass_unit_tests --gtest_filter='OutputGolden.*'
//
// Without SPYGLASS_UPDATE_GOLDEN the tests fail on any difference (and on a missing golden
// file), writing what they got to gtest's temporary directory for diffing.
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "../tools/output_fixture.hpp"
#include "profile.pb.h"
#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include "spyglass/output/writer.hpp"

namespace {

using namespace spyglass;
using output::Format;

std::string golden_path(const std::string& name) {
    return std::string(SPYGLASS_SOURCE_DIR) + "/tests/golden/output/" + name;
}

bool updating() {
    const char* flag = std::getenv("SPYGLASS_UPDATE_GOLDEN");
    return flag != nullptr && *flag != '\0' && std::string(flag) != "0";
}

void expect_golden(const std::string& name, const std::string& actual) {
    std::string path = golden_path(name);
    if (updating()) {
        std::ofstream(path, std::ios::binary) << actual;
        std::printf("updated %s\n", path.c_str());
        return;
    }
    std::ifstream in(path, std::ios::binary);
    ASSERT_TRUE(in.good()) << "no golden file " << path
                           << " (create it with SPYGLASS_UPDATE_GOLDEN=1)";
    std::stringstream expected;
    expected << in.rdbuf();
    if (expected.str() != actual) {
        std::string got = ::testing::TempDir();
        if (got.empty() || got.back() != '/') got.push_back('/');
        got += name;
        std::ofstream(got, std::ios::binary) << actual;
        ADD_FAILURE() << name << " differs from its golden file; got " << got << "\n  diff -u "
                      << path << " " << got
                      << "\n(if the change is intended: SPYGLASS_UPDATE_GOLDEN=1)";
    }
}

// The decoded protobuf as text: every field, string indices as they are, strings as UTF-8.
std::string decoded_pprof(const std::string& gzipped) {
    perftools::profiles::Profile profile;
    EXPECT_TRUE(profile.ParseFromString(spyglass::test_support::gunzip(gzipped)));
    google::protobuf::TextFormat::Printer printer;
    printer.SetUseUtf8StringEscaping(true);
    std::string text;
    printer.PrintToString(profile, &text);
    return text;
}

TEST(OutputGolden, Folded) {
    auto fixture = spyglass::test_support::make_output_fixture();
    expect_golden("folded.txt",
                  spyglass::test_support::write_to_string(fixture->profile, Format::folded));
}

TEST(OutputGolden, FoldedWithProcessRootsFullPathsNoLines) {
    auto fixture = spyglass::test_support::make_output_fixture();
    fixture->profile.info.subprocesses = true;
    fixture->profile.display.labels.full_filenames = true;
    fixture->profile.display.labels.line_numbers = false;
    expect_golden("folded-processes.txt",
                  spyglass::test_support::write_to_string(fixture->profile, Format::folded));
}

TEST(OutputGolden, Pprof) {
    auto fixture = spyglass::test_support::make_output_fixture();
    expect_golden("pprof.txtpb", decoded_pprof(spyglass::test_support::write_to_string(
                                     fixture->profile, Format::pprof)));
}

TEST(OutputGolden, PprofCpuMode) {
    auto fixture = spyglass::test_support::make_output_fixture();
    model::Profile& profile = fixture->profile;
    profile.info.mode = model::SampleMode::cpu;
    std::erase_if(profile.samples, [](const auto& s) { return !s.key.on_cpu; });
    expect_golden("pprof-cpu.txtpb",
                  decoded_pprof(spyglass::test_support::write_to_string(profile, Format::pprof)));
}

TEST(OutputGolden, SpeedscopeFromTheTimeline) {
    auto fixture = spyglass::test_support::make_output_fixture(true);
    ASSERT_FALSE(fixture->profile.timeline.empty());
    expect_golden("speedscope.json",
                  spyglass::test_support::write_to_string(fixture->profile, Format::speedscope));
}

TEST(OutputGolden, SpeedscopeFromTheSamples) {
    auto fixture = spyglass::test_support::make_output_fixture(false);
    ASSERT_TRUE(fixture->profile.timeline.empty());
    expect_golden("speedscope-samples.json",
                  spyglass::test_support::write_to_string(fixture->profile, Format::speedscope));
}

// Wait reasons in every format: the pseudo-frames of folded, speedscope and the flame graph,
// pprof's labels, the Chrome trace's args.
TEST(OutputGolden, Waits) {
    auto fixture = spyglass::test_support::make_wait_fixture();
    const model::Profile& profile = fixture->profile;
    expect_golden("folded-waits.txt",
                  spyglass::test_support::write_to_string(profile, Format::folded));
    expect_golden("pprof-waits.txtpb",
                  decoded_pprof(spyglass::test_support::write_to_string(profile, Format::pprof)));
    expect_golden("speedscope-waits.json",
                  spyglass::test_support::write_to_string(profile, Format::speedscope));
    expect_golden("chrometrace-waits.json",
                  spyglass::test_support::write_to_string(profile, Format::chrometrace));
    expect_golden("flamegraph-waits.svg",
                  spyglass::test_support::write_to_string(profile, Format::flamegraph));
}

TEST(OutputGolden, Flamegraph) {
    auto fixture = spyglass::test_support::make_output_fixture();
    expect_golden("flamegraph.svg",
                  spyglass::test_support::write_to_string(fixture->profile, Format::flamegraph));
}

} // namespace
