#include "spyglass/native/unwinder.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <ctime>

#include <cxxabi.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <gelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spyglass/clock.hpp"
#include "spyglass/process/open_limit.hpp"
#include "spyglass/process/procfs.hpp"

namespace spyglass::native {

namespace {

char* debuginfo_path = nullptr;

// Module files find_elf could not open for lack of descriptors (all unwinders: the callback has
// no unwinder of its own to count in).
std::atomic<std::uint64_t> files_without_descriptors{0};

void note_open_failure(int err) noexcept {
    if (process::out_of_descriptors(err))
        files_without_descriptors.fetch_add(1, std::memory_order_relaxed);
}

int open_regular(const std::string& path, char** file_name, Elf** elf) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) note_open_failure(errno);
    struct stat st {};
    if (fd >= 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        *elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
        if (*elf != nullptr) {
            *file_name = ::strdup(path.c_str());
            return fd;
        }
    }
    if (fd >= 0) ::close(fd);
    return -1;
}

// The target's files as it sees them: through /proc/PID/root, which is "/" for a process of our
// mount namespace and the container's root for one in its own. A chrooted process's maps name
// its files as we see them (the chroot is a directory of our tree, `seen_as`): a name under it
// is looked for under /proc/PID/root less that prefix too, which reaches what the target
// mounted there in a mount namespace of its own (Debian sid's interpreters in the tests bind
// /tmp into their root: an extension built there is nowhere in ours). A name found neither way
// is left to elfutils, like deleted files and the vDSO (it opens the name, or reads the module
// from the process's memory).
int find_elf(Dwfl_Module* module, void** userdata, const char* name, Dwarf_Addr base,
             char** file_name, Elf** elf) {
    const auto* root = static_cast<const Unwinder::TargetRoot*>(*userdata);
    if (root != nullptr && name != nullptr && name[0] == '/' &&
        std::strstr(name, " (deleted)") == nullptr) {
        int fd = open_regular(root->proc + name, file_name, elf);
        if (fd >= 0) return fd;
        std::string_view path(name);
        if (root->seen_as.size() > 1 && path.starts_with(root->seen_as) &&
            path.size() > root->seen_as.size() && path[root->seen_as.size()] == '/') {
            fd = open_regular(root->proc + std::string(path.substr(root->seen_as.size())),
                              file_name, elf);
            if (fd >= 0) return fd;
        }
    }
    errno = 0;
    int fd = dwfl_linux_proc_find_elf(module, userdata, name, base, file_name, elf);
    if (fd < 0) note_open_failure(errno);
    return fd;
}

const Dwfl_Callbacks kCallbacks = {
    find_elf,
    dwfl_standard_find_debuginfo,
    nullptr,
    &debuginfo_path,
};

int set_root(Dwfl_Module* module, void** userdata, const char*, Dwarf_Addr, void* arg) {
    (void)module;
    *userdata = arg;
    return DWARF_CB_OK;
}

pid_t next_thread(Dwfl*, void* arg, void** thread_arg) {
    auto* current = static_cast<Unwinder::Current*>(arg);
    if (current->served_thread) return 0;
    current->served_thread = true;
    *thread_arg = arg;
    return current->tid;
}

bool get_thread(Dwfl*, pid_t tid, void* arg, void** thread_arg) {
    auto* current = static_cast<Unwinder::Current*>(arg);
    if (tid != current->tid) return false;
    *thread_arg = arg;
    return true;
}

// Words of the stack copy; nothing else: the live stack has moved on since the capture.
bool memory_read(Dwfl*, Dwarf_Addr address, Dwarf_Word* result, void* arg) {
    auto* current = static_cast<Unwinder::Current*>(arg);
    const ContextView& context = *current->context;
    const std::uint64_t base = context.lowest();
    const std::span<const std::uint8_t> copy = context.memory;
    if (address < base || address - base > copy.size() ||
        copy.size() - (address - base) < sizeof(Dwarf_Word)) {
        if (address >= context.header.regs[rsp]) current->reached_copy_end = true;
        return false;
    }
    std::memcpy(result, copy.data() + (address - base), sizeof *result);
    return true;
}

