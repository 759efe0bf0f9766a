#include "spyglass/process/elf.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <limits>

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include "spyglass/process/checked.hpp"

namespace spyglass::process {

struct ElfHandle {
    int fd = -1;
    Elf* elf = nullptr;
    ElfHandle() = default;
    ElfHandle(const ElfHandle&) = delete;
    ElfHandle& operator=(const ElfHandle&) = delete;
    ~ElfHandle() {
        if (elf != nullptr) elf_end(elf);
        if (fd >= 0) ::close(fd);
    }
};

namespace {

void load_symbols(Elf* elf, Elf_Scn* scn, const GElf_Shdr& shdr,
                  std::unordered_map<std::string_view, ElfSymbol>& symbols) {
    Elf_Data* data = elf_getdata(scn, nullptr);
    std::size_t symbol_size = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
    if (data == nullptr || shdr.sh_entsize == 0 || symbol_size == 0) return;
    // The symbols libelf holds, not the count sh_size / sh_entsize claims.
    std::size_t count = std::min<std::size_t>(data->d_size / symbol_size, INT_MAX);
    for (std::size_t i = 0; i < count; ++i) {
        GElf_Sym sym;
        if (gelf_getsym(data, static_cast<int>(i), &sym) == nullptr) continue;
        if (sym.st_shndx == SHN_UNDEF || sym.st_name == 0) continue;
        const char* name = elf_strptr(elf, shdr.sh_link, sym.st_name);
        if (name == nullptr || *name == '\0') continue;
        symbols.try_emplace(name, ElfSymbol{sym.st_value, sym.st_size});
    }
}

} // namespace

ElfFile::ElfFile(ElfFile&&) noexcept = default;
ElfFile& ElfFile::operator=(ElfFile&&) noexcept = default;
ElfFile::~ElfFile() = default;

Result<ElfFile> ElfFile::open(const std::string& path) {
    if (elf_version(EV_CURRENT) == EV_NONE) return fail(Errc::unsupported, "libelf is too old");
    auto owned = std::make_shared<ElfHandle>();
    ElfHandle& handle = *owned;
    handle.fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (handle.fd < 0) {
        int err = errno;
        return fail(err == EACCES || err == EPERM ? Errc::permission_denied : Errc::not_found,
                    "cannot open {}: {}", path, std::strerror(err));
    }
    handle.elf = elf_begin(handle.fd, ELF_C_READ_MMAP, nullptr);
    if (handle.elf == nullptr || elf_kind(handle.elf) != ELF_K_ELF)
        return fail(Errc::not_found, "{} is not an ELF file", path);

    ElfFile file;
    file.path_ = path;
    file.handle_ = owned;
    GElf_Ehdr ehdr;
    if (gelf_getehdr(handle.elf, &ehdr) == nullptr)
        return fail(Errc::corrupt, "{}: unreadable ELF header", path);
    file.is_dyn_ = ehdr.e_type == ET_DYN;

    std::size_t phnum = 0;
    if (elf_getphdrnum(handle.elf, &phnum) != 0) phnum = 0;
    bool have_first = false;
    for (std::size_t i = 0; i < phnum; ++i) {
        GElf_Phdr phdr;
        if (gelf_getphdr(handle.elf, static_cast<int>(i), &phdr) == nullptr) continue;
        if (phdr.p_type != PT_LOAD) continue;
        if (!have_first) {
            file.first_load_ = phdr.p_vaddr & ~std::uint64_t{0xfff};
            have_first = true;
        }
        // A segment whose end wraps describes no bytes of the file.
        if (!checked_add(phdr.p_vaddr, phdr.p_filesz) || !checked_add(phdr.p_offset, phdr.p_filesz))
            continue;
        file.segments_.push_back({phdr.p_vaddr, phdr.p_offset, phdr.p_filesz});
    }

    std::size_t shstrndx = 0;
    if (elf_getshdrstrndx(handle.elf, &shstrndx) != 0)
        return fail(Errc::corrupt, "{}: no section name table", path);
    Elf_Scn* dynsym = nullptr;
    GElf_Shdr dynsym_header{};
    for (Elf_Scn* scn = elf_nextscn(handle.elf, nullptr); scn != nullptr;
         scn = elf_nextscn(handle.elf, scn)) {
        GElf_Shdr shdr;
        if (gelf_getshdr(scn, &shdr) == nullptr) continue;
        const char* name = elf_strptr(handle.elf, shstrndx, shdr.sh_name);
        file.sections_.push_back(
            {name ? name : "", shdr.sh_addr, shdr.sh_offset, shdr.sh_size, shdr.sh_type});
        if (shdr.sh_type == SHT_SYMTAB) {
            file.has_symtab_ = true;
            load_symbols(handle.elf, scn, shdr, file.symbols_);
        } else if (shdr.sh_type == SHT_DYNSYM) {
            dynsym = scn;
            dynsym_header = shdr;
        }
    }
    // After .symtab so that its entries win; try_emplace keeps the first.
    if (dynsym != nullptr) load_symbols(handle.elf, dynsym, dynsym_header, file.symbols_);
    return file;
}

std::optional<ElfSymbol> ElfFile::symbol(std::string_view name) const {
    auto it = symbols_.find(name);
    if (it == symbols_.end()) return std::nullopt;
    return it->second;
}

const ElfSection* ElfFile::section(std::string_view name) const {
    for (const ElfSection& section : sections_)
        if (section.name == name) return &section;
    return nullptr;
}

std::optional<std::vector<std::byte>> ElfFile::read_file_bytes(std::uint64_t address,
                                                               std::size_t length) const {
    for (const Segment& segment : segments_) {
        if (!range_within(address, length, segment.vaddr, segment.file_size)) continue;
        std::uint64_t offset = segment.file_offset + (address - segment.vaddr);
        if (offset > static_cast<std::uint64_t>(std::numeric_limits<off_t>::max())) continue;
        int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) return std::nullopt;
        std::vector<std::byte> bytes(length);
        ssize_t got = ::pread(fd, bytes.data(), length, static_cast<off_t>(offset));
        ::close(fd);
        if (got != static_cast<ssize_t>(length)) return std::nullopt;
        return bytes;
    }
    return std::nullopt;
}

} // namespace spyglass::process
