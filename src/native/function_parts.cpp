#include "spyglass/native/function_parts.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <unordered_set>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <gelf.h>

namespace spyglass::native {

namespace {

// Bounds on what a module (the target's: not trusted) can make the search cost: the eval loops
// seen have one part besides their symbol and reach it by a few dozen jumps.
constexpr std::size_t kMaxParts = 16;
constexpr std::size_t kMaxChecks = 4096; // jumps whose target's frame is looked up in the CFI

struct Reader {
    const std::uint8_t* at;
    const std::uint8_t* end;

    template <typename T>
    std::optional<T> fixed() {
        if (static_cast<std::size_t>(end - at) < sizeof(T)) return std::nullopt;
        T value;
        std::memcpy(&value, at, sizeof value);
        at += sizeof value;
        return value;
    }
    std::optional<std::uint64_t> uleb() {
        std::uint64_t value = 0;
        for (unsigned shift = 0; at < end && shift < 64; shift += 7) {
            const std::uint8_t byte = *at++;
            value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
            if ((byte & 0x80) == 0) return value;
        }
        return std::nullopt;
    }
    std::optional<std::int64_t> sleb() {
        std::uint64_t value = 0;
        unsigned shift = 0;
        for (; at < end && shift < 64;) {
            const std::uint8_t byte = *at++;
            value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
            shift += 7;
            if ((byte & 0x80) == 0) {
                if (shift < 64 && (byte & 0x40) != 0) value |= ~std::uint64_t{0} << shift;
                return static_cast<std::int64_t>(value);
            }
        }
        return std::nullopt;
    }
    // A DW_EH_PE_* value's format (its low nibble), without its application.
    std::optional<std::uint64_t> encoded(std::uint8_t encoding) {
        switch (encoding & 0x0f) {
        case DW_EH_PE_absptr:
        case DW_EH_PE_udata8:
        case DW_EH_PE_sdata8:
            return fixed<std::uint64_t>();
        case DW_EH_PE_udata2:
            return fixed<std::uint16_t>();
        case DW_EH_PE_sdata2:
            return fixed<std::int16_t>().transform([](auto v) { return std::uint64_t(v); });
        case DW_EH_PE_udata4:
            return fixed<std::uint32_t>();
        case DW_EH_PE_sdata4:
            return fixed<std::int32_t>().transform([](auto v) { return std::uint64_t(v); });
        case DW_EH_PE_uleb128:
            return uleb();
        case DW_EH_PE_sleb128:
            return sleb().transform([](auto v) { return std::uint64_t(v); });
        default:
            return std::nullopt;
        }
    }
};

// The FDE pointer encoding a CIE's augmentation ("zR", "zPLR", ...) declares; absptr without R.
std::optional<std::uint8_t> fde_encoding(const Dwarf_CIE& cie) {
    const char* augmentation = cie.augmentation;
    if (augmentation == nullptr || augmentation[0] != 'z') {
        if (augmentation == nullptr || augmentation[0] == '\0')
            return std::uint8_t{DW_EH_PE_absptr};
        return std::nullopt;
    }
    Reader data{cie.augmentation_data, cie.augmentation_data + cie.augmentation_data_size};
    for (const char* letter = augmentation + 1; *letter != '\0'; ++letter) {
        switch (*letter) {
        case 'R':
            return data.fixed<std::uint8_t>();
        case 'L':
            if (!data.fixed<std::uint8_t>()) return std::nullopt;
            break;
        case 'P': {
            auto encoding = data.fixed<std::uint8_t>();
            if (!encoding || !data.encoded(*encoding)) return std::nullopt;
            break;
        }
        case 'S':
        case 'B':
            break;
        default:
            return std::nullopt;
        }
    }
    return std::uint8_t{DW_EH_PE_absptr};
}

struct Cfa {
    std::vector<Dwarf_Op> ops;
    bool operator==(const Cfa& other) const {
        return std::equal(ops.begin(), ops.end(), other.ops.begin(), other.ops.end(),
                          [](const Dwarf_Op& a, const Dwarf_Op& b) {
                              return a.atom == b.atom && a.number == b.number &&
                                     a.number2 == b.number2;
                          });
    }
};

// How the CFI computes the CFA at `address` (in the ELF's own addresses); nothing where it
// has no rule.
std::optional<Cfa> cfa_at(Dwarf_CFI* cfi, std::uint64_t address) {
    Dwarf_Frame* frame = nullptr;
    if (dwarf_cfi_addrframe(cfi, address, &frame) != 0 || frame == nullptr) return std::nullopt;
    Dwarf_Op* ops = nullptr;
    std::size_t count = 0;
    std::optional<Cfa> cfa;
    if (dwarf_frame_cfa(frame, &ops, &count) == 0 && count > 0 && ops != nullptr)
        cfa = Cfa{std::vector<Dwarf_Op>(ops, ops + count)};
    std::free(frame);
    return cfa;
}

Elf_Scn* section_named(Elf* elf, std::string_view wanted) {
    std::size_t names = 0;
    if (elf_getshdrstrndx(elf, &names) != 0) return nullptr;
    for (Elf_Scn* section = elf_nextscn(elf, nullptr); section != nullptr;
         section = elf_nextscn(elf, section)) {
        GElf_Shdr header;
        if (gelf_getshdr(section, &header) == nullptr) continue;
        const char* name = elf_strptr(elf, names, header.sh_name);
        if (name != nullptr && wanted == name) return section;
    }
    return nullptr;
}

// The bytes of the code at [start, end) (ELF addresses), from the section holding them.
std::span<const std::uint8_t> code_at(Elf* elf, std::uint64_t start, std::uint64_t end) {
    for (Elf_Scn* section = elf_nextscn(elf, nullptr); section != nullptr;
         section = elf_nextscn(elf, section)) {
        GElf_Shdr header;
        if (gelf_getshdr(section, &header) == nullptr || header.sh_type != SHT_PROGBITS ||
            (header.sh_flags & SHF_EXECINSTR) == 0 || start < header.sh_addr ||
            end > header.sh_addr + header.sh_size || start > end)
            continue;
        Elf_Data* data = elf_getdata(section, nullptr);
        if (data == nullptr || data->d_buf == nullptr || data->d_size < header.sh_size) return {};
        return {static_cast<const std::uint8_t*>(data->d_buf) + (start - header.sh_addr),
                static_cast<std::size_t>(end - start)};
    }
    return {};
}

const CodeRange* range_holding(const std::vector<CodeRange>& ranges, std::uint64_t address) {
    auto it = std::upper_bound(ranges.begin(), ranges.end(), address,
                               [](std::uint64_t at, const CodeRange& r) { return at < r.start; });
    if (it == ranges.begin()) return nullptr;
    --it;
    return address < it->end ? &*it : nullptr;
}

} // namespace

std::vector<CodeRange> eh_frame_ranges(std::span<const std::uint8_t> eh_frame,
                                       std::uint64_t address) {
    std::vector<CodeRange> ranges;
    unsigned char ident[EI_NIDENT] = {};
    ident[EI_CLASS] = ELFCLASS64;
    ident[EI_DATA] = ELFDATA2LSB;
    Elf_Data data{};
    data.d_buf = const_cast<std::uint8_t*>(eh_frame.data());
    data.d_size = eh_frame.size();
    data.d_type = ELF_T_BYTE;
    std::map<Dwarf_Off, std::optional<std::uint8_t>> encodings; // by the CIE's offset
    const auto* base = eh_frame.data();
    Dwarf_Off offset = 0;
    while (offset < eh_frame.size()) {
        Dwarf_Off next = 0;
        Dwarf_CFI_Entry entry;
        const int status = dwarf_next_cfi(ident, &data, true, offset, &next, &entry);
        if (status > 0 || next <= offset) break;
        const Dwarf_Off here = offset;
        offset = next;
        if (status < 0) continue;
        if (dwarf_cfi_cie_p(&entry)) {
            encodings[here] = fde_encoding(entry.cie);
            continue;
        }
        auto cie = encodings.find(entry.fde.CIE_pointer);
        if (cie == encodings.end() || !cie->second) continue;
        const std::uint8_t encoding = *cie->second;
        const std::uint8_t application = encoding & 0x70;
        if (application != DW_EH_PE_absptr && application != DW_EH_PE_pcrel) continue;
        Reader reader{entry.fde.start, entry.fde.end};
        const std::uint64_t field = address + static_cast<std::uint64_t>(entry.fde.start - base);
        auto start = reader.encoded(encoding);
        auto size = reader.encoded(encoding);
        if (!start || !size || *size == 0) continue;
        const std::uint64_t from = application == DW_EH_PE_pcrel ? field + *start : *start;
        ranges.push_back({from, from + *size});
    }
    std::sort(ranges.begin(), ranges.end(),
              [](const CodeRange& a, const CodeRange& b) { return a.start < b.start; });
    return ranges;
}

std::vector<CodeRange> function_parts(Dwfl_Module* module, std::string_view name) {
    std::vector<CodeRange> parts;
    if (module == nullptr) return parts;
    const int symbols = dwfl_module_getsymtab(module);
    for (int i = 0; i < symbols && parts.empty(); ++i) {
        GElf_Sym sym;
        GElf_Addr at = 0;
        const char* symbol =
            dwfl_module_getsym_info(module, i, &sym, &at, nullptr, nullptr, nullptr);
        if (symbol != nullptr && GELF_ST_TYPE(sym.st_info) == STT_FUNC && sym.st_size > 0 &&
            name == std::string_view(symbol).substr(0, std::string_view(symbol).find('@')))
            parts.push_back({at, at + sym.st_size});
    }
    if (parts.empty()) return parts;

    Dwarf_Addr bias = 0, cfi_bias = 0;
    Elf* elf = dwfl_module_getelf(module, &bias);
    Dwarf_CFI* cfi = dwfl_module_eh_cfi(module, &cfi_bias);
    Elf_Scn* section = elf != nullptr ? section_named(elf, ".eh_frame") : nullptr;
    GElf_Shdr header;
    Elf_Data* data = section != nullptr ? elf_getdata(section, nullptr) : nullptr;
    if (cfi == nullptr || data == nullptr || data->d_buf == nullptr ||
        gelf_getshdr(section, &header) == nullptr || cfi_bias != bias)
        return parts;
    const std::vector<CodeRange> fdes = eh_frame_ranges(
        {static_cast<const std::uint8_t*>(data->d_buf), data->d_size}, header.sh_addr);

    // In the ELF's own addresses from here; the parts are mapped addresses.
    const std::uint64_t entry = parts[0].start - bias;
    const std::optional<Cfa> entry_cfa = cfa_at(cfi, entry);
    if (!entry_cfa) return parts;
    std::vector<CodeRange> found{{entry, parts[0].end - bias}};
    std::unordered_set<const CodeRange*> rejected;
    std::size_t checks = 0;
    for (std::size_t next = 0; next < found.size() && found.size() < kMaxParts; ++next) {
        const CodeRange part = found[next];
        std::span<const std::uint8_t> code = code_at(elf, part.start, part.end);
        for_each_jump(code, part.start, [&](std::uint64_t site, std::uint64_t target) {
            if (target >= part.start && target < part.end) return;
            for (const CodeRange& known : found)
                if (target >= known.start && target < known.end) return;
            const CodeRange* fde = range_holding(fdes, target);
            if (fde == nullptr || range_holding(fdes, site) == fde || found.size() >= kMaxParts ||
                checks >= kMaxChecks || rejected.contains(fde))
                return;
            ++checks;
            // Not a tail call (the frame torn down), and the target runs in the site's frame.
            const std::optional<Cfa> at_site = cfa_at(cfi, site);
            if (!at_site || *at_site == *entry_cfa) return;
            const std::optional<Cfa> at_target = cfa_at(cfi, target);
            if (!at_target || !(*at_target == *at_site)) return;
            // A part starts in the frame of its function, not at a function's entry.
            const std::optional<Cfa> at_start = cfa_at(cfi, fde->start);
            if (!at_start || *at_start == *entry_cfa) {
                rejected.insert(fde);
                return;
            }
            found.push_back(*fde);
        });
    }
    parts.clear();
    for (const CodeRange& part : found)
        parts.push_back({part.start + bias, part.end + bias});
    return parts;
}

bool follows_call(Dwfl_Module* module, std::uint64_t pc) {
    Dwarf_Addr bias = 0;
    Elf* elf = module != nullptr ? dwfl_module_getelf(module, &bias) : nullptr;
    constexpr std::uint64_t kLongest = 7; // ff /2 with a SIB byte and a 32-bit displacement
    if (elf == nullptr || pc < bias + kLongest) return false;
    const std::uint64_t at = pc - bias;
    std::span<const std::uint8_t> code = code_at(elf, at - kLongest, at);
    if (code.size() != kLongest) return false;
    auto before = [&](std::size_t back) { return code[kLongest - back]; };
    if (before(5) == 0xe8) return true;
    // ff /2: the ModRM's reg field is 2; its length follows from mod and r/m.
    for (std::size_t back = 2; back <= kLongest; ++back) {
        if (before(back) != 0xff) continue;
        const std::uint8_t modrm = before(back - 1);
        if (((modrm >> 3) & 7) != 2) continue;
        const unsigned mod = modrm >> 6, rm = modrm & 7;
        std::size_t length = 2 + (mod != 3 && rm == 4 ? 1 : 0);
        if (mod == 1) length += 1;
        if (mod == 2 || (mod == 0 && rm == 5)) length += 4;
        if (length == back) return true;
    }
    return false;
}

bool cfa_from_frame_pointer(Dwfl_Module* module, std::uint64_t pc) {
    Dwarf_Addr bias = 0;
    Dwarf_CFI* cfi = module != nullptr ? dwfl_module_eh_cfi(module, &bias) : nullptr;
    if (cfi == nullptr || pc < bias) return false;
    std::optional<Cfa> cfa = cfa_at(cfi, pc - bias);
    constexpr unsigned kRbp = 6; // DWARF's number for rbp
    return cfa && !cfa->ops.empty() &&
           (cfa->ops[0].atom == DW_OP_breg0 + kRbp ||
            (cfa->ops[0].atom == DW_OP_bregx && cfa->ops[0].number == kRbp));
}

} // namespace spyglass::native
