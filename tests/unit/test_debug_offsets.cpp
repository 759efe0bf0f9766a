// _Py_DebugOffsets: real bytes from live 3.13.0, 3.13.18, 3.14.10 and 3.15.2 processes
// (tests/unit/data), and made-up ones for a version newer than every descriptor.
#include <cstring>
#include <fstream>
#include <iterator>
#include <tuple>

#include <gtest/gtest.h>

#include "spyglass/process/fake_memory.hpp"
#include "spyglass/python/debug_offsets.hpp"

namespace {

using spyglass::Errc;
using spyglass::python::kAbsent;
using spyglass::python::layout_for;
using spyglass::python::layout_from_debug_offsets;
using spyglass::python::LayoutOffsets;

std::vector<std::uint8_t> live_313() {
    std::ifstream in(std::string(SPYGLASS_SOURCE_DIR) + "/tests/unit/data/debug_offsets_3.13.0.bin",
                     std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void put(std::vector<std::uint8_t>& bytes, std::size_t position, std::uint64_t value) {
    std::memcpy(bytes.data() + position, &value, sizeof value);
}

std::uint64_t get(const std::vector<std::uint8_t>& bytes, std::size_t position) {
    std::uint64_t value;
    std::memcpy(&value, bytes.data() + position, sizeof value);
    return value;
}

TEST(DebugOffsets, LiveBytesOf313MatchTheGeneratedTable) {
    auto bytes = live_313();
    ASSERT_EQ(bytes.size(), 1024u);
    auto result = layout_from_debug_offsets(bytes, 283320);
    ASSERT_TRUE(result) << result.error().message;
    EXPECT_EQ(result->version.minor, 13);
    EXPECT_FALSE(result->layout.from_debug_offsets);
    // Every field the debug offsets carry agrees with the offsetof-generated table.
    EXPECT_TRUE(result->notes.empty()) << result->notes.front();
    const LayoutOffsets& table = layout_for(3, 13)->off;
    const LayoutOffsets& read = result->layout.off;
    for (const auto& field : spyglass::python::layout_fields()) {
        if (table.*field.member != kAbsent) {
            EXPECT_EQ(read.*field.member, table.*field.member) << field.name;
        }
    }
}

TEST(DebugOffsets, ADifferenceFromTheTableIsNotedAndTheTargetWins) {
    auto bytes = live_313();
    put(bytes, 184, 80); // thread_state.current_frame
    auto result = layout_from_debug_offsets(bytes, 283320);
    ASSERT_TRUE(result);
    ASSERT_EQ(result->notes.size(), 1u);
    EXPECT_NE(result->notes[0].find("tstate_current_frame = 80"), std::string::npos);
    EXPECT_EQ(result->layout.off.tstate_current_frame, 80u);
}

TEST(DebugOffsets, RejectsWhatIsNotConsistent) {
    auto bytes = live_313();
    auto outside = bytes;
    put(outside, 184, get(outside, 152) + 8); // current_frame beyond sizeof(PyThreadState)
    EXPECT_FALSE(layout_from_debug_offsets(outside, 283320));
    EXPECT_FALSE(layout_from_debug_offsets(bytes, 283321)); // .PyRuntime size differs
    auto free_threaded = bytes;
    put(free_threaded, 16, 1);
    auto ft = layout_from_debug_offsets(free_threaded, std::nullopt);
    ASSERT_FALSE(ft);
    EXPECT_EQ(ft.error().code, Errc::unsupported);
    EXPECT_NE(ft.error().message.find("free-threaded"), std::string::npos);
    auto no_cookie = bytes;
    no_cookie[0] = 'X';
    EXPECT_FALSE(layout_from_debug_offsets(no_cookie, std::nullopt));
}

std::vector<std::uint8_t> live(const std::string& version) {
    std::ifstream in(std::string(SPYGLASS_SOURCE_DIR) + "/tests/unit/data/debug_offsets_" +
                         version + ".bin",
                     std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The .PyRuntime section sizes of the processes the bytes were read from (Debian sid's builds).
constexpr std::uint64_t kRuntime31318 = 283408, kRuntime31410 = 316616, kRuntime3152 = 346568;

// The bytes as discovery reads them: from the target's memory at _PyRuntime.
std::vector<std::uint8_t> through_memory(const std::vector<std::uint8_t>& bytes) {
    constexpr spyglass::process::Address kRuntime = 0x7f00'0000'1000;
    spyglass::process::FakeMemory memory;
    memory.map(kRuntime, bytes.size());
    memory.write(kRuntime, bytes.data(), bytes.size());
    std::vector<std::uint8_t> read(spyglass::python::kDebugOffsetsReadSize);
    EXPECT_TRUE(memory.read(kRuntime, read.data(), read.size()));
    return read;
}

void expect_table_values(const spyglass::python::Layout& read, int minor) {
    const LayoutOffsets& table = layout_for(3, minor)->off;
    for (const auto& field : spyglass::python::layout_fields()) {
        if (table.*field.member != kAbsent && !field.name.ends_with("_size")) {
            EXPECT_EQ(read.off.*field.member, table.*field.member) << field.name;
        }
    }
}

// A later patch release grows structs (3.13.18's thread state is 8 bytes longer than 3.13.0's)
// and keeps every offset: read without a note.
TEST(DebugOffsets, APatchReleaseWithLargerStructsIsReadWithoutNotes) {
    auto result = layout_from_debug_offsets(through_memory(live("3.13.18")), kRuntime31318);
    ASSERT_TRUE(result) << result.error().message;
    EXPECT_EQ(result->version, (spyglass::python::PythonVersion{3, 13, 18}));
    EXPECT_TRUE(result->notes.empty()) << result->notes.front();
    expect_table_values(result->layout, 13);
    EXPECT_EQ(result->layout.off.tstate_size, 312u); // the target's, not the table's 304
}

TEST(DebugOffsets, Live314And315AreReadByTheirOwnDescriptors) {
    for (auto [version, size, minor] :
         {std::tuple{"3.14.10", kRuntime31410, 14}, std::tuple{"3.15.2", kRuntime3152, 15}}) {
        auto result = layout_from_debug_offsets(through_memory(live(version)), size);
        ASSERT_TRUE(result) << version << ": " << result.error().message;
        EXPECT_EQ(result->version.minor, minor);
        EXPECT_FALSE(result->layout.from_debug_offsets);
        EXPECT_TRUE(result->notes.empty()) << result->notes.front();
        expect_table_values(result->layout, minor);
    }
    // What 3.14's rules would have read from 3.15's struct is not 3.15's thread id offset.
    auto bytes = live("3.15.2");
    EXPECT_NE(get(bytes, 216), layout_for(3, 15)->off.tstate_thread_id);
}

std::vector<std::uint8_t> as_316(std::vector<std::uint8_t> bytes) {
    put(bytes, 8, 0x031000a1); // 3.16.0a1
    return bytes;
}

// A minor newer than every descriptor whose struct is 3.15's shape where spyglass reads it.
TEST(DebugOffsets, ANewerMinorShapedLike315IsReadWithANote) {
    auto result = layout_from_debug_offsets(through_memory(as_316(live("3.15.2"))), kRuntime3152);
    ASSERT_TRUE(result) << result.error().message;
    EXPECT_EQ(result->version.minor, 16);
    EXPECT_TRUE(result->layout.from_debug_offsets);
    EXPECT_EQ(result->layout.version.minor, 16);
    EXPECT_EQ(result->layout.code_tag_mask, 7u);
    ASSERT_EQ(result->notes.size(), 1u);
    EXPECT_NE(result->notes[0].find("laid out as 3.15's"), std::string::npos) << result->notes[0];
    expect_table_values(result->layout, 15);
}

// A made-up 3.16 that added a field to its thread-state offsets: everything after moved, and
// reading it by 3.15's rules would take last_profiled_frame for the thread id. Refused, in one
// line that names the version and what to do.
TEST(DebugOffsets, ANewerMinorThatMovedItsFieldsIsRefusedInOneLine) {
    auto shaped = as_316(live("3.15.2"));
    std::vector<std::uint8_t> bytes(shaped.begin(), shaped.begin() + 216);
    bytes.resize(224, 0); // the new field, after thread_state.current_frame
    bytes.insert(bytes.end(), shaped.begin() + 216, shaped.end() - 8);
    ASSERT_EQ(bytes.size(), 1024u);
    auto result = layout_from_debug_offsets(through_memory(bytes), kRuntime3152);
    ASSERT_FALSE(result);
    EXPECT_EQ(result.error().code, Errc::unsupported);
    const std::string& message = result.error().message;
    EXPECT_EQ(message.find('\n'), std::string::npos);
    EXPECT_NE(message.find("Python 3.16.0"), std::string::npos) << message;
    EXPECT_NE(message.find("not laid out as 3.15's"), std::string::npos) << message;
    EXPECT_NE(message.find("upgrade spyglass"), std::string::npos) << message;
}

TEST(DebugOffsets, ANewerMinorIsRefusedWhenItsRuntimeSizeCannotBeChecked) {
    auto bytes = through_memory(as_316(live("3.15.2")));
    auto no_section = layout_from_debug_offsets(bytes, std::nullopt);
    ASSERT_FALSE(no_section);
    EXPECT_NE(no_section.error().message.find(".PyRuntime"), std::string::npos);
    auto other_size = layout_from_debug_offsets(bytes, kRuntime3152 + 8);
    ASSERT_FALSE(other_size);
    EXPECT_NE(other_size.error().message.find("not laid out as 3.15's"), std::string::npos);
}

// The free_threaded word of 3.13t/3.14t/3.15t (no such build can be had here: set in the live
// bytes of the GIL builds). Refused with a message naming the build, also where a table exists.
TEST(DebugOffsets, AFreeThreadedBuildIsRefused) {
    for (auto [version, size, name] : {std::tuple{"3.13.18", kRuntime31318, "python3.13t"},
                                       std::tuple{"3.14.10", kRuntime31410, "python3.14t"},
                                       std::tuple{"3.15.2", kRuntime3152, "python3.15t"}}) {
        auto bytes = live(version);
        EXPECT_FALSE(spyglass::python::is_free_threaded(bytes)) << version;
        put(bytes, 16, 1);
        EXPECT_TRUE(spyglass::python::is_free_threaded(through_memory(bytes))) << version;
        auto result = layout_from_debug_offsets(through_memory(bytes), size);
        ASSERT_FALSE(result) << version;
        EXPECT_EQ(result.error().code, Errc::unsupported);
        EXPECT_NE(result.error().message.find("free-threaded"), std::string::npos);
        EXPECT_NE(result.error().message.find(name), std::string::npos) << result.error().message;
    }
}

} // namespace