bool set_initial_registers(Dwfl_Thread* thread, void* arg) {
    auto* current = static_cast<Unwinder::Current*>(arg);
    const ContextView& context = *current->context;
    for (unsigned reg = 0; reg < rip; ++reg) {
        if (!context.has(static_cast<Register>(reg))) continue;
        Dwarf_Word value = context.header.regs[reg];
        if (!dwfl_thread_state_registers(thread, static_cast<int>(reg), 1, &value)) return false;
    }
    dwfl_thread_state_register_pc(thread, context.header.regs[rip]);
    return true;
}

const Dwfl_Thread_Callbacks kThreadCallbacks = {
    next_thread, get_thread, memory_read, set_initial_registers, nullptr, nullptr,
};

struct Collect {
    UnwindResult* out;
    std::size_t max_frames;
};

int collect_frame(Dwfl_Frame* frame, void* arg) {
    auto* collect = static_cast<Collect*>(arg);
    Dwarf_Addr pc = 0;
    bool activation = false;
    if (!dwfl_frame_pc(frame, &pc, &activation)) return DWARF_CB_ABORT;
    // A return address points after its call: look the call up, not what follows it.
    if (!activation && pc > 0) --pc;
    // The frame's stack pointer: the context's for the first, the CFA of the frame inside it
    // for the others (x86-64's CFI defines the caller's rsp as the CFA).
    Dwarf_Word sp = 0;
    if (dwfl_frame_reg(frame, rsp, &sp) != 0) sp = 0;
    collect->out->pcs.push_back(pc);
    collect->out->sps.push_back(sp);
    return collect->out->pcs.size() >= collect->max_frames ? DWARF_CB_ABORT : DWARF_CB_OK;
}

std::string demangle(const char* name) {
    if (name == nullptr) return {};
    if (name[0] != '_' || name[1] != 'Z') return name;
    int status = 0;
    char* plain = abi::__cxa_demangle(name, nullptr, nullptr, &status);
    std::string out = status == 0 && plain != nullptr ? plain : name;
    std::free(plain);
    return out;
}

// The function a PLT stub jumps to, "name@plt": the stub's index in .plt (after its first,
// resolver entry) or .plt.sec is the index of its relocation in .rela.plt.
std::string plt_name(Dwfl_Module* module, std::uint64_t pc) {
    Dwarf_Addr bias = 0;
    Elf* elf = dwfl_module_getelf(module, &bias);
    std::size_t names_index = 0;
    if (elf == nullptr || elf_getshdrstrndx(elf, &names_index) != 0) return {};
    const std::uint64_t address = pc - bias;
    Elf_Scn* plt = nullptr;
    Elf_Scn* relocations = nullptr;
    GElf_Shdr plt_header{}, relocation_header{};
    bool second_plt = false;
    for (Elf_Scn* section = elf_nextscn(elf, nullptr); section != nullptr;
         section = elf_nextscn(elf, section)) {
        GElf_Shdr header;
        if (gelf_getshdr(section, &header) == nullptr) continue;
        const char* name = elf_strptr(elf, names_index, header.sh_name);
        if (name == nullptr) continue;
        std::string_view section_name(name);
        if ((section_name == ".plt" || section_name == ".plt.sec") && address >= header.sh_addr &&
            address - header.sh_addr < header.sh_size) {
            plt = section;
            plt_header = header;
            second_plt = section_name == ".plt.sec";
        } else if (section_name == ".rela.plt") {
            relocations = section;
            relocation_header = header;
        }
    }
    if (plt == nullptr || relocations == nullptr || plt_header.sh_entsize == 0) return {};
    std::uint64_t entry = (address - plt_header.sh_addr) / plt_header.sh_entsize;
    if (!second_plt) {
        if (entry == 0) return {};
        --entry;
    }
    Elf_Data* data = elf_getdata(relocations, nullptr);
    GElf_Rela relocation;
    if (data == nullptr || gelf_getrela(data, static_cast<int>(entry), &relocation) == nullptr)
        return {};
    Elf_Scn* symbols = elf_getscn(elf, relocation_header.sh_link);
    GElf_Shdr symbols_header;
    if (symbols == nullptr || gelf_getshdr(symbols, &symbols_header) == nullptr) return {};
    Elf_Data* symbol_data = elf_getdata(symbols, nullptr);
    GElf_Sym symbol;
    if (symbol_data == nullptr ||
        gelf_getsym(symbol_data, static_cast<int>(GELF_R_SYM(relocation.r_info)), &symbol) ==
            nullptr)
        return {};
    const char* name = elf_strptr(elf, symbols_header.sh_link, symbol.st_name);
    if (name == nullptr || *name == '\0') return {};
    return std::string(name) + "@plt";
}

