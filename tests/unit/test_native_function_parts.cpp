// The parts of a split function found without its ".cold" symbol (function_parts.hpp): the
// jumps scanned, an .eh_frame's FDE ranges decoded, and, on every interpreter file this machine
// has (Debian sid's stripped executables, with their separate debug files to check against;
// pyenv's libpython builds, whose own .symtab names the ".cold" parts), exactly the ranges the
// full symbol table gives the eval loop: its symbol and its ".cold" part.
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "spyglass/native/function_parts.hpp"

namespace spyglass::native {
namespace {

TEST(FunctionParts, JumpsAreFoundAtEveryByte) {
    // jmp +0x10; jne -0x20; a call (not followed); a jmp rel32 cut by the end.
    const std::vector<std::uint8_t> code = {0xe9, 0x10, 0x00, 0x00, 0x00, 0x0f, 0x85,
                                            0xe0, 0xff, 0xff, 0xff, 0xe8, 0x00, 0x01,
                                            0x00, 0x00, 0x90, 0xe9, 0x01, 0x02};
    std::vector<std::pair<std::uint64_t, std::uint64_t>> jumps;
    for_each_jump(code, 0x1000, [&](std::uint64_t site, std::uint64_t target) {
        jumps.emplace_back(site, target);
    });
    const std::vector<std::pair<std::uint64_t, std::uint64_t>> expected = {
        {0x1000, 0x1015}, {0x1005, 0x1000 + 11 - 0x20}};
    EXPECT_EQ(jumps, expected);
}

TEST(FunctionParts, EhFrameRangesDecodePcRelativeStarts) {
    // A CIE "zR" with FDE encoding pcrel|sdata4, then one FDE for [0x1000, 0x1100), with the
    // section at 0x2000; then the terminator.
    std::vector<std::uint8_t> eh = {
        20, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 16, 1, 0x1b, 0x0c, 7, 8, 0x90, 1, 0, 0,
    };
    const std::uint64_t section = 0x2000;
    const std::int32_t start = static_cast<std::int32_t>(0x1000 - (section + 32));
    std::vector<std::uint8_t> fde = {16, 0, 0, 0, 28, 0, 0, 0};
    for (int i = 0; i < 4; ++i)
        fde.push_back(static_cast<std::uint8_t>(static_cast<std::uint32_t>(start) >> (8 * i)));
    for (std::uint8_t byte : {0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00})
        fde.push_back(byte);
    eh.insert(eh.end(), fde.begin(), fde.end());
    eh.insert(eh.end(), 4, 0);
    const std::vector<CodeRange> expected = {{0x1000, 0x1100}};
    EXPECT_EQ(eh_frame_ranges(eh, section), expected);
}

// The code at [start, end) of an ELF file's sections.
std::vector<std::uint8_t> code_of(Elf* elf, std::uint64_t start, std::uint64_t end) {
    for (Elf_Scn* section = elf_nextscn(elf, nullptr); section != nullptr;
         section = elf_nextscn(elf, section)) {
        GElf_Shdr header;
        if (gelf_getshdr(section, &header) == nullptr || header.sh_type != SHT_PROGBITS ||
            start < header.sh_addr || end > header.sh_addr + header.sh_size)
            continue;
        Elf_Data* data = elf_getdata(section, nullptr);
        if (data == nullptr || data->d_buf == nullptr) return {};
        const auto* bytes =
            static_cast<const std::uint8_t*>(data->d_buf) + (start - header.sh_addr);
        return {bytes, bytes + (end - start)};
    }
    return {};
}

// What a full symbol table says the function is, shifted by `bias`: the sized symbol `name`,
// and each `name.cold` part the symbol's code jumps into. (pyenv's 3.11 and 3.12 libpython
// name 4 and 8 bytes ".cold" that only the compiler's ast2obj_expr and compiler_visit_expr1
// jump to: code folded into one, which the eval loop never runs.)
struct ElfFile {
    int fd = -1;
    Elf* elf = nullptr;
    explicit ElfFile(const std::string& path) : fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
        if (fd >= 0) elf = elf_begin(fd, ELF_C_READ, nullptr);
    }
    ~ElfFile() {
        if (elf != nullptr) elf_end(elf);
        if (fd >= 0) ::close(fd);
    }
};

// `symbols`: the file with the full .symtab (a separate debug file has no code: that comes
// from `path`).
std::vector<CodeRange> symtab_parts(const std::string& path, const std::string& symbols,
                                    const std::string& name, std::uint64_t bias) {
    std::vector<CodeRange> hot, cold;
    ElfFile code(path), file(symbols);
    Elf* elf = file.elf;
    for (Elf_Scn* section = elf != nullptr ? elf_nextscn(elf, nullptr) : nullptr;
         section != nullptr; section = elf_nextscn(elf, section)) {
        GElf_Shdr header;
        if (gelf_getshdr(section, &header) == nullptr || header.sh_type != SHT_SYMTAB) continue;
        Elf_Data* data = elf_getdata(section, nullptr);
        for (std::size_t i = 0; data != nullptr && i < header.sh_size / header.sh_entsize; ++i) {
            GElf_Sym sym;
            if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr || sym.st_size == 0)
                continue;
            const char* symbol = elf_strptr(elf, header.sh_link, sym.st_name);
            if (symbol == nullptr) continue;
            if (symbol == name) hot.push_back({sym.st_value, sym.st_value + sym.st_size});
            if (symbol == name + ".cold")
                cold.push_back({sym.st_value, sym.st_value + sym.st_size});
        }
    }
    std::vector<CodeRange> parts;
    for (const CodeRange& range : hot) {
        parts.push_back({range.start + bias, range.end + bias});
        for_each_jump(code_of(code.elf, range.start, range.end), range.start,
                      [&](std::uint64_t, std::uint64_t target) {
                          for (CodeRange& part : cold)
                              if (target >= part.start && target < part.end) {
                                  parts.push_back({part.start + bias, part.end + bias});
                                  part = {};
                              }
                      });
    }
    std::sort(parts.begin(), parts.end(),
              [](const CodeRange& a, const CodeRange& b) { return a.start < b.start; });
    return parts;
}

