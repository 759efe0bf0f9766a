// Code objects: what a frame's code says (names, file, line table), and a cheap fingerprint
// that tells whether a cached code object is still the one at its address.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "spyglass/process/memory.hpp"
#include "spyglass/python/target.hpp"

namespace spyglass::python {

// Fields of a code object's header that change when the address is reused by another object.
struct CodeFingerprint {
    Address type = 0, filename = 0, name = 0, qualname = 0, line_table = 0, code = 0;
    std::int64_t size = 0; // ob_size (3.11+: code units)
    std::int32_t first_line = 0;
    friend bool operator==(const CodeFingerprint&, const CodeFingerprint&) = default;
};

// Bytes of the code object's header to read for the fingerprint and the fields below; read_code
// refuses a layout that needs more than kMaxCodeHeaderBytes.
inline constexpr std::size_t kMaxCodeHeaderBytes = 512;
std::size_t code_header_size(const Layout& layout) noexcept;
CodeFingerprint code_fingerprint(const Layout& layout,
                                 std::span<const std::uint8_t> header) noexcept;
// A hash of the fingerprint, never 0: what a capture carries per frame.
std::uint64_t fingerprint_hash(const CodeFingerprint& fingerprint) noexcept;

// What a capture needs of a code object's header, without decoding names or line tables.
struct CodeHeader {
    CodeFingerprint fingerprint;
    std::uint64_t hash = 0;
    std::int32_t flags = 0;           // co_flags
    std::int32_t first_traceable = 0; // 3.11+: offsets below it have not started running
};
CodeHeader code_header(const Layout& layout, std::span<const std::uint8_t> header) noexcept;

struct CodeInfo {
    CodeFingerprint fingerprint;
    std::string name;
    std::string qualname; // co_qualname on 3.11+, else the name
    std::string filename;
    int first_line = 0;
    std::vector<std::uint8_t> line_table;
    std::int32_t length = 0;          // bytes of co_code (<= 3.10) or code units (3.11+)
    std::int32_t first_traceable = 0; // 3.11+: offsets below it have not started running
    std::int32_t argcount = 0;
    std::int32_t flags = 0;   // co_flags
    std::int32_t nlocals = 0; // co_nlocals (<= 3.10) or co_nlocalsplus (3.11+)
    Address local_names = 0;  // tuple: co_varnames (<= 3.10) or co_localsplusnames
    Address local_kinds = 0;  // bytes: co_localspluskinds (3.11+)
    // Argument slots its instructions never write (python/arg_slots.hpp): filled by the stack
    // resolver, not by read_code.
    std::uint8_t stable_args = 0;
};

inline constexpr std::size_t kMaxLineTableBytes = 1u << 20;

// co_flags of the code of generators, coroutines and async generators (the same values on
// every version, 2.7 included). Such a frame has a caller only while it runs.
inline constexpr std::int32_t kGeneratorCodeFlags = 0x20 | 0x80 | 0x100 | 0x200;

// Reads and validates the code object at `code` (its type must be the code type when known).
process::ReadStatus read_code(process::RemoteMemory& memory, const Layout& layout,
                              const TypeAddresses& types, Address code, CodeInfo& out);

// The source line of the instruction at `offset` (as RawFrame::offset counts it); a frame that
// has not started (-1) or an instruction without a line reports the first line.
int code_line(const Layout& layout, const CodeInfo& code, std::int32_t offset) noexcept;

} // namespace spyglass::python