// Whether a symbol the lookup found covers the address `offset` bytes into it. One with a size
// covers that many bytes. One without (an assembly label without .size) covers its own address
// only: in a stripped module the code after it may be a static function that has no symbol
// left, which must not be named after its neighbour. Except a local one (a compiler's ".cold"
// part, _init): local symbols come from a full symbol table, which names every function, so
// the code up to the next symbol is its own.
bool covers(const GElf_Sym& sym, GElf_Off offset) {
    if (sym.st_size != 0) return offset < sym.st_size;
    return offset == 0 || GELF_ST_BIND(sym.st_info) == STB_LOCAL;
}

// What the unwinder's modules depend on: the executable file mappings (anonymous memory comes
// and goes with every allocation), sorted into `code`. Their signature, 0 when the maps cannot
// be read.
std::uint64_t read_code(pid_t pid, std::vector<std::pair<std::uint64_t, std::uint64_t>>& code) {
    code.clear();
    auto maps = process::read_maps(pid);
    if (!maps) return 0;
    std::uint64_t h = 0xcbf29ce484222325ull;
    auto mix = [&h](std::uint64_t value) { h = (h ^ value) * 0x100000001b3ull; };
    for (const process::MapEntry& entry : *maps) {
        if (!entry.executable || entry.path.empty()) continue;
        code.emplace_back(entry.start, entry.end);
        mix(entry.start);
        mix(entry.end);
        mix(entry.offset);
        mix(entry.inode);
        mix(std::hash<std::string>{}(entry.path));
    }
    std::sort(code.begin(), code.end());
    return h;
}

} // namespace

std::uint64_t module_files_without_descriptors() noexcept {
    return files_without_descriptors.load(std::memory_order_relaxed);
}

Unwinder::Unwinder(pid_t pid, RefreshPolicy policy) : pid_(pid), policy_(policy) {
    root_.proc = fmt::format("/proc/{}/root", pid);
    char seen_as[4096];
    ssize_t length = ::readlink(root_.proc.c_str(), seen_as, sizeof seen_as);
    if (length > 0 && static_cast<std::size_t>(length) < sizeof seen_as && seen_as[0] == '/')
        root_.seen_as.assign(seen_as, static_cast<std::size_t>(length));
    // Read before the report: a change in between is seen at the next check.
    maps_signature_ = read_code(pid_, code_);
    last_check_ns_ = monotonic_ns();
    report_modules();
}

Unwinder::~Unwinder() {
    if (dwfl_ != nullptr) dwfl_end(dwfl_);
    if (line_dwfl_ != nullptr) dwfl_end(line_dwfl_);
}

