#include "spyglass/python/arg_slots.hpp"

#include <array>
#include <vector>

#include "spyglass/process/checked.hpp"

namespace spyglass::python {

namespace {

// The opcodes that write a local slot, by minor version, from each interpreter's own `dis`
// (dis._all_opmap and opcode.opmap; the specialized STORE_FAST__* forms live in adaptive code):
// STORE_FAST, DELETE_FAST, MAKE_CELL, LOAD_FAST_AND_CLEAR (3.12+), the 3.11/3.12 superinstruction
// forms, and 3.13+'s STORE_FAST_LOAD_FAST / STORE_FAST_STORE_FAST, whose argument holds two
// slots (high and low four bits). 0 = none.
struct SlotWriters {
    int minor;
    std::array<std::uint8_t, 6> one_slot;
    std::array<std::uint8_t, 2> two_slots;
};
constexpr std::array<SlotWriters, 5> kSlotWriters = {{
    {11, {125, 126, 135, 161, 167, 0}, {0, 0}},
    {12, {125, 126, 135, 143, 154, 158}, {0, 0}},
    {13, {110, 65, 94, 86, 0, 0}, {111, 112}},
    {14, {112, 63, 97, 85, 0, 0}, {113, 114}},
    {15, {111, 61, 96, 84, 0, 0}, {112, 113}},
}};

constexpr std::size_t kMaxCodeUnits = 64 * 1024;

} // namespace

std::uint8_t stable_argument_slots(const PythonVersion& version,
                                   std::span<const std::uint8_t> units,
                                   std::int32_t argcount) noexcept {
    if (version.major != 3 || argcount <= 0) return 0;
    const SlotWriters* writers = nullptr;
    for (const SlotWriters& entry : kSlotWriters)
        if (entry.minor == version.minor) writers = &entry;
    if (writers == nullptr) return 0;
    std::uint8_t written = 0;
    auto mark = [&](unsigned slot) {
        if (slot < 3) written = static_cast<std::uint8_t>(written | (1u << slot));
    };
    for (std::size_t i = 0; i + 1 < units.size(); i += 2) {
        const std::uint8_t opcode = units[i], oparg = units[i + 1];
        if (opcode == 0) continue;
        for (std::uint8_t writer : writers->one_slot)
            if (writer != 0 && opcode == writer) mark(oparg);
        for (std::uint8_t writer : writers->two_slots)
            if (writer != 0 && opcode == writer) {
                mark(oparg >> 4u);
                mark(oparg & 15u);
            }
    }
    const unsigned arguments = static_cast<unsigned>(argcount < 3 ? argcount : 3);
    return static_cast<std::uint8_t>(((1u << arguments) - 1) & ~written);
}

std::uint8_t read_stable_argument_slots(process::RemoteMemory& memory, const Layout& layout,
                                        process::Address code, const CodeInfo& info) {
    if (layout.frame_model != FrameModel::interpreter_frames || info.argcount <= 0 ||
        info.length <= 0 || static_cast<std::size_t>(info.length) > kMaxCodeUnits ||
        layout.off.code_code_adaptive == kAbsent)
        return 0;
    auto first = process::checked_add(code, layout.off.code_code_adaptive);
    if (!first) return 0;
    std::vector<std::uint8_t> units(static_cast<std::size_t>(info.length) * 2);
    if (!memory.read(*first, units.data(), units.size())) return 0;
    return stable_argument_slots(layout.version, units, info.argcount);
}

} // namespace spyglass::python
