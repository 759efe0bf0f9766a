// Fields of a target struct, out of the bytes copied from it (after pystack's
// Structure<T>::getField). Attach checks that every offset of the layout fits in what the readers
// copy (check_reader_bounds); the view checks again where each field is loaded, so that a layout
// or a copy that does not hold a field is refused there rather than read past its bytes. The
// check is one compare and a branch: no allocation, no exception (the walkers load through it
// per frame per sample).
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <type_traits>

#include "spyglass/process/checked.hpp"

namespace spyglass::python {

class StructView {
  public:
    constexpr StructView() noexcept = default;
    // `bytes` are the struct's own from offset `first` on (a copy of part of it).
    constexpr explicit StructView(std::span<const std::uint8_t> bytes,
                                  std::uint64_t first = 0) noexcept
        : bytes_(bytes), first_(first) {}
    StructView(const std::uint8_t* bytes, std::size_t size, std::uint64_t first = 0) noexcept
        : StructView(std::span<const std::uint8_t>(bytes, size), first) {}

    // The field of type T at `offset` of the struct, or nothing when its bytes were not copied.
    template <class T>
    [[nodiscard]] std::optional<T> field(std::uint64_t offset) const noexcept {
        static_assert(std::is_trivially_copyable_v<T>);
        if (!process::range_within(offset, sizeof(T), first_, bytes_.size())) [[unlikely]]
            return std::nullopt;
        T value;
        std::memcpy(&value, bytes_.data() + (offset - first_), sizeof value);
        return value;
    }

    // The field, or T{} (0, a null pointer) when its bytes were not copied.
    template <class T>
    [[nodiscard]] T field_or_zero(std::uint64_t offset) const noexcept {
        return field<T>(offset).value_or(T{});
    }

    [[nodiscard]] constexpr std::span<const std::uint8_t> bytes() const noexcept { return bytes_; }

  private:
    std::span<const std::uint8_t> bytes_;
    std::uint64_t first_ = 0;
};

} // namespace spyglass::python