// Source lines come from a Dwfl of their own: once a module's DWARF is loaded into a Dwfl,
// its unwinder takes the call-frame information from .debug_frame (of the separate debug file)
// before .eh_frame, which made every unwind slower (measured: the resolver's CPU and the p99
// pause of running threads at 1 kHz both rose several-fold). The unwinding Dwfl never loads
// DWARF. It is made with the unwinding one, while /proc/PID/maps is there to be read.
void Unwinder::report_line_modules() {
    line_dwfl_ = dwfl_begin(&kCallbacks);
    if (line_dwfl_ == nullptr) return;
    if (dwfl_linux_proc_report(line_dwfl_, pid_) != 0 ||
        dwfl_report_end(line_dwfl_, nullptr, nullptr) != 0) {
        dwfl_end(line_dwfl_);
        line_dwfl_ = nullptr;
        return;
    }
    dwfl_getmodules(line_dwfl_, set_root, &root_, 0);
}

bool Unwinder::refresh(bool suspect) {
    // The first pc in no module is looked into at once; one that stays (code the maps do not
    // name as a file: a JIT's) costs a read of the maps every suspect_ns at most.
    const std::uint64_t now = monotonic_ns();
    if (suspect && last_suspect_check_ns_ != 0 && now - last_suspect_check_ns_ < policy_.suspect_ns)
        return false;
    if (!suspect && now - last_check_ns_ < policy_.periodic_ns) return false;
    if (suspect) last_suspect_check_ns_ = now;
    last_check_ns_ = now;
    const std::uint64_t signature = read_code(pid_, fresh_code_);
    if (signature == 0 || (signature == maps_signature_ && dwfl_ != nullptr)) return false;
    maps_signature_ = signature;
    code_.swap(fresh_code_);
    ++generation_;
    report_modules();
    return dwfl_ != nullptr;
}

bool Unwinder::report_modules() {
    if (dwfl_ != nullptr) dwfl_end(dwfl_);
    symbols_.clear();
    lines_.clear();
    if (line_dwfl_ != nullptr) dwfl_end(line_dwfl_);
    line_dwfl_ = nullptr;
    dwfl_ = dwfl_begin(&kCallbacks);
    if (dwfl_ == nullptr) return false;
    if (dwfl_linux_proc_report(dwfl_, pid_) != 0 || dwfl_report_end(dwfl_, nullptr, nullptr) != 0 ||
        !dwfl_attach_state(dwfl_, nullptr, pid_, &kThreadCallbacks, &current_)) {
        dwfl_end(dwfl_);
        dwfl_ = nullptr;
        return false;
    }
    // Before any file is looked for: elfutils opens them lazily, on first use.
    dwfl_getmodules(dwfl_, set_root, &root_, 0);
    report_line_modules();
    return true;
}

bool Unwinder::unwind(pid_t tid, const ContextView& context, UnwindResult& out,
                      std::size_t max_frames) {
    out.pcs.clear();
    out.sps.clear();
    out.reached_copy_end = false;
    if (!context.has(rip) || !context.has(rsp)) return false;
    // A pc in no executable file mapping known: something was loaded since (dlopen).
    refresh(dwfl_ == nullptr || !in_code(context.header.regs[rip]));
    if (dwfl_ == nullptr) return false;
    walk_all(tid, context, out, max_frames);
    // The walk ended at such a pc: a library loaded since sits mid-stack, and its frame could
    // not be unwound. Look again; if the modules changed, walk again.
    if (!out.pcs.empty() && !in_code(out.pcs.back()) && refresh(true))
        walk_all(tid, context, out, max_frames);
    if (!context.has(rbp) && !out.reached_copy_end && !out.sps.empty() && out.sps.back() != 0)
        find_frame_pointer(tid, context, out, max_frames);
    return !out.pcs.empty();
}

