// Line tables and first lines from the target that would overflow an int: each decoder must
// say "no line" instead of overflowing (undefined behaviour, which UBSan turns into a crash).
#include <climits>
#include <vector>

#include <gtest/gtest.h>

#include "spyglass/python/line_table.hpp"

namespace {

using spyglass::python::kNoLine;
using spyglass::python::line_for_offset;
using spyglass::python::LineTableFormat;

constexpr std::uint8_t entry(int code, int length = 1) {
    return static_cast<std::uint8_t>(0x80 | (code << 3) | (length - 1));
}

TEST(UntrustedLineTable, LnotabPastTheLargestLine) {
    const std::vector<std::uint8_t> up = {0, 1, 2, 1};
    EXPECT_EQ(line_for_offset(LineTableFormat::lnotab_unsigned, up, INT_MAX, 4), kNoLine);
    EXPECT_EQ(line_for_offset(LineTableFormat::lnotab_signed, up, INT_MAX, 4), kNoLine);
    const std::vector<std::uint8_t> down = {0, 0xff};
    EXPECT_EQ(line_for_offset(LineTableFormat::lnotab_signed, down, INT_MIN, 0), kNoLine);
    // Valid tables near the edge still work.
    EXPECT_EQ(line_for_offset(LineTableFormat::lnotab_unsigned, up, INT_MAX - 2, 4), INT_MAX);
}

TEST(UntrustedLineTable, Linetable310PastTheLargestLine) {
    const std::vector<std::uint8_t> table = {2, 1, 2, 1};
    EXPECT_EQ(line_for_offset(LineTableFormat::linetable_310, table, INT_MAX, 0), kNoLine);
    const std::vector<std::uint8_t> down = {2, 0x81}; // -127
    EXPECT_EQ(line_for_offset(LineTableFormat::linetable_310, down, INT_MIN + 5, 0), kNoLine);
}

TEST(UntrustedLineTable, LocationTablePastTheLargestLine) {
    // Code 13 (no column) with a signed varint of +1, from the largest first line.
    EXPECT_EQ(line_for_offset(LineTableFormat::location_table,
                              std::vector<std::uint8_t>{entry(13), 2}, INT_MAX, 0),
              kNoLine);
    // Codes 10-12 add 0-2 lines.
    EXPECT_EQ(line_for_offset(LineTableFormat::location_table,
                              std::vector<std::uint8_t>{entry(12), 0, 0}, INT_MAX - 1, 0),
              kNoLine);
    // Two long-form entries of +2^30 - 1 each: 1 + 2 * (2^30 - 1) fits, a third does not.
    std::vector<std::uint8_t> table;
    for (int i = 0; i < 3; ++i)
        table.insert(table.end(), {entry(14), 0x7e, 0x7f, 0x7f, 0x7f, 0x7f, 0x01, 0, 0, 0});
    EXPECT_EQ(line_for_offset(LineTableFormat::location_table, table, 1, 1), INT_MAX);
    EXPECT_EQ(line_for_offset(LineTableFormat::location_table, table, 1, 2), kNoLine);
}

// More address steps than an int can sum: a table of 16 MiB of 255-byte steps.
TEST(UntrustedLineTable, AddressStepsPastTheLargestInt) {
    std::vector<std::uint8_t> table(18u << 20, 0xff);
    for (std::size_t i = 1; i < table.size(); i += 2)
        table[i] = 0;
    EXPECT_EQ(line_for_offset(LineTableFormat::lnotab_unsigned, table, 7, INT_MAX), 7);
    EXPECT_EQ(line_for_offset(LineTableFormat::linetable_310, table, 7, INT_MAX), 7);
}

} // namespace
