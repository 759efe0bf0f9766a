// Shared by objects.cpp and objects_repr.cpp: type flags and limits, and reading ints.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "spyglass/process/bytes.hpp"
#include "spyglass/process/memory.hpp"
#include "spyglass/python/layout.hpp"

namespace spyglass::python::objects_detail {

using process::Address;

inline constexpr std::uint64_t kTpflagsHeapType = 1u << 9;
inline constexpr std::uint64_t kTpflagsReady = 1u << 12;
inline constexpr std::uint64_t kTpflagsPy2IntSubclass = 1u << 23; // 2.7 only: 3.12 reuses the bit
inline constexpr std::uint64_t kTpflagsLongSubclass = 1u << 24;
inline constexpr std::uint64_t kTpflagsListSubclass = 1u << 25;
inline constexpr std::uint64_t kTpflagsTupleSubclass = 1u << 26;
inline constexpr std::uint64_t kTpflagsBytesSubclass = 1u << 27;
inline constexpr std::uint64_t kTpflagsUnicodeSubclass = 1u << 28;
inline constexpr std::uint64_t kTpflagsDictSubclass = 1u << 29;
inline constexpr std::uint64_t kTpflagsBaseExcSubclass = 1u << 30;
inline constexpr std::uint64_t kTpflagsTypeSubclass = 1ull << 31;

inline constexpr std::int32_t kCoVarargs = 0x4;
inline constexpr std::int32_t kCoVarkeywords = 0x8;
inline constexpr std::uint8_t kCoFastCell = 0x40;
inline constexpr std::uint8_t kCoFastFree = 0x80;

inline constexpr int kMaxDepth = 3;
inline constexpr std::size_t kPreviewItems = 32;
inline constexpr std::size_t kMaxLongDigits = 2048;
inline constexpr std::size_t kMaxTypeName = 128;
inline constexpr std::uint32_t kDecimalBase = 1000000000;
// No object is larger than the 47-bit user address space of x86-64 and arm64.
inline constexpr std::uint64_t kMaxObjectBytes = std::uint64_t{1} << 47;

using process::load;

inline bool plausible(Address address) {
    return address != 0 && (address & 7) == 0;
}

struct LongDigits {
    bool negative = false;
    std::uint64_t count = 0;
    std::vector<std::uint32_t> digits; // least significant first; empty when count > max
};

// Nothing when the int is unreadable, has more digits than fit in memory, or the layout's digit
// width is not CPython's 15 or 30 bits.
std::optional<LongDigits> read_long(process::RemoteMemory& memory, const Layout& layout,
                                    Address object, std::size_t max_digits);

} // namespace spyglass::python::objects_detail
