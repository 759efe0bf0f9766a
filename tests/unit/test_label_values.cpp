#include <string>

#include <gtest/gtest.h>

#include "spyglass/handoff/label_source.hpp"

namespace spyglass::sampling {
namespace {

TEST(LabelValues, ATextHasOneNumberAndZeroIsNone) {
    LabelValues values;
    const std::uint64_t a = values.intern("req-a");
    EXPECT_NE(a, 0u);
    EXPECT_EQ(values.intern("req-a"), a);
    const std::uint64_t b = values.intern("req-b");
    EXPECT_NE(b, a);
    EXPECT_EQ(values.text(a), "req-a");
    EXPECT_EQ(values.text(b), "req-b");
    EXPECT_EQ(values.text(0), "");
    EXPECT_EQ(values.text(b + 1), "");
    EXPECT_EQ(values.overflowed(), 0u);
}

TEST(LabelValues, PastTheBoundNewTextsShareTheOverflowTextAndAreCounted) {
    LabelValues values;
    for (std::size_t i = 0; i < LabelValues::kMaxValues; ++i)
        ASSERT_EQ(values.intern(std::to_string(i)), i + 1);
    const std::uint64_t over = values.intern("one more");
    EXPECT_EQ(values.text(over), LabelValues::kOverflowText);
    EXPECT_EQ(values.intern("and another"), over);
    EXPECT_EQ(values.overflowed(), 2u);
    EXPECT_EQ(values.intern("7"), 8u); // a text kept before still has its own number
}

TEST(LabelSources, OnlyKnownKindsAndValidNames) {
    EXPECT_TRUE(check_label_source({"context", "request_id"}));
    EXPECT_FALSE(check_label_source({"context", "bad name"}));
    EXPECT_FALSE(check_label_source({"context", ""}));
    EXPECT_FALSE(check_label_source({"nonsense", "request_id"}));
}

} // namespace
} // namespace spyglass::sampling
