// Symbols, sections and program headers of an ELF file, read with libelf.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "spyglass/error.hpp"

namespace spyglass::process {

struct ElfSymbol {
    std::uint64_t value = 0; // link-time address: add the load bias for the runtime address
    std::uint64_t size = 0;
};

struct ElfSection {
    std::string name;
    std::uint64_t address = 0;
    std::uint64_t file_offset = 0;
    std::uint64_t size = 0;
    std::uint32_t type = 0; // SHT_PROGBITS, SHT_NOBITS, ...
};

class ElfFile {
  public:
    // Opens the file and reads its section headers and symbol tables (.symtab and .dynsym).
    static Result<ElfFile> open(const std::string& path);

    ElfFile(ElfFile&&) noexcept;
    ElfFile& operator=(ElfFile&&) noexcept;
    ~ElfFile();

    // .symtab takes precedence over .dynsym; only defined symbols are known.
    [[nodiscard]] std::optional<ElfSymbol> symbol(std::string_view name) const;
    [[nodiscard]] const ElfSection* section(std::string_view name) const;
    [[nodiscard]] const std::vector<ElfSection>& sections() const noexcept { return sections_; }
    [[nodiscard]] bool has_symtab() const noexcept { return has_symtab_; }
    // Link-time address of the first PT_LOAD segment, rounded down to the page.
    [[nodiscard]] std::uint64_t first_load_address() const noexcept { return first_load_; }
    [[nodiscard]] bool is_shared_object() const noexcept { return is_dyn_; }
    [[nodiscard]] const std::string& path() const noexcept { return path_; }

    // Bytes of the file at a link-time address (from a PT_LOAD segment), for constants such as
    // glibc's _thread_db descriptors. Fails for .bss-like addresses that have no file bytes.
    [[nodiscard]] std::optional<std::vector<std::byte>> read_file_bytes(std::uint64_t address,
                                                                        std::size_t length) const;

  private:
    ElfFile() = default;
    struct Segment {
        std::uint64_t vaddr, file_offset, file_size;
    };
    std::string path_;
    std::vector<ElfSection> sections_;
    std::vector<Segment> segments_;
    // Names point into the string tables of the mapped file, which stays open with `handle_`:
    // no allocation per symbol (libpython has some 16,000).
    std::shared_ptr<struct ElfHandle> handle_;
    std::unordered_map<std::string_view, ElfSymbol> symbols_;
    std::uint64_t first_load_ = 0;
    bool has_symtab_ = false;
    bool is_dyn_ = false;
};

} // namespace spyglass::process