// A thread read from its syscall file has no rbp: a frame whose CFA is rbp-based (an interpreter
// built with frame pointers, as Debian's 3.13-3.15 are) above leaves that did not save rbp ends
// the walk. Its rbp is then still the frame's own: its CFA less 16, the slot holding its
// caller's rbp (a higher stack address) with the frame's return address (code just after a
// call) above. The lowest 16-byte aligned slot from the frame's stack pointer up that holds such
// a pair is taken if the walk from there goes further; a local that only looks like one is
// caught by the merge (its runs' anchors would not lie in the eval frames it gives).
void Unwinder::find_frame_pointer(pid_t tid, const ContextView& context, UnwindResult& out,
                                  std::size_t max_frames) {
    const std::uint64_t pc = out.pcs.back();
    if (!cfa_from_frame_pointer(module_at(dwfl_, pc), pc)) return;
    const std::uint64_t sp = out.sps.back();
    const std::uint64_t base = context.header.regs[rsp];
    constexpr std::uint64_t kSearched = 4096; // bytes of the frame looked at
    constexpr int kWalks = 4;
    int walks = 0;
    for (std::uint64_t slot = (sp + 15) & ~std::uint64_t{15};
         sp >= base && slot - sp < kSearched && walks < kWalks; slot += 16) {
        const std::uint64_t at = slot - base;
        if (at > context.stack.size() || context.stack.size() - at < 16) break;
        std::uint64_t saved = 0, ret = 0;
        std::memcpy(&saved, context.stack.data() + at, sizeof saved);
        std::memcpy(&ret, context.stack.data() + at + 8, sizeof ret);
        if (saved <= slot + 8 || !in_code(ret) || !follows_call(ret)) continue;
        ++walks;
        ContextView guess = context;
        guess.header.regs[rbp] = slot;
        guess.header.valid |= 1u << rbp;
        walk_all(tid, guess, guessed_, max_frames);
        if (guessed_.pcs.size() > out.pcs.size()) {
            std::swap(out, guessed_);
            ++frame_pointers_found_;
            return;
        }
    }
}

void Unwinder::walk_all(pid_t tid, const ContextView& context, UnwindResult& out,
                        std::size_t max_frames) {
    out.pcs.clear();
    out.sps.clear();
    walk(tid, context, out, max_frames);
    // Stopped in a PLT stub (or another place without call-frame information) the walk ends
    // at once. There the return address is still the word at the stack pointer: a call just
    // pushed it. Walk again from the caller.
    if (out.pcs.size() == 1 && context.stack.size() >= 16) {
        ContextView caller = context;
        std::uint64_t return_address = 0;
        std::memcpy(&return_address, context.stack.data(), sizeof return_address);
        caller.header.regs[rip] = return_address;
        caller.header.regs[rsp] += 8;
        caller.stack = context.stack.subspan(8); // its red zone: `memory` as it was
        UnwindResult outer;
        if (module_at(dwfl_, return_address) != nullptr &&
            walk(tid, caller, outer, max_frames - 1) && outer.pcs.size() > 1) {
            outer.pcs[0] -= 1; // a return address: look its call up
            out.pcs.insert(out.pcs.end(), outer.pcs.begin(), outer.pcs.end());
            out.sps.insert(out.sps.end(), outer.sps.begin(), outer.sps.end());
            out.reached_copy_end = outer.reached_copy_end;
        }
    }
}

bool Unwinder::walk(pid_t tid, const ContextView& context, UnwindResult& out,
                    std::size_t max_frames) {
    current_ = Current{tid, &context, false, false};
    Collect collect{&out, max_frames};
    // The walk ends with an error at the outermost frame, or where the copy ends: what was
    // collected stands.
    (void)dwfl_getthread_frames(dwfl_, tid, collect_frame, &collect);
    out.reached_copy_end = current_.reached_copy_end;
    current_.context = nullptr;
    return !out.pcs.empty();
}

bool Unwinder::in_code(std::uint64_t pc) const noexcept {
    auto it =
        std::upper_bound(code_.begin(), code_.end(), pc,
                         [](std::uint64_t at, const auto& range) { return at < range.first; });
    return it != code_.begin() && pc < std::prev(it)->second;
}

// A module's span as libdwfl sees it runs from its first segment to the end of its last (its
// .bss included), and another library may be mapped in between or just after: only a pc inside
// one of the module's executable mappings is taken to be its code.
Dwfl_Module* Unwinder::module_at(Dwfl* dwfl, std::uint64_t pc) const {
    return dwfl != nullptr && in_code(pc) ? dwfl_addrmodule(dwfl, pc) : nullptr;
}

