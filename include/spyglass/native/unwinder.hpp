// Unwinding a captured native stack after the thread has run on, with elfutils' libdwfl: one
// Dwfl per target process, attached once with callbacks that serve the registers and the stack
// copy of the capture being unwound. Memory outside the copy is not read from the live process:
// its stack has moved on since. The modules are reported from /proc/PID/maps, and again when
// its executable file mappings change (a dlopen, a dlclose): looked at when an unwind meets a
// pc outside every module (at most every 100 ms) and otherwise once a second.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <sys/types.h>

#include "spyglass/native/context.hpp"
#include "spyglass/native/function_parts.hpp"

struct Dwfl;
struct Dwfl_Module;

namespace spyglass::native {

struct NativeSymbol {
    std::string function;      // demangled where it is C++; "module+0xoffset" when unknown
    std::string module;        // the file's base name
    std::string path;          // the file as the target maps it
    std::string build_id;      // hex, empty when the file has none
    std::uint64_t offset = 0;  // into the module (from its lowest mapped address)
    std::uint64_t address = 0; // in the module's own ELF address space (pc less its load
                               // bias); 0 when its file was not found
    bool known = false;        // a symbol covers the address
};

struct SourceLine {
    std::string file; // as DWARF names it; empty when there is no line information
    int line = 0;
};

struct UnwindResult {
    std::vector<std::uint64_t> pcs; // innermost first; return addresses already adjusted
    std::vector<std::uint64_t> sps; // per frame: its stack pointer (the caller's is the CFA);
                                    // 0 when not known
    bool reached_copy_end = false;  // stopped because the copy of the stack ended
};

// When /proc/PID/maps is read again to see whether the modules changed.
struct RefreshPolicy {
    std::uint64_t suspect_ns = 100'000'000;    // after an unwind met a pc outside every module
    std::uint64_t periodic_ns = 1'000'000'000; // otherwise (another library at the same place)
};

// How many times a module's file could not be opened for lack of descriptors (its frames are
// then not unwound, and the Python frames not merged with them).
std::uint64_t module_files_without_descriptors() noexcept;

class Unwinder {
  public:
    explicit Unwinder(pid_t pid, RefreshPolicy policy = {});
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
    // The code of `function` in the module whose file is named `module` (its base name): the
    // symbol's range and the parts a compiler split off it (function_parts.hpp). Empty when
    // no such module or symbol. Valid for the current generation().
    std::vector<CodeRange> function_parts(std::string_view module, std::string_view function);
    // Bumped each time the modules are reported again: what was cached by address (here and
    // by callers) may name another module's code since.
    [[nodiscard]] std::uint64_t generation() const noexcept { return generation_; }
    // Whether the code before pc is a call (pc a return address): function_parts.hpp.
    [[nodiscard]] bool follows_call(std::uint64_t pc) const;
    // Unwinds of contexts without rbp that went on from a frame-pointer frame once its rbp was
    // found on the stack.
    [[nodiscard]] std::uint64_t frame_pointers_found() const noexcept {
        return frame_pointers_found_;
    }

    // For libdwfl's callbacks.
    struct TargetRoot {
        std::string proc;    // /proc/PID/root
        std::string seen_as; // where that root is in our tree (its link's target); empty when
                             // not known
    };
    struct Current {
        pid_t tid = 0;
        const ContextView* context = nullptr;
        bool served_thread = false;
        bool reached_copy_end = false;
    };

  private:
    bool report_modules();
    void report_line_modules();
    // Reports the modules again if /proc/PID/maps changed: when `suspect` (a pc in no module)
    // at most every policy_.suspect_ns, else every policy_.periodic_ns. True when it did.
    bool refresh(bool suspect);
    // Whether pc lies in an executable file mapping of the maps last read.
    [[nodiscard]] bool in_code(std::uint64_t pc) const noexcept;
    Dwfl_Module* module_at(Dwfl* dwfl, std::uint64_t pc) const;
    bool walk(pid_t tid, const ContextView& context, UnwindResult& out, std::size_t max_frames);
    // walk(), and again from the return address when the first frame could not be unwound.
    void walk_all(pid_t tid, const ContextView& context, UnwindResult& out, std::size_t max_frames);
    // The walk of a context without rbp ended at a frame-pointer frame: rbp found on the stack.
    void find_frame_pointer(pid_t tid, const ContextView& context, UnwindResult& out,
                            std::size_t max_frames);

    pid_t pid_;
    TargetRoot root_;           // the target's root directory
    Dwfl* dwfl_ = nullptr;      // unwinding: CFI from .eh_frame, no DWARF ever loaded
    Dwfl* line_dwfl_ = nullptr; // source lines: null when its modules could not be reported
    Current current_;
    RefreshPolicy policy_;
    std::uint64_t maps_signature_ = 0; // of the executable file mappings last reported
    std::vector<std::pair<std::uint64_t, std::uint64_t>> code_, fresh_code_; // [start, end)
    std::uint64_t last_check_ns_ = 0, last_suspect_check_ns_ = 0;
    std::uint64_t generation_ = 0;
    std::unordered_map<std::uint64_t, NativeSymbol> symbols_;
    std::unordered_map<std::uint64_t, SourceLine> lines_;
    UnwindResult guessed_;
    std::uint64_t frame_pointers_found_ = 0;
};

} // namespace spyglass::native
