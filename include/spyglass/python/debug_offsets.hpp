// _Py_DebugOffsets (3.13+): the table of its own offsets that CPython keeps at the start of
// _PyRuntime. Used to cross-check the compiled-in layout, and to read a minor version newer than
// the compiled-in tables.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "spyglass/error.hpp"
#include "spyglass/python/layout.hpp"

namespace spyglass::python {

// Enough bytes of _PyRuntime to hold the debug offsets of every known layout.
inline constexpr std::size_t kDebugOffsetsReadSize = 1024;

struct DebugOffsetsLayout {
    Layout layout;
    PythonVersion version; // from the embedded PY_VERSION_HEX
    std::vector<std::string> notes;
};

// True if the bytes start with the "xdebugpy" cookie.
bool has_debug_cookie(std::span<const std::uint8_t> runtime_bytes) noexcept;

// Builds the layout for the interpreter whose _PyRuntime starts with `runtime_bytes`. For a
// version with a compiled-in table the table is cross-checked (differences are noted and the
// interpreter's own values win); for a newer minor the newest known descriptor is tried and the
// result accepted only if every offset is consistent with the struct sizes.
// `runtime_section_size` is the size of the .PyRuntime ELF section when there is one.
Result<DebugOffsetsLayout>
layout_from_debug_offsets(std::span<const std::uint8_t> runtime_bytes,
                          std::optional<std::uint64_t> runtime_section_size);

} // namespace spyglass::python
