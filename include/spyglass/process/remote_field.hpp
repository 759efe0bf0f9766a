// Reads at an address the target gave plus an offset. `base` comes from the target's bytes (a
// pointer in one of its structures), so `base + offset` may wrap around the address space, and
// so may the end of what is read there: then there is nothing to read (Errc::corrupt), never a
// read of some other address.
#pragma once

#include <cstdint>
#include <expected>

#include "spyglass/process/checked.hpp"
#include "spyglass/process/memory.hpp"

namespace spyglass::process {

// The address `offset` bytes into the object at `base`, when `length` bytes fit there.
[[nodiscard]] constexpr std::optional<Address> field_address(Address base, std::uint64_t offset,
                                                             std::uint64_t length) noexcept {
    auto at = checked_add(base, offset);
    if (!at || !checked_add(*at, length)) return std::nullopt;
    return at;
}

// `length` bytes at `offset` into the object at `base`.
inline ReadStatus read_field_bytes(RemoteMemory& memory, Address base, std::uint64_t offset,
                                   void* destination, std::size_t length) {
    auto at = field_address(base, offset, length);
    if (!at) return std::unexpected(ReadError{Errc::corrupt, base});
    return memory.read(*at, destination, length);
}

// The value at `offset` into the object at `base`.
template <class T>
std::expected<T, ReadError> read_field(RemoteMemory& memory, Address base, std::uint64_t offset) {
    auto at = field_address(base, offset, sizeof(T));
    if (!at) return std::unexpected(ReadError{Errc::corrupt, base});
    return memory.read_value<T>(*at);
}

} // namespace spyglass::process
