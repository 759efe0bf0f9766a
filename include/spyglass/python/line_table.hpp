// Line numbers from CPython's line tables: co_lnotab (2.7 - 3.9), co_linetable (3.10) and the
// location table (3.11+). Pure functions over the table's bytes.
#pragma once

#include <cstdint>
#include <span>

#include "spyglass/python/layout.hpp"

namespace spyglass::python {

inline constexpr int kNoLine = -1;

// The line of the instruction at `offset`: a byte offset for lnotab and the 3.10 table, a
// code-unit index for the location table. kNoLine when the table says the instruction has none.
// A table that ends early yields the last line reached; malformed input never reads out of bounds.
int line_for_offset(LineTableFormat format, std::span<const std::uint8_t> table, int first_line,
                    int offset) noexcept;

} // namespace spyglass::python
