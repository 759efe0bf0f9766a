// libdwfl (what spyglass uses) against libunwind with custom accessors, unwinding the same
// captured stack copy many times with warm caches, as the resolver does after a thread ran on.
// The target is a child of this program 24 calls deep in functions built without a frame
// pointer, blocked in syscall(SYS_read): its stack pointer and program counter come from
// /proc/PID/task/TID/syscall (spyglass's no-stop capture), 64 KiB of stack are copied once.
// libunwind is given what spyglass's libdwfl callbacks get: the copy for stack reads, the
// modules' files (mapped here) for .eh_frame_hdr/.eh_frame, and only rsp/rip as registers.
//
// Run: build/tests/spyglass_unwind_compare [iterations]  (docs/architecture.md cites it)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <elf.h>
#include <fcntl.h>
#include <libunwind-ptrace.h>
#include <libunwind.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spyglass/native/unwinder.hpp"
#include "spyglass/process/live_memory.hpp"
#include "spyglass/process/procfs.hpp"
#include "spyglass/process/task_syscall.hpp"

extern "C" int _Ux86_64_dwarf_search_unwind_table(unw_addr_space_t, unw_word_t, unw_dyn_info_t*,
                                                  unw_proc_info_t*, int, void*);

#define BENCH_FRAME __attribute__((noinline, optimize("omit-frame-pointer")))

extern "C" BENCH_FRAME int spyglass_bench_descend(int fd, int depth) {
    if (depth == 0) {
        char byte = 0;
        return static_cast<int>(::syscall(SYS_read, fd, &byte, 1));
    }
    int got = spyglass_bench_descend(fd, depth - 1);
    asm volatile("" ::: "memory");
    return got + 1;
}

