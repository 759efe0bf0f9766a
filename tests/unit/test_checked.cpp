#include <array>
#include <cstdint>
#include <limits>

#include <gtest/gtest.h>

#include "spyglass/process/checked.hpp"

namespace spyglass::process {
namespace {

constexpr std::uint64_t kMax = std::numeric_limits<std::uint64_t>::max();

TEST(Checked, AddAndMulRefuseToWrap) {
    EXPECT_EQ(checked_add(1, 2), 3u);
    EXPECT_EQ(checked_add(kMax, 0), kMax);
    EXPECT_FALSE(checked_add(kMax, 1));
    EXPECT_FALSE(checked_add(0xffffffffffffffffull, 0x20));
    EXPECT_EQ(checked_mul(1u << 20, 8), 8u << 20);
    EXPECT_FALSE(checked_mul(kMax / 2 + 1, 2));
    EXPECT_EQ(checked_sub(5, 5), 0u);
    EXPECT_FALSE(checked_sub(4, 5));
}

TEST(Checked, RangeWithinCatchesTheWrapThatCrashedTheWalker) {
    // The frame address 0xffff...ffff plus a 72-byte read wraps to 0x47: a naive
    // `frame + size <= base + length` accepted it.
    const std::uint64_t base = 0x7f0000000000, size = 0x4000;
    EXPECT_TRUE(range_within(base, size, base, size));
    EXPECT_TRUE(range_within(base + size, 0, base, size));
    EXPECT_TRUE(range_within(base + 16, 72, base, size));
    EXPECT_FALSE(range_within(base + size - 8, 72, base, size));
    EXPECT_FALSE(range_within(kMax, 72, base, size));
    EXPECT_FALSE(range_within(base - 1, 2, base, size));
    EXPECT_FALSE(range_within(base + 16, kMax, base, size));
    EXPECT_FALSE(range_within(base, 1, kMax, 16));
}

TEST(Checked, SubspanAndLoadStayInsideTheBytes) {
    std::array<std::uint8_t, 16> bytes{};
    bytes[8] = 0x2a;
    std::span<const std::uint8_t> view(bytes);
    ASSERT_TRUE(checked_subspan(view, 8, 8));
    EXPECT_EQ(checked_subspan(view, 8, 8)->size(), 8u);
    EXPECT_FALSE(checked_subspan(view, 9, 8));
    EXPECT_FALSE(checked_subspan(view, kMax, 2));
    EXPECT_EQ(checked_load<std::uint64_t>(view, 8), 0x2au);
    EXPECT_FALSE(checked_load<std::uint64_t>(view, 9));
    EXPECT_FALSE(checked_load<std::uint32_t>(view, kMax - 1));
}

TEST(Checked, BoundedCountRejectsNegativeAndHuge) {
    EXPECT_EQ(bounded_count(std::int64_t{7}, 10), 7u);
    EXPECT_FALSE(bounded_count(std::int64_t{-1}, 10));
    EXPECT_FALSE(bounded_count(std::uint64_t{11}, 10));
    EXPECT_FALSE(bounded_count(std::numeric_limits<std::int64_t>::min(), kMax));
}

} // namespace
} // namespace spyglass::process
