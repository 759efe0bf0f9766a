// Which of a function's argument slots its own bytecode never writes: an argument object that
// stays in its slot for the whole call, so that another object there means another call
// (docs/calls.md).
#pragma once

#include <cstdint>
#include <span>

#include "spyglass/process/memory.hpp"
#include "spyglass/python/code.hpp"
#include "spyglass/python/layout.hpp"

namespace spyglass::python {

// Bit i (i < 3, i < argcount): local slot i is an argument that no instruction of `units` (the
// code's instructions, two bytes each, as co_code_adaptive holds them) stores to, deletes,
// clears or turns into a cell. Inline caches are read as instructions too: that can only take
// a slot away, never keep one that is written. 0 for a version whose opcodes are not known here.
std::uint8_t stable_argument_slots(const PythonVersion& version,
                                   std::span<const std::uint8_t> units,
                                   std::int32_t argcount) noexcept;

// The same, read from the target: the code object's instructions (3.11+; a code object of over
// 64 Ki code units, or one whose instructions cannot be read, has none).
std::uint8_t read_stable_argument_slots(process::RemoteMemory& memory, const Layout& layout,
                                        process::Address code, const CodeInfo& info);

} // namespace spyglass::python
