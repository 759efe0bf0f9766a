// The small integers samples refer to their strings, frames, stacks, waits and label sets by, one
// type each (after heaptrack's Index<Tag>): a frame id does not pass for a stack id. Each is a bare
// 32-bit number underneath, copied as such through the queues and written as such in the raw
// format.
#pragma once

#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <type_traits>

namespace spyglass::model {

template <class Tag>
struct Index {
    std::uint32_t value = 0;

    constexpr Index() noexcept = default;
    constexpr explicit Index(std::uint32_t number) noexcept : value(number) {}

    // An id no table hands out (the largest number).
    [[nodiscard]] static constexpr Index invalid() noexcept {
        return Index(std::numeric_limits<std::uint32_t>::max());
    }

    friend constexpr bool operator==(Index, Index) noexcept = default;
    friend constexpr auto operator<=>(Index, Index) noexcept = default;
};

struct StringTag;
struct FrameTag;
struct StackTag;
struct WaitTag;
struct LabelSetTag;

using StringId = Index<StringTag>;
using FrameId = Index<FrameTag>;
using StackId = Index<StackTag>;
using WaitId = Index<WaitTag>;
using LabelSetId = Index<LabelSetTag>;

static_assert(sizeof(FrameId) == sizeof(std::uint32_t) &&
              alignof(FrameId) == alignof(std::uint32_t));
static_assert(std::is_trivially_copyable_v<StringId> && std::is_trivially_copyable_v<FrameId> &&
              std::is_trivially_copyable_v<StackId> && std::is_trivially_copyable_v<WaitId> &&
              std::is_trivially_copyable_v<LabelSetId>);
static_assert(std::is_standard_layout_v<FrameId>);

} // namespace spyglass::model

template <class Tag>
struct std::hash<spyglass::model::Index<Tag>> {
    std::size_t operator()(spyglass::model::Index<Tag> id) const noexcept {
        return std::hash<std::uint32_t>{}(id.value);
    }
};