namespace {

using namespace spyglass;

// A module's file, mapped here, and where the child has it.
struct Module {
    std::string path;
    std::uint64_t bias = 0;                     // child address = bias + ELF vaddr
    std::uint64_t code_start = 0, code_end = 0; // its executable mapping in the child
    const std::uint8_t* file = nullptr;
    std::size_t size = 0;
    std::vector<Elf64_Phdr> loads;
    std::uint64_t eh_frame_hdr = 0; // child address; 0: none
};

struct Target {
    std::vector<Module> modules;
    native::ContextView context;
};

bool read_file_bytes(const Module& m, std::uint64_t address, void* out, std::size_t n) {
    const std::uint64_t vaddr = address - m.bias;
    for (const Elf64_Phdr& p : m.loads)
        if (vaddr >= p.p_vaddr && vaddr + n <= p.p_vaddr + p.p_filesz) {
            const std::uint64_t offset = p.p_offset + (vaddr - p.p_vaddr);
            if (offset + n > m.size) return false;
            std::memcpy(out, m.file + offset, n);
            return true;
        }
    return false;
}

std::vector<Module> load_modules(pid_t pid) {
    std::vector<Module> modules;
    auto maps = process::read_maps(pid);
    if (!maps) return modules;
    for (const process::MapEntry& entry : *maps) {
        if (!entry.executable || entry.path.empty() || entry.path[0] != '/') continue;
        int fd = ::open(entry.path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;
        struct stat st {};
        ::fstat(fd, &st);
        void* mapped =
            ::mmap(nullptr, static_cast<std::size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
        ::close(fd);
        if (mapped == MAP_FAILED) continue;
        Module m;
        m.path = entry.path;
        m.file = static_cast<const std::uint8_t*>(mapped);
        m.size = static_cast<std::size_t>(st.st_size);
        m.code_start = entry.start;
        m.code_end = entry.end;
        Elf64_Ehdr header;
        std::memcpy(&header, m.file, sizeof header);
        std::uint64_t hdr_vaddr = 0;
        for (unsigned i = 0; i < header.e_phnum; ++i) {
            Elf64_Phdr p;
            std::memcpy(&p, m.file + header.e_phoff + i * sizeof p, sizeof p);
            if (p.p_type == PT_LOAD) m.loads.push_back(p);
            if (p.p_type == PT_GNU_EH_FRAME) hdr_vaddr = p.p_vaddr;
            // The segment this executable mapping shows gives the bias.
            if (p.p_type == PT_LOAD && entry.offset >= p.p_offset &&
                entry.offset < p.p_offset + p.p_filesz)
                m.bias = entry.start - (p.p_vaddr + (entry.offset - p.p_offset));
        }
        if (hdr_vaddr != 0) m.eh_frame_hdr = m.bias + hdr_vaddr;
        modules.push_back(std::move(m));
    }
    return modules;
}

int find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t* pi, int need_info,
                   void* arg) {
    auto* target = static_cast<Target*>(arg);
    for (const Module& m : target->modules) {
        if (ip < m.code_start || ip >= m.code_end || m.eh_frame_hdr == 0) continue;
        // .eh_frame_hdr: version, eh_frame_ptr_enc, fde_count_enc, table_enc, then the
        // encoded eh_frame pointer (sdata4), the FDE count (udata4) and the sorted table.
        std::uint8_t head[12];
        if (!read_file_bytes(m, m.eh_frame_hdr, head, sizeof head) || head[0] != 1 ||
            head[2] != 0x03 || head[3] != 0x3b)
            return -UNW_ENOINFO;
        std::uint32_t fde_count = 0;
        std::memcpy(&fde_count, head + 8, 4);
        unw_dyn_info_t di{};
        di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
        di.start_ip = m.code_start;
        di.end_ip = m.code_end;
        di.u.rti.segbase = m.eh_frame_hdr;
        di.u.rti.table_data = m.eh_frame_hdr + 12;
        di.u.rti.table_len = fde_count * 8 / sizeof(unw_word_t);
        return _Ux86_64_dwarf_search_unwind_table(as, ip, &di, pi, need_info, arg);
    }
    return -UNW_ENOINFO;
}

void put_unwind_info(unw_addr_space_t as, unw_proc_info_t* pi, void* arg) {
    _UPT_put_unwind_info(as, pi, arg); // upstream's counterpart of dwarf_search_unwind_table
}

int get_dyn_info_list_addr(unw_addr_space_t, unw_word_t*, void*) {
    return -UNW_ENOINFO;
}

int access_mem(unw_addr_space_t, unw_word_t address, unw_word_t* value, int write, void* arg) {
    if (write) return -UNW_EINVAL;
    auto* target = static_cast<Target*>(arg);
    const std::uint64_t base = target->context.header.regs[native::rsp];
    const std::size_t size = target->context.stack.size();
    if (address >= base && address - base + sizeof *value <= size) {
        std::memcpy(value, target->context.stack.data() + (address - base), sizeof *value);
        return 0;
    }
    for (const Module& m : target->modules)
        if (read_file_bytes(m, address, value, sizeof *value)) return 0;
    return -UNW_EINVAL;
}

int access_reg(unw_addr_space_t, unw_regnum_t reg, unw_word_t* value, int write, void* arg) {
    if (write) return -UNW_EINVAL;
    auto* target = static_cast<Target*>(arg);
    if (reg == UNW_X86_64_RSP)
        *value = target->context.header.regs[native::rsp];
    else if (reg == UNW_X86_64_RIP)
        *value = target->context.header.regs[native::rip];
    else
        *value = 0; // not known without a stop
    return 0;
}

int access_fpreg(unw_addr_space_t, unw_regnum_t, unw_fpreg_t*, int, void*) {
    return -UNW_EBADREG;
}
int resume(unw_addr_space_t, unw_cursor_t*, void*) {
    return -UNW_EINVAL;
}
int get_proc_name(unw_addr_space_t, unw_word_t, char*, std::size_t, unw_word_t*, void*) {
    return -UNW_ENOINFO;
}

unw_accessors_t kAccessors = {find_proc_info, put_unwind_info, get_dyn_info_list_addr,
                              access_mem,     access_reg,      access_fpreg,
                              resume,         get_proc_name};

std::size_t libunwind_once(unw_addr_space_t as, Target& target, std::vector<std::uint64_t>& pcs) {
    pcs.clear();
    unw_cursor_t cursor;
    if (unw_init_remote(&cursor, as, &target) != 0) return 0;
    do {
        unw_word_t ip = 0;
        unw_get_reg(&cursor, UNW_REG_IP, &ip);
        pcs.push_back(ip);
    } while (pcs.size() < 512 && unw_step(&cursor) > 0);
    return pcs.size();
}

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

} // namespace

int main(int argc, char** argv) {
    const int iterations = argc > 1 ? std::atoi(argv[1]) : 20000;
    int fds[2];
    if (::pipe(fds) != 0) return 1;
    pid_t child = ::fork();
    if (child == 0) {
        ::close(fds[1]);
        _exit(spyglass_bench_descend(fds[0], 24) > 0 ? 0 : 1);
    }
    ::close(fds[0]);
    process::TaskSyscallReader reader(child, child);
    std::optional<process::TaskSyscall> call;
    for (int i = 0; i < 1'000'000; ++i) {
        call = reader.read();
        if (call && !call->running && call->number == SYS_read) break;
        ::sched_yield();
    }
    if (!call || call->number != SYS_read) {
        std::fprintf(stderr, "the child never blocked in read()\n");
        return 1;
    }
    native::ContextHeader header;
    header.regs[native::rsp] = call->sp;
    header.regs[native::rip] = call->pc;
    header.valid = (1u << native::rsp) | (1u << native::rip);
    std::vector<std::uint8_t> bytes(sizeof header + native::kMaxStackCopy);
    process::LiveMemory memory(child);
    auto got = memory.read_prefix(call->sp, bytes.data() + sizeof header, native::kMaxStackCopy);
    header.stack_size = got ? static_cast<std::uint32_t>(*got) : 0;
    bytes.resize(sizeof header + header.stack_size);
    std::memcpy(bytes.data(), &header, sizeof header);
    Target target;
    native::ContextView::parse(bytes, target.context);
    target.modules = load_modules(child);

    native::Unwinder dwfl(child);
    native::UnwindResult result;
    dwfl.unwind(child, target.context, result); // warm: modules and CFI loaded
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i)
        dwfl.unwind(child, target.context, result);
    const double dwfl_us = seconds_since(start) * 1e6 / iterations;

