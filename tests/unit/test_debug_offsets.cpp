// _Py_DebugOffsets: real bytes from a live 3.13.0 process (tests/unit/data), and synthetic
// ones for a version newer than the compiled-in tables.
#include <cstring>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>

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

// A 3.15 laid out like 3.14's header (positions derived from CPython's sources): read from the
// debug offsets alone, and said so.
TEST(DebugOffsets, ANewerMinorIsReadFromTheDebugOffsetsAlone) {
    auto live = live_313();
    std::vector<std::uint8_t> bytes(1024, 0);
    std::memcpy(bytes.data(), "xdebugpy", 8);
    put(bytes, 8, 0x030f00a1);
    // {position in 3.13, position in 3.14} for every field the descriptors carry.
    const std::pair<int, int> moves[] = {
        {24, 24},   {40, 40},   {48, 48},   {56, 56},   {64, 64},   {72, 72},   {88, 96},
        {112, 120}, {120, 128}, {136, 144}, {144, 152}, {152, 176}, {168, 192}, {176, 200},
        {184, 208}, {192, 216}, {200, 224}, {208, 232}, {224, 248}, {232, 256}, {240, 264},
        {248, 272}, {256, 280}, {264, 288}, {272, 312}, {280, 320}, {288, 328}, {296, 336},
        {304, 344}, {312, 352}, {320, 360}, {328, 368}, {336, 376}, {344, 384}, {352, 400},
        {360, 408}, {368, 416}, {376, 424}, {392, 440}, {400, 448}, {408, 456}, {416, 464},
        {424, 472}, {432, 480}, {448, 528}, {456, 536}, {464, 544}, {472, 552}, {480, 560},
        {488, 568}, {496, 576}, {504, 584}, {512, 592}, {528, 608}, {536, 616}, {544, 624},
        {552, 632}, {560, 640}};
    for (auto [from, to] : moves)
        put(bytes, static_cast<std::size_t>(to), get(live, static_cast<std::size_t>(from)));
    auto result = layout_from_debug_offsets(bytes, std::nullopt);
    ASSERT_TRUE(result) << result.error().message;
    EXPECT_EQ(result->version.minor, 15);
    EXPECT_TRUE(result->layout.from_debug_offsets);
    EXPECT_EQ(result->layout.version.minor, 15);
    EXPECT_EQ(result->layout.code_tag_mask, 7u);
    ASSERT_FALSE(result->notes.empty());
    EXPECT_NE(result->notes[0].find("newer than spyglass's layout tables"), std::string::npos);
    // What the debug offsets say is what the layout uses.
    const LayoutOffsets& table = layout_for(3, 13)->off;
    EXPECT_EQ(result->layout.off.tstate_current_frame, table.tstate_current_frame);
    EXPECT_EQ(result->layout.off.code_code_adaptive, table.code_code_adaptive);
    EXPECT_EQ(result->layout.off.tstate_holds_gil_bit, kAbsent);
}

} // namespace
