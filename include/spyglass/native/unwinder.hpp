// Unwinding a captured native stack after the thread has run on, with elfutils' libdwfl: one
// Dwfl per target process (its modules reported from /proc/PID/maps once, and again when a pc
// falls outside every module: a dlopen), attached once with callbacks that serve the registers
// and the stack copy of the capture being unwound. Memory outside the copy is not read from
// the live process: its stack has moved on since.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <sys/types.h>

#include "spyglass/native/context.hpp"

struct Dwfl;

namespace spyglass::native {

struct NativeSymbol {
    std::string function;     // demangled where it is C++; "module+0xoffset" when unknown
    std::string module;       // the file's base name
    std::string path;         // the file as the target maps it
    std::string build_id;     // hex, empty when the file has none
    std::uint64_t offset = 0; // into the module
    bool known = false;       // a symbol covers the address
};

struct SourceLine {
    std::string file; // as DWARF names it; empty when there is no line information
    int line = 0;
};

struct UnwindResult {
    std::vector<std::uint64_t> pcs; // innermost first; return addresses already adjusted
    bool reached_copy_end = false;  // stopped because the copy of the stack ended
};

class Unwinder {
  public:
    explicit Unwinder(pid_t pid);
    ~Unwinder();
    Unwinder(const Unwinder&) = delete;
    Unwinder& operator=(const Unwinder&) = delete;

    // False when the modules could not be read (the process is gone, no permission).
    [[nodiscard]] bool ready() const noexcept { return dwfl_ != nullptr; }
    // Unwinds `context` of thread `tid`. At most `max_frames` frames.
    bool unwind(pid_t tid, const ContextView& context, UnwindResult& out,
                std::size_t max_frames = 512);
    // The symbol at a pc (a return address already moved into its call), cached.
    const NativeSymbol& symbol(std::uint64_t pc);
    // The source line of a pc from the module's DWARF (the file itself, .gnu_debuglink or
    // /usr/lib/debug/.build-id), cached.
    const SourceLine& source_line(std::uint64_t pc);

    // For libdwfl's callbacks.
    struct Current {
        pid_t tid = 0;
        const ContextView* context = nullptr;
        bool served_thread = false;
        bool reached_copy_end = false;
    };

  private:
    bool report_modules();
    void report_line_modules();
    bool walk(pid_t tid, const ContextView& context, UnwindResult& out, std::size_t max_frames);

    pid_t pid_;
    std::string root_;          // the target's root directory, through /proc
    Dwfl* dwfl_ = nullptr;      // unwinding: CFI from .eh_frame, no DWARF ever loaded
    Dwfl* line_dwfl_ = nullptr; // source lines: null when its modules could not be reported
    Current current_;
    std::uint64_t last_report_ns_ = 0;
    std::unordered_map<std::uint64_t, NativeSymbol> symbols_;
    std::unordered_map<std::uint64_t, SourceLine> lines_;
};

} // namespace spyglass::native
