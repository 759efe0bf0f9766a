// Fields out of bytes copied from the target: unaligned, by value.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace spyglass::process {

template <class T>
[[nodiscard]] T load(const std::uint8_t* at) noexcept {
    static_assert(std::is_trivially_copyable_v<T>);
    T value;
    std::memcpy(&value, at, sizeof value);
    return value;
}

} // namespace spyglass::process
