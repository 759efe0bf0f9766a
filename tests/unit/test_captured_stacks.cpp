// The walker and the reader over memory captured from real interpreters (tests/unit/data/
// fixtures, made by scripts/capture_fixtures.py): a known stack, read with the compiled-in
// layout table of its version, must come out as the interpreter itself reported it. Unlike the
// fakes of fake_python.hpp, these bytes were not laid out with the table under test.
#include <algorithm>
#include <filesystem>

#include "../tools/fixture_file.hpp"
#include <gtest/gtest.h>

#include "spyglass/capture/stack_capture.hpp"
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

struct LoadedFixture {
    Fixture fixture;
    std::shared_ptr<spyglass::process::FakeMemory> memory;
    std::unique_ptr<spyglass::python::PythonProcess> process;
    spyglass::python::ThreadRecord main;
};

// The fixture's memory behind a process, and its main thread's record; empty `process` on
// failure (with a test failure recorded).
LoadedFixture load_captured(const std::string& name) {
    LoadedFixture loaded;
    std::string error;
    if (!spyglass::test_support::read_fixture((fixture_dir() / (name + ".fixture")).string(),
                                              loaded.fixture, error)) {
        ADD_FAILURE() << error;
        return loaded;
    }
    Fixture& fixture = loaded.fixture;
    const spyglass::python::Layout* layout =
        spyglass::python::layout_for(fixture.major, fixture.minor);
    if (layout == nullptr) {
        ADD_FAILURE() << "no layout table for " << fixture.version;
        return loaded;
    }
    fixture.target.layout = *layout;
    loaded.memory = std::make_shared<spyglass::process::FakeMemory>();
    for (const auto& [address, bytes] : fixture.regions) {
        loaded.memory->map(address, bytes.size());
        loaded.memory->write(address, bytes.data(), bytes.size());
    }
    loaded.process =
        std::make_unique<spyglass::python::PythonProcess>(loaded.memory, fixture.target);
    std::vector<spyglass::python::ThreadRecord> threads;
    EXPECT_TRUE(loaded.process->read_threads(threads));
    auto main = std::find_if(threads.begin(), threads.end(),
                             [&](const auto& t) { return t.thread_id == fixture.thread_id; });
    if (main == threads.end()) {
        ADD_FAILURE() << "no main thread";
        loaded.process.reset();
        return loaded;
    }
    loaded.main = *main;
    return loaded;
}

// --native and a torn read's pause walk the chain while the thread is stopped and check the
// code objects once it runs again: the same result as a stopped capture in one piece, and what
// changed in between (a code object freed) is caught, not taken.
TEST_P(CapturedStack, AStoppedCaptureInTwoHalvesChecksTheCodeObjectsItReadsAfter) {
    LoadedFixture loaded = load_captured(GetParam());
    ASSERT_TRUE(loaded.process);
    using spyglass::sampling::CaptureOutcome;
    spyglass::sampling::StackCapturer whole(*loaded.process, 0);
    ASSERT_EQ(whole.capture(loaded.main, {.thread_stopped = true, .retries = 0}),
              CaptureOutcome::ok);
    spyglass::sampling::StackCapturer halves(*loaded.process, 0);
    halves.walk_stopped(loaded.main);
    ASSERT_EQ(halves.finish_stopped(), CaptureOutcome::ok);
    ASSERT_EQ(halves.raw().depth, whole.raw().depth);
    ASSERT_EQ(whole.raw().depth, loaded.fixture.frames.size());
    for (std::uint32_t i = 0; i < whole.raw().depth; ++i) {
        EXPECT_EQ(halves.raw().frames[i].code, whole.raw().frames[i].code) << i;
        EXPECT_EQ(halves.raw().frames[i].offset, whole.raw().frames[i].offset) << i;
        EXPECT_EQ(halves.raw().frames[i].code_check, whole.raw().frames[i].code_check) << i;
    }

    // The innermost code object stops being one between the halves (its type word cleared).
    halves.walk_stopped(loaded.main);
    const spyglass::process::Address code = halves.raw().frames[0].code;
    const std::uint64_t no_type = 0;
    loaded.memory->write(code + 8, &no_type, sizeof no_type);
    EXPECT_EQ(halves.finish_stopped(), CaptureOutcome::torn);
    EXPECT_EQ(halves.stats().torn_bad_code, 1u);
    EXPECT_EQ(halves.stats().torn_attempts, 1u);
}

TEST_P(CapturedStack, ReadsAsTheInterpreterReportedIt) {
    LoadedFixture loaded = load_captured(GetParam());
    ASSERT_TRUE(loaded.process);
    const Fixture& fixture = loaded.fixture;
    std::vector<spyglass::python::ThreadRecord> threads;
    ASSERT_TRUE(loaded.process->read_threads(threads));
    EXPECT_EQ(threads.size(), 2u); // the blocked main thread and the reporter

    spyglass::model::FrameTable frames;
    spyglass::sampling::StackReader reader(*loaded.process, frames, {});
    std::vector<spyglass::model::FrameId> ids;
    ASSERT_EQ(reader.read(loaded.main, ids), spyglass::sampling::StackOutcome::ok);
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