    unw_addr_space_t as = unw_create_addr_space(&kAccessors, 0);
    unw_set_caching_policy(as, UNW_CACHE_GLOBAL);
    std::vector<std::uint64_t> pcs;
    libunwind_once(as, target, pcs); // warm
    start = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i)
        libunwind_once(as, target, pcs);
    const double libunwind_us = seconds_since(start) * 1e6 / iterations;

    // The same frames? libdwfl's pcs of callers are moved into their call (- 1).
    std::size_t same = 0;
    for (std::size_t i = 0; i < std::min(pcs.size(), result.pcs.size()); ++i)
        if (pcs[i] == result.pcs[i] || pcs[i] - 1 == result.pcs[i]) ++same;
    std::printf("libdwfl:   %.2f us per unwind, %zu frames\n", dwfl_us, result.pcs.size());
    std::printf("libunwind: %.2f us per unwind, %zu frames (%zu the same as libdwfl's)\n",
                libunwind_us, pcs.size(), same);
    for (std::size_t i = 0; i < std::max(pcs.size(), result.pcs.size()); ++i)
        if (i < 3 || i + 3 >= std::max(pcs.size(), result.pcs.size()))
            std::printf("  #%zu dwfl %s  libunwind 0x%llx\n", i,
                        i < result.pcs.size() ? dwfl.symbol(result.pcs[i]).function.c_str() : "-",
                        i < pcs.size() ? static_cast<unsigned long long>(pcs[i]) : 0ull);
    unw_destroy_addr_space(as);
    if (::write(fds[1], "x", 1) != 1) return 1;
    ::waitpid(child, nullptr, 0);
    return 0;
}