// function_parts of `path`'s `name` as the stripped file alone gives it (no debug file looked
// for: its symbols are the .dynsym's, or the file's own .symtab where it has one).
std::vector<CodeRange> found_parts(const std::string& path, const std::string& name,
                                   std::uint64_t& bias) {
    static const Dwfl_Callbacks callbacks = {
        dwfl_build_id_find_elf,
        [](Dwfl_Module*, void**, const char*, Dwarf_Addr, const char*, const char*, GElf_Word,
           char**) { return -1; },
        dwfl_offline_section_address,
        nullptr,
    };
    Dwfl* dwfl = dwfl_begin(&callbacks);
    Dwfl_Module* module = dwfl_report_offline(dwfl, "target", path.c_str(), -1);
    dwfl_report_end(dwfl, nullptr, nullptr);
    std::vector<CodeRange> parts;
    Dwarf_Addr module_bias = 0;
    if (module != nullptr && dwfl_module_getelf(module, &module_bias) != nullptr)
        parts = function_parts(module, name);
    bias = module_bias;
    dwfl_end(dwfl);
    std::sort(parts.begin(), parts.end(),
              [](const CodeRange& a, const CodeRange& b) { return a.start < b.start; });
    return parts;
}

std::string debug_file_of(const std::string& root, const std::string& path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return {};
    Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
    std::string found;
    const void* id = nullptr;
    ssize_t size = elf != nullptr ? dwelf_elf_gnu_build_id(elf, &id) : -1;
    if (size > 1) {
        const auto* bytes = static_cast<const std::uint8_t*>(id);
        std::string hex;
        for (ssize_t i = 0; i < size; ++i) {
            static constexpr char digits[] = "0123456789abcdef";
            hex += digits[bytes[i] >> 4];
            hex += digits[bytes[i] & 15];
        }
        found =
            root + "/usr/lib/debug/.build-id/" + hex.substr(0, 2) + "/" + hex.substr(2) + ".debug";
    }
    if (elf != nullptr) elf_end(elf);
    ::close(fd);
    return found;
}

TEST(FunctionParts, TheEvalLoopOfEveryInterpreterHereIsItsSymbolAndColdPart) {
    elf_version(EV_CURRENT);
    struct Case {
        std::string file;    // searched, as the target maps it
        std::string symbols; // the same code with a full .symtab
        std::string function;
    };
    std::vector<Case> cases;
    const std::string sid = "/var/cache/spyglass/debian-sid";
    for (const char* version : {"3.13", "3.14", "3.15"}) {
        std::string file = sid + "/usr/bin/python" + version;
        std::string debug = debug_file_of(sid, file);
        if (!debug.empty() && std::filesystem::exists(debug))
            cases.push_back({file, debug, "_PyEval_EvalFrameDefault"});
    }
    std::error_code error;
    for (const auto& entry : std::filesystem::directory_iterator("/root/.pyenv/versions", error))
        for (const auto& lib : std::filesystem::directory_iterator(entry.path() / "lib", error)) {
            const std::string name = lib.path().filename().string();
            if (name.starts_with("libpython") && name.ends_with(".so.1.0"))
                cases.push_back({lib.path().string(), lib.path().string(),
                                 name.starts_with("libpython2") ? "PyEval_EvalFrameEx"
                                                                : "_PyEval_EvalFrameDefault"});
        }
    if (cases.empty()) GTEST_SKIP() << "no interpreter to look at on this machine";
    bool split = false;
    for (const Case& c : cases) {
        SCOPED_TRACE(c.file);
        std::uint64_t bias = 0;
        const std::vector<CodeRange> found = found_parts(c.file, c.function, bias);
        const std::vector<CodeRange> expected = symtab_parts(c.file, c.symbols, c.function, bias);
        ASSERT_FALSE(expected.empty());
        EXPECT_EQ(found, expected);
        split = split || expected.size() > 1;
    }
    EXPECT_TRUE(split) << "no interpreter here has a split eval loop: nothing was shown";
}

} // namespace
} // namespace spyglass::native
