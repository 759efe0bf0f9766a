// model::Index<Tag>: one id type per table, each a bare 32-bit number.
#include <cstdint>
#include <functional>
#include <type_traits>
#include <unordered_set>

#include <gtest/gtest.h>

#include "spyglass/model/frame_table.hpp"
#include "spyglass/model/ids.hpp"

namespace spyglass::model {
namespace {

// Distinct ids do not pass for each other, nor for (or from) a plain number.
static_assert(!std::is_convertible_v<FrameId, StackId>);
static_assert(!std::is_convertible_v<StackId, FrameId>);
static_assert(!std::is_convertible_v<StringId, WaitId>);
static_assert(!std::is_convertible_v<WaitId, StringId>);
static_assert(!std::is_convertible_v<FrameId, StringId>);
static_assert(!std::is_convertible_v<std::uint32_t, FrameId>);
static_assert(!std::is_convertible_v<FrameId, std::uint32_t>);
static_assert(!std::is_constructible_v<FrameId, StackId>);
static_assert(std::is_constructible_v<FrameId, std::uint32_t>);

// Copied as its number: the queues and the raw format see 4 bytes.
static_assert(sizeof(StackId) == 4 && std::is_trivially_copyable_v<StackId>);
static_assert(FrameId{}.value == 0);
static_assert(FrameId(7).value == 7);

TEST(TypedIds, OrderAndEqualityAreTheNumbers) {
    EXPECT_EQ(StackId(3), StackId(3));
    EXPECT_NE(StackId(3), StackId(4));
    EXPECT_LT(StackId(3), StackId(4));
    EXPECT_GT(WaitId(10), WaitId(9));
    EXPECT_EQ(StringId{}, StringId(0));
    EXPECT_EQ(FrameId::invalid().value, 0xffffffffu);
    EXPECT_GT(FrameId::invalid(), FrameId(1'000'000));
}

TEST(TypedIds, HashAsTheirNumbers) {
    EXPECT_EQ(std::hash<FrameId>{}(FrameId(42)), std::hash<std::uint32_t>{}(42));
    std::unordered_set<WaitId> seen{WaitId(1), WaitId(2), WaitId(1)};
    EXPECT_EQ(seen.size(), 2u);
    EXPECT_TRUE(seen.contains(WaitId(2)));
    EXPECT_FALSE(seen.contains(WaitId(3)));
}

TEST(TypedIds, TablesHandOutIdsFromTheirFirstEntry) {
    FrameTable frames;
    StringId empty = frames.strings().intern("");
    EXPECT_EQ(empty, StringId{}); // id 0 is the empty string
    FrameId marker = frames.marker("<truncated>");
    EXPECT_EQ(marker, FrameId(0));
    EXPECT_EQ(frames.strings().view(frames.get(marker).function), "<truncated>");
    StackTable stacks;
    EXPECT_EQ(stacks.intern({}), StackId{}); // id 0 is the empty stack
    std::vector<FrameId> one{marker};
    EXPECT_EQ(stacks.intern(one), StackId(1));
    EXPECT_EQ(stacks.get(StackId(1)).front(), marker);
}

} // namespace
} // namespace spyglass::model
