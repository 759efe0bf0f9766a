// The walker and the reader over memory captured from real interpreters (tests/unit/data/
// fixtures, made by scripts/capture_fixtures.py): a known stack, read with the compiled-in
// layout table of its version, must come out as the interpreter itself reported it. Unlike the
// fakes of fake_python.hpp, these bytes were not laid out with the table under test.
#include <algorithm>
#include <filesystem>

#include "../tools/fixture_file.hpp"
#include <gtest/gtest.h>

#include "spyglass/process/fake_memory.hpp"
#include "spyglass/python/interpreter.hpp"
#include "spyglass/python/layout.hpp"
#include "spyglass/sampling/stack_reader.hpp"

namespace {

namespace fs = std::filesystem;
using spyglass::test_support::Fixture;

fs::path fixture_dir() {
    return fs::path(SPYGLASS_SOURCE_DIR) / "tests" / "unit" / "data" / "fixtures";
}

std::vector<std::string> fixture_names() {
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(fixture_dir()))
        if (entry.path().extension() == ".fixture") names.push_back(entry.path().stem().string());
    std::sort(names.begin(), names.end());
    return names;
}

class CapturedStack : public ::testing::TestWithParam<std::string> {};

TEST_P(CapturedStack, ReadsAsTheInterpreterReportedIt) {
    Fixture fixture;
    std::string error;
    ASSERT_TRUE(spyglass::test_support::read_fixture(
        (fixture_dir() / (GetParam() + ".fixture")).string(), fixture, error))
        << error;
    const spyglass::python::Layout* layout =
        spyglass::python::layout_for(fixture.major, fixture.minor);
    ASSERT_NE(layout, nullptr) << "no layout table for " << fixture.version;
    fixture.target.layout = *layout;
    auto memory = std::make_shared<spyglass::process::FakeMemory>();
    for (const auto& [address, bytes] : fixture.regions) {
        memory->map(address, bytes.size());
        memory->write(address, bytes.data(), bytes.size());
    }
    spyglass::python::PythonProcess process(memory, fixture.target);
    std::vector<spyglass::python::ThreadRecord> threads;
    ASSERT_TRUE(process.read_threads(threads));
    EXPECT_EQ(threads.size(), 2u); // the blocked main thread and the reporter
    auto main = std::find_if(threads.begin(), threads.end(),
                             [&](const auto& t) { return t.thread_id == fixture.thread_id; });
    ASSERT_NE(main, threads.end());

    spyglass::model::FrameTable frames;
    spyglass::sampling::StackReader reader(process, frames, {});
    std::vector<spyglass::model::FrameId> ids;
    ASSERT_EQ(reader.read(*main, ids), spyglass::sampling::StackOutcome::ok);
    ASSERT_EQ(ids.size(), fixture.frames.size());
    for (std::size_t i = 0; i < ids.size(); ++i) {
        const spyglass::model::Frame& frame = frames.get(ids[i]);
        EXPECT_EQ(frames.strings().view(frame.function), fixture.frames[i].function) << i;
        EXPECT_EQ(frames.strings().view(frame.file), fixture.frames[i].file) << i;
        EXPECT_EQ(frame.line, fixture.frames[i].line) << i;
    }
    // And nothing was read outside what the capture read.
    for (const auto& thread : threads)
        EXPECT_NE(reader.read(thread, ids), spyglass::sampling::StackOutcome::truncated);
}

INSTANTIATE_TEST_SUITE_P(Fixtures, CapturedStack, ::testing::ValuesIn(fixture_names()),
                         [](const auto& param_info) {
                             std::string name = param_info.param;
                             std::replace(name.begin(), name.end(), '.', '_');
                             std::replace(name.begin(), name.end(), '-', '_');
                             return name;
                         });

TEST(CapturedStack, EveryVersionHasAFixture) {
    std::vector<std::string> want = {"2.7",  "3.6",  "3.7",  "3.8",  "3.9",
                                     "3.10", "3.11", "3.12", "3.13", "debian-3.11"};
    std::sort(want.begin(), want.end());
    EXPECT_EQ(fixture_names(), want);
}

} // namespace
