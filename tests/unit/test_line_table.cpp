// Line-table decoding, against vectors the interpreters themselves produced
// (tests/unit/data/gen_line_tables.py: dis.findlinestarts, co_lines, co_positions).
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "spyglass/python/line_table.hpp"

using spyglass::python::kNoLine;
using spyglass::python::line_for_offset;
using spyglass::python::LineTableFormat;

namespace {

struct Vector {
    LineTableFormat format;
    int first_line;
    std::vector<std::uint8_t> table;
    std::vector<std::pair<int, int>> expected; // offset -> line
};

std::vector<Vector> load(const std::string& version) {
    std::ifstream in(std::string(SPYGLASS_SOURCE_DIR) + "/tests/unit/data/line_tables_" + version +
                     ".txt");
    EXPECT_TRUE(in.good()) << "missing vectors for " << version;
    std::vector<Vector> vectors;
    std::string format, hex, pairs;
    int first = 0;
    while (in >> format >> first >> hex >> pairs) {
        Vector v;
        v.format = format == "location"        ? LineTableFormat::location_table
                   : format == "linetable310"  ? LineTableFormat::linetable_310
                   : format == "lnotab_signed" ? LineTableFormat::lnotab_signed
                                               : LineTableFormat::lnotab_unsigned;
        v.first_line = first;
        if (hex != "-")
            for (std::size_t i = 0; i + 1 < hex.size(); i += 2)
                v.table.push_back(
                    static_cast<std::uint8_t>(std::stoi(hex.substr(i, 2), nullptr, 16)));
        std::stringstream list(pairs);
        std::string pair;
        while (std::getline(list, pair, ',')) {
            auto eq = pair.find('=');
            v.expected.emplace_back(std::stoi(pair.substr(0, eq)), std::stoi(pair.substr(eq + 1)));
        }
        vectors.push_back(std::move(v));
    }
    return vectors;
}

class LineTableVectors : public ::testing::TestWithParam<std::string> {};

TEST_P(LineTableVectors, EveryOffsetMatchesTheInterpreter) {
    auto vectors = load(GetParam());
    ASSERT_GE(vectors.size(), 2u);
    std::size_t checked = 0;
    for (const Vector& v : vectors) {
        for (auto [offset, line] : v.expected) {
            EXPECT_EQ(line_for_offset(v.format, v.table, v.first_line, offset), line)
                << GetParam() << " offset " << offset;
            ++checked;
        }
    }
    EXPECT_GT(checked, 50u);
}

INSTANTIATE_TEST_SUITE_P(Versions, LineTableVectors,
                         ::testing::Values("2.7", "3.8", "3.10", "3.11", "3.12", "3.13"));

TEST(LineTable, LnotabUnsignedAndSignedStepsDiffer) {
    // One pair: 4 bytes on, line step 0xff: +255 on 2.7, -1 from 3.6.
    std::vector<std::uint8_t> table{4, 0xff};
    EXPECT_EQ(line_for_offset(LineTableFormat::lnotab_unsigned, table, 10, 6), 265);
    EXPECT_EQ(line_for_offset(LineTableFormat::lnotab_signed, table, 10, 6), 9);
    EXPECT_EQ(line_for_offset(LineTableFormat::lnotab_signed, table, 10, 2), 10);
}

TEST(LineTable, Linetable310NoLineRange) {
    // [0,4): +1 -> 11; [4,8): no line (-128); [8,10): +2 -> 13
    std::vector<std::uint8_t> table{4, 1, 4, 0x80, 2, 2};
    EXPECT_EQ(line_for_offset(LineTableFormat::linetable_310, table, 10, 0), 11);
    EXPECT_EQ(line_for_offset(LineTableFormat::linetable_310, table, 10, 6), kNoLine);
    EXPECT_EQ(line_for_offset(LineTableFormat::linetable_310, table, 10, 8), 13);
}

TEST(LineTable, LocationTableLongFormAndNoLocation) {
    std::vector<std::uint8_t> table{
        0x80 | (14 << 3) | 1, 0x04, 0x00, 0x01, 0x05, // long form, 2 units, line +2
        0x80 | (15 << 3) | 0,                         // no location, 1 unit
        0x80 | (13 << 3) | 2, 0x03,                   // no columns, 3 units, line -1
        0x80 | (11 << 3) | 0, 0x01, 0x02,             // one-line form, line +1
    };
    auto line = [&](int unit) {
        return line_for_offset(LineTableFormat::location_table, table, 100, unit);
    };
    EXPECT_EQ(line(0), 102);
    EXPECT_EQ(line(1), 102);
    EXPECT_EQ(line(2), kNoLine);
    EXPECT_EQ(line(3), 101);
    EXPECT_EQ(line(5), 101);
    EXPECT_EQ(line(6), 102);
}

TEST(LineTable, MalformedTablesStayInBounds) {
    // Truncated varints and garbage must not read past the end.
    std::vector<std::uint8_t> garbage{0xf7, 0x7f, 0x7f, 0x7f};
    for (int unit = 0; unit < 10; ++unit)
        (void)line_for_offset(LineTableFormat::location_table, garbage, 1, unit);
    std::vector<std::uint8_t> odd{3};
    EXPECT_EQ(line_for_offset(LineTableFormat::lnotab_signed, odd, 5, 10), 5);
    EXPECT_EQ(line_for_offset(LineTableFormat::linetable_310, odd, 5, 10), 5);
    EXPECT_EQ(line_for_offset(LineTableFormat::location_table, {}, 5, 0), 5);
}

} // namespace
