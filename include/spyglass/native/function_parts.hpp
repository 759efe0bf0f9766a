// Every address range that is one function's code, in a module whose symbol table names only
// part of it. GCC splits a function it has profiled (PGO) or thinks rarely run into a hot part,
// under the function's own symbol, and a cold part ("name.cold", a local symbol that a stripped
// module no longer has) placed far away in .text.unlikely; Debian's 3.13-3.15 run most of the
// eval loop in its cold part. What still ties the cold part to its function in a stripped
// module:
//  * the cold part has a call-frame description (FDE) of its own in .eh_frame, and runs in the
//    frame its hot part set up: its CFI says so (the CFA is the hot part's, not a function
//    entry's);
//  * the hot part reaches it by direct jumps (jmp/jcc rel32), at whose site the CFI gives the
//    same CFA as at the target.
// A part is the whole FDE of a target that a jump of the function reaches with the function's
// frame set up (not a tail call: there the frame is gone, the CFA is the entry's) and that CFI
// says runs in that same frame. Parts found are searched the same way; calls are not followed
// (a callee, a ".part.N" clone included, is a frame of its own).
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

struct Dwfl_Module;

namespace spyglass::native {

struct CodeRange {
    std::uint64_t start = 0; // [start, end)
    std::uint64_t end = 0;
    bool operator==(const CodeRange&) const = default;
};

// The direct jumps (jmp rel32, jcc rel32) whose encoding appears at some byte of `code`, which
// is mapped at `address`: visit(site, target). Every byte is tried (no decoding of instruction
// boundaries): a false match is a target nobody checked yet, which the caller's tests reject.
template <typename Visit>
void for_each_jump(std::span<const std::uint8_t> code, std::uint64_t address, Visit&& visit) {
    auto rel32 = [&](std::size_t at) {
        return static_cast<std::int32_t>(static_cast<std::uint32_t>(code[at]) |
                                         static_cast<std::uint32_t>(code[at + 1]) << 8 |
                                         static_cast<std::uint32_t>(code[at + 2]) << 16 |
                                         static_cast<std::uint32_t>(code[at + 3]) << 24);
    };
    for (std::size_t i = 0; i + 5 <= code.size(); ++i) {
        if (code[i] == 0xe9)
            visit(address + i, address + i + 5 + static_cast<std::uint64_t>(rel32(i + 1)));
        else if (code[i] == 0x0f && (code[i + 1] & 0xf0) == 0x80 && i + 6 <= code.size())
            visit(address + i, address + i + 6 + static_cast<std::uint64_t>(rel32(i + 2)));
    }
}

// The FDE ranges of an .eh_frame section's bytes, mapped at `address` (its sh_addr), sorted.
// FDEs whose pointer encoding is not absolute or pc-relative are left out.
std::vector<CodeRange> eh_frame_ranges(std::span<const std::uint8_t> eh_frame,
                                       std::uint64_t address);

// The ranges (in the module's mapped addresses) of function `name`: its symbol's, then each
// part found as above; empty when the module has no sized symbol of that name.
std::vector<CodeRange> function_parts(Dwfl_Module* module, std::string_view name);

// Whether the code just before `pc` (mapped addresses) is a call instruction (`call rel32`, or
// `call` through a register or memory, with a REX prefix or not): `pc` is a return address.
bool follows_call(Dwfl_Module* module, std::uint64_t pc);

// Whether the CFI at `pc` computes the CFA from rbp: the frame has a frame pointer, and the
// unwind needs rbp's value to pass it.
bool cfa_from_frame_pointer(Dwfl_Module* module, std::uint64_t pc);

} // namespace spyglass::native
