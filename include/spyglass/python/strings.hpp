// Decoding CPython string objects (3.x str of every PyUnicode kind, 2.7 str) read from a target.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "spyglass/process/memory.hpp"
#include "spyglass/python/layout.hpp"

namespace spyglass::python {

using process::Address;
using process::RemoteMemory;

// Longest name or file name accepted from a code object; longer means a torn or foreign read.
inline constexpr std::size_t kMaxNameChars = 4096;

// Bytes read first from a str or bytes object: its header and the characters of short strings.
inline constexpr std::size_t kStrProbeBytes = 128;
// The most bytes of characters read from one object, whatever max_chars allows.
inline constexpr std::size_t kMaxStrBytes = 64u << 20;

// The end of the header fields that decoding a str (2.7: a str) or a bytes object takes from the
// probe, or nothing when the layout lacks one of them. Beyond kStrProbeBytes, reading fails.
std::optional<std::uint64_t> str_header_size(const Layout& layout) noexcept;
std::optional<std::uint64_t> bytes_header_size(const Layout& layout) noexcept;

enum class Overlong : std::uint8_t {
    fail,     // a longer string is corrupt data (names)
    truncate, // keep the first max_chars characters and append "..." (values for --locals)
};

// Reads the str object at `object` and appends it to `out` as UTF-8. `expected_type`, when
// non-zero, must equal the object's ob_type. On 2.7 the object is a str (bytes, decoded as UTF-8).
process::ReadStatus read_str(RemoteMemory& memory, const Layout& layout, Address object,
                             std::string& out, Address expected_type = 0,
                             std::size_t max_chars = kMaxNameChars,
                             Overlong overlong = Overlong::fail);

// Reads the content of a bytes object (2.7: str) into `out`, at most max_bytes.
process::ReadStatus read_bytes(RemoteMemory& memory, const Layout& layout, Address object,
                               std::vector<std::uint8_t>& out, std::size_t max_bytes,
                               Address expected_type = 0);

// Appends code points to UTF-8. Invalid code points (surrogates, > U+10FFFF) become U+FFFD.
void append_utf8(std::string& out, std::uint32_t code_point);
// Appends bytes that should be UTF-8, replacing invalid sequences with U+FFFD.
void append_utf8_lossy(std::string& out, std::span<const std::uint8_t> bytes);
// Appends character data of a PyUnicode kind (1 = latin-1, 2 = UCS-2, 4 = UCS-4).
void append_unicode_kind(std::string& out, int kind, std::span<const std::uint8_t> data);

} // namespace spyglass::python