const NativeSymbol& Unwinder::symbol(std::uint64_t pc) {
    auto it = symbols_.find(pc);
    if (it != symbols_.end()) return it->second;
    NativeSymbol symbol;
    symbol.offset = pc; // in no module: "?+0x" the address itself
    Dwfl_Module* module = module_at(dwfl_, pc);
    if (module != nullptr) {
        Dwarf_Addr start = 0;
        const char* main_file = nullptr;
        const char* name = dwfl_module_info(module, nullptr, &start, nullptr, nullptr, nullptr,
                                            &main_file, nullptr);
        // The module's name is the path /proc/PID/maps gives (main_file is where it was
        // found, through /proc/PID/root).
        symbol.path = name != nullptr ? name : (main_file != nullptr ? main_file : "");
        symbol.module = symbol.path.substr(symbol.path.rfind('/') + 1);
        symbol.offset = pc - start;
        Dwarf_Addr bias = 0;
        if (dwfl_module_getelf(module, &bias) != nullptr && pc >= bias) symbol.address = pc - bias;
        const unsigned char* bits = nullptr;
        GElf_Addr build_id_at = 0;
        int bytes = dwfl_module_build_id(module, &bits, &build_id_at);
        for (int i = 0; i < bytes; ++i)
            fmt::format_to(std::back_inserter(symbol.build_id), "{:02x}", bits[i]);
        GElf_Sym sym;
        GElf_Off offset = 0;
        const char* function =
            dwfl_module_addrinfo(module, pc, &offset, &sym, nullptr, nullptr, nullptr);
        if (function != nullptr && covers(sym, offset)) {
            // "__libc_start_main@@GLIBC_2.34": the version is not part of the function's name.
            std::string_view plain(function);
            std::string bare(plain.substr(0, plain.find('@')));
            symbol.function = demangle(bare.c_str());
            symbol.known = true;
        } else if (std::string stub = plt_name(module, pc); !stub.empty()) {
            symbol.function = std::move(stub);
            symbol.known = true;
        }
    }
    if (!symbol.known)
        symbol.function =
            fmt::format("{}+0x{:x}", symbol.module.empty() ? "?" : symbol.module, symbol.offset);
    return symbols_.emplace(pc, std::move(symbol)).first->second;
}

bool Unwinder::follows_call(std::uint64_t pc) const {
    return native::follows_call(module_at(dwfl_, pc), pc);
}

std::vector<CodeRange> Unwinder::function_parts(std::string_view module,
                                                std::string_view function) {
    struct Search {
        std::string_view module;
        std::string_view function;
        std::vector<CodeRange> parts;
    } search{module, function, {}};
    if (dwfl_ == nullptr) return {};
    dwfl_getmodules(
        dwfl_,
        [](Dwfl_Module* candidate, void**, const char* name, Dwarf_Addr, void* arg) {
            auto* wanted = static_cast<Search*>(arg);
            std::string_view path = name != nullptr ? name : "";
            if (path.substr(path.rfind('/') + 1) != wanted->module) return int{DWARF_CB_OK};
            wanted->parts = native::function_parts(candidate, wanted->function);
            return int{wanted->parts.empty() ? DWARF_CB_OK : DWARF_CB_ABORT};
        },
        &search, 0);
    return search.parts;
}

const SourceLine& Unwinder::source_line(std::uint64_t pc) {
    auto it = lines_.find(pc);
    if (it != lines_.end()) return it->second;
    SourceLine source;
    Dwfl_Module* module = module_at(line_dwfl_, pc);
    if (Dwfl_Line* line = module != nullptr ? dwfl_module_getsrc(module, pc) : nullptr) {
        int number = 0;
        const char* file = dwfl_lineinfo(line, nullptr, &number, nullptr, nullptr, nullptr);
        if (file != nullptr && number > 0) {
            source.file = file;
            source.line = number;
        }
    }
    return lines_.emplace(pc, std::move(source)).first->second;
}

} // namespace spyglass::native
