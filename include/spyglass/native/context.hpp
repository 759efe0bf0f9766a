// A thread's native state as a capture takes it: registers (all of them for a thread stopped
// for the read, only the stack pointer and program counter for one blocked in a system call)
// and a copy of its stack from the stack pointer up. Laid out as bytes in the capture queue's
// byte ring: the header, then the stack bytes.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>

namespace spyglass::native {

// DWARF register numbers of x86-64, as libdw wants them.
enum Register : unsigned {
    rax,
    rdx,
    rcx,
    rbx,
    rsi,
    rdi,
    rbp,
    rsp,
    r8,
    r9,
    r10,
    r11,
    r12,
    r13,
    r14,
    r15,
    rip,
    kRegisterCount
};

struct ContextHeader {
    std::uint64_t regs[kRegisterCount] = {};
    std::uint32_t valid = 0;      // bit per register that holds a value
    std::uint32_t stack_size = 0; // bytes of stack copied from regs[rsp]
    std::uint32_t below = 0;      // bytes copied below regs[rsp] (the red zone), before them
};

// The red zone below a stopped thread's stack pointer is copied too: a thread stopped at the
// `ret` after `pop rbp` has CFI that still finds its caller's rbp in the slot just popped, below
// rsp (Debian's frame-pointer builds: without it the walk ended there).
inline constexpr std::uint32_t kRedZone = 128;

// Bytes of stack copied per capture: a thread's first copies take kMinStackCopy; when the
// resolver finds a stack cut where its copy ended, that thread's copies double, up to
// kMaxStackCopy (sampling::NativePolicy). The larger the copy, the longer a running thread is
// stopped for it. dump --native copies kMaxStackCopy at once.
inline constexpr std::uint32_t kMinStackCopy = 32u << 10;
inline constexpr std::uint32_t kMaxStackCopy = 64u << 10;

// A context read back from its bytes: no copy of the stack.
struct ContextView {
    ContextHeader header;
    std::span<const std::uint8_t> stack;  // from the stack pointer up
    std::span<const std::uint8_t> memory; // from lowest() up: the red zone, then `stack`

    static bool parse(std::span<const std::uint8_t> bytes, ContextView& out) {
        if (bytes.size() < sizeof(ContextHeader)) return false;
        std::memcpy(&out.header, bytes.data(), sizeof out.header);
        const std::uint64_t copied =
            std::uint64_t{out.header.below} + std::uint64_t{out.header.stack_size};
        if (bytes.size() - sizeof(ContextHeader) < copied ||
            out.header.below > out.header.regs[rsp])
            return false;
        out.memory = bytes.subspan(sizeof(ContextHeader), copied);
        out.stack = out.memory.subspan(out.header.below);
        return true;
    }
    // The lowest address copied: the stack pointer less the red zone copied.
    [[nodiscard]] std::uint64_t lowest() const noexcept {
        return header.regs[rsp] - (memory.size() - stack.size());
    }
    [[nodiscard]] bool has(Register reg) const noexcept { return header.valid & (1u << reg); }
};

} // namespace spyglass::native
