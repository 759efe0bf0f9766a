// Arithmetic on numbers that came from the target's bytes. An address, offset, count or size
// read from another process is untrusted: a sum that wraps can pass a bounds check and point a
// local read far outside its buffer. Every such computation goes through these helpers (after
// bloaty's CheckedAdd / StrictSubstr), which say "no" instead of wrapping.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <type_traits>

namespace spyglass::process {

// a + b, or nothing when it does not fit in 64 bits.
[[nodiscard]] constexpr std::optional<std::uint64_t> checked_add(std::uint64_t a,
                                                                 std::uint64_t b) noexcept {
    std::uint64_t sum = 0;
    if (__builtin_add_overflow(a, b, &sum)) return std::nullopt;
    return sum;
}

// a * b, or nothing when it does not fit in 64 bits.
[[nodiscard]] constexpr std::optional<std::uint64_t> checked_mul(std::uint64_t a,
                                                                 std::uint64_t b) noexcept {
    std::uint64_t product = 0;
    if (__builtin_mul_overflow(a, b, &product)) return std::nullopt;
    return product;
}

// a - b, or nothing when b > a.
[[nodiscard]] constexpr std::optional<std::uint64_t> checked_sub(std::uint64_t a,
                                                                 std::uint64_t b) noexcept {
    if (b > a) return std::nullopt;
    return a - b;
}

// Whether [at, at + length) lies inside [base, base + size), with no sum wrapping.
[[nodiscard]] constexpr bool range_within(std::uint64_t at, std::uint64_t length,
                                          std::uint64_t base, std::uint64_t size) noexcept {
    if (at < base) return false;
    std::uint64_t into = at - base;
    return into <= size && length <= size - into;
}

// The bytes [offset, offset + length) of `bytes`, or nothing when they are not all there.
[[nodiscard]] constexpr std::optional<std::span<const std::uint8_t>>
checked_subspan(std::span<const std::uint8_t> bytes, std::uint64_t offset,
                std::uint64_t length) noexcept {
    if (!range_within(offset, length, 0, bytes.size())) return std::nullopt;
    return bytes.subspan(static_cast<std::size_t>(offset), static_cast<std::size_t>(length));
}

// A value at `offset` of `bytes` (unaligned), or nothing when it does not fit.
template <class T>
[[nodiscard]] std::optional<T> checked_load(std::span<const std::uint8_t> bytes,
                                            std::uint64_t offset) noexcept {
    static_assert(std::is_trivially_copyable_v<T>);
    if (!range_within(offset, sizeof(T), 0, bytes.size())) return std::nullopt;
    T value;
    std::memcpy(&value, bytes.data() + offset, sizeof value);
    return value;
}

// A count read from the target, as a size no larger than `limit`, or nothing.
template <class T>
[[nodiscard]] constexpr std::optional<std::uint64_t> bounded_count(T value,
                                                                   std::uint64_t limit) noexcept {
    static_assert(std::is_integral_v<T>);
    if constexpr (std::is_signed_v<T>) {
        if (value < 0) return std::nullopt;
    }
    auto count = static_cast<std::uint64_t>(value);
    if (count > limit) return std::nullopt;
    return count;
}

} // namespace spyglass::process
