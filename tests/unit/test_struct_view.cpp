// StructView: a field is loaded only when all its bytes are in the copy.
#include <array>
#include <cstdint>
#include <cstring>
#include <limits>

#include <gtest/gtest.h>

#include "spyglass/python/struct_view.hpp"

namespace spyglass::python {
namespace {

// 16 bytes copied of a struct, followed in memory by bytes that are not part of the copy.
struct CopyWithTail {
    std::array<std::uint8_t, 24> memory{};
    CopyWithTail() {
        std::uint64_t first = 0x1111111111111111, second = 0x2222222222222222,
                      tail = 0xDEADBEEFDEADBEEF;
        std::memcpy(memory.data(), &first, 8);
        std::memcpy(memory.data() + 8, &second, 8);
        std::memcpy(memory.data() + 16, &tail, 8);
    }
    [[nodiscard]] StructView view(std::uint64_t first = 0) const {
        return StructView(std::span<const std::uint8_t>(memory.data(), 16), first);
    }
};

TEST(StructView, LoadsFieldsInsideTheCopy) {
    CopyWithTail copy;
    EXPECT_EQ(copy.view().field<std::uint64_t>(0), 0x1111111111111111u);
    EXPECT_EQ(copy.view().field<std::uint64_t>(8), 0x2222222222222222u);
    EXPECT_EQ(copy.view().field<std::uint32_t>(12), 0x22222222u);
    EXPECT_EQ(copy.view().field<std::uint8_t>(15), 0x22u);
    EXPECT_EQ(copy.view().field_or_zero<std::uint64_t>(8), 0x2222222222222222u);
}

TEST(StructView, RefusesAFieldPastTheEndWithoutReadingIt) {
    CopyWithTail copy;
    // The tail's bytes are in memory right after the copy: a refused field does not read them.
    EXPECT_FALSE(copy.view().field<std::uint64_t>(16));
    EXPECT_FALSE(copy.view().field<std::uint64_t>(9)); // straddles the end
    EXPECT_FALSE(copy.view().field<std::uint8_t>(16));
    EXPECT_EQ(copy.view().field_or_zero<std::uint64_t>(16), 0u);
    EXPECT_EQ(copy.view().field_or_zero<std::uint32_t>(14), 0u);
}

TEST(StructView, RefusesOffsetsThatWrap) {
    CopyWithTail copy;
    constexpr auto kTop = std::numeric_limits<std::uint64_t>::max();
    EXPECT_FALSE(copy.view().field<std::uint64_t>(kTop));
    EXPECT_FALSE(copy.view().field<std::uint64_t>(kTop - 3));
    EXPECT_FALSE(copy.view(8).field<std::uint64_t>(kTop - 3));
}

TEST(StructView, ACopyFromAnOffsetHoldsOnlyTheFieldsFromThere) {
    CopyWithTail copy;
    // The copy starts at the struct's offset 100: offsets 100..115 are in it.
    StructView view = copy.view(100);
    EXPECT_EQ(view.field<std::uint64_t>(100), 0x1111111111111111u);
    EXPECT_EQ(view.field<std::uint64_t>(108), 0x2222222222222222u);
    EXPECT_FALSE(view.field<std::uint64_t>(0));
    EXPECT_FALSE(view.field<std::uint64_t>(96)); // starts before the copy
    EXPECT_FALSE(view.field<std::uint64_t>(116));
}

TEST(StructView, AnEmptyViewHoldsNothing) {
    StructView empty;
    EXPECT_FALSE(empty.field<std::uint8_t>(0));
    EXPECT_EQ(empty.field_or_zero<std::uint64_t>(0), 0u);
}

} // namespace
} // namespace spyglass::python
