// Files of the target that are not what they claim: ELF headers whose sums wrap, truncated ELF
// files, /proc text with impossible ranges, file names with endless digits.
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include <elf.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "spyglass/process/elf.hpp"
#include "spyglass/process/procfs.hpp"
#include "spyglass/python/discovery.hpp"

namespace {

using spyglass::process::AddressSpace;
using spyglass::process::ElfFile;
using spyglass::process::MapEntry;
using spyglass::process::parse_maps;

// A temporary file removed at the end of the test.
class TempFile {
  public:
    explicit TempFile(const std::vector<std::uint8_t>& bytes) {
        char name[] = "/tmp/spyglass_untrusted_XXXXXX";
        int fd = ::mkstemp(name);
        EXPECT_GE(fd, 0);
        path_ = name;
        EXPECT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
        ::close(fd);
    }
    ~TempFile() { std::remove(path_.c_str()); }
    TempFile(const TempFile&) = delete;
    TempFile& operator=(const TempFile&) = delete;
    [[nodiscard]] const std::string& path() const { return path_; }

  private:
    std::string path_;
};

// An ELF header followed by the given PT_LOAD program headers, and no sections.
std::vector<std::uint8_t> elf_with_segments(const std::vector<Elf64_Phdr>& segments) {
    Elf64_Ehdr header{};
    std::memcpy(header.e_ident, ELFMAG, SELFMAG);
    header.e_ident[EI_CLASS] = ELFCLASS64;
    header.e_ident[EI_DATA] = ELFDATA2LSB;
    header.e_ident[EI_VERSION] = EV_CURRENT;
    header.e_type = ET_DYN;
    header.e_machine = EM_X86_64;
    header.e_version = EV_CURRENT;
    header.e_phoff = sizeof header;
    header.e_ehsize = sizeof header;
    header.e_phentsize = sizeof(Elf64_Phdr);
    header.e_phnum = static_cast<Elf64_Half>(segments.size());
    std::vector<std::uint8_t> bytes(sizeof header + segments.size() * sizeof(Elf64_Phdr));
    std::memcpy(bytes.data(), &header, sizeof header);
    if (!segments.empty())
        std::memcpy(bytes.data() + sizeof header, segments.data(),
                    segments.size() * sizeof(Elf64_Phdr));
    return bytes;
}

Elf64_Phdr load_segment(std::uint64_t vaddr, std::uint64_t offset, std::uint64_t size) {
    Elf64_Phdr segment{};
    segment.p_type = PT_LOAD;
    segment.p_vaddr = vaddr;
    segment.p_offset = offset;
    segment.p_filesz = size;
    segment.p_memsz = size;
    return segment;
}

// A symbol near 2^64: `address + length` wrapped past the segment check, and the file offset
// wrapped back to the start of the file, so the header bytes came back as the symbol's.
TEST(UntrustedElf, AnAddressWhoseEndWrapsIsNotInAnySegment) {
    TempFile file(elf_with_segments(
        {load_segment(0x1000, 0x1014, 0x100), load_segment(0x4000, 0, sizeof(Elf64_Ehdr))}));
    auto elf = ElfFile::open(file.path());
    ASSERT_TRUE(elf) << elf.error().message;
    auto magic = elf->read_file_bytes(0x4000, 4);
    ASSERT_TRUE(magic);
    EXPECT_EQ(std::memcmp(magic->data(), ELFMAG, SELFMAG), 0);
    EXPECT_FALSE(elf->read_file_bytes(0xfffffffffffffffcull, 12));
    EXPECT_FALSE(elf->read_file_bytes(0x4000 + sizeof(Elf64_Ehdr) - 2, 4)); // past the segment
}

TEST(UntrustedElf, ASegmentWhoseEndWrapsHoldsNothing) {
    TempFile file(elf_with_segments({load_segment(0xfffffffffffff000ull, 0, 0x2000)}));
    auto elf = ElfFile::open(file.path());
    ASSERT_TRUE(elf) << elf.error().message;
    EXPECT_FALSE(elf->read_file_bytes(0x10, 4));
    EXPECT_FALSE(elf->read_file_bytes(0xfffffffffffff000ull, 0x1800));
}

// A truncated file: the headers claim program and section headers past its end.
TEST(UntrustedElf, TruncatedFilesDoNotCrash) {
    auto bytes = elf_with_segments({load_segment(0x1000, 0, 0x100)});
    auto* header = reinterpret_cast<Elf64_Ehdr*>(bytes.data());
    header->e_phnum = 60;
    header->e_shoff = 1u << 20;
    header->e_shnum = 40;
    header->e_shentsize = sizeof(Elf64_Shdr);
    header->e_shstrndx = 3;
    TempFile file(bytes);
    auto elf = ElfFile::open(file.path());
    if (elf) {
        EXPECT_FALSE(elf->symbol("_PyRuntime"));
        EXPECT_FALSE(elf->read_file_bytes(0x1000, 4096));
    }
    std::ifstream self("/proc/self/exe", std::ios::binary);
    std::vector<std::uint8_t> prefix(8192);
    self.read(reinterpret_cast<char*>(prefix.data()), static_cast<std::streamsize>(prefix.size()));
    TempFile cut(prefix);
    auto truncated = ElfFile::open(cut.path());
    if (truncated) {
        EXPECT_FALSE(truncated->symbol("main"));
    }
}

TEST(UntrustedProcfs, AMapsLineWhoseEndIsBeforeItsStartIsSkipped) {
    auto maps = parse_maps("2000-1000 r--p 00000000 08:01 1 /x\n"
                           "1000-1000 r--p 00000000 08:01 1 /empty\n"
                           "1000-2000 r--p 00000000 08:01 1 /ok\n"
                           "0-ffffffffffffffff r--p 00000000 00:00 0 [huge]\n");
    ASSERT_EQ(maps.size(), 2u);
    EXPECT_EQ(maps[0].path, "/ok");
    EXPECT_EQ(maps[1].path, "[huge]");
}

TEST(UntrustedProcfs, AddressSpaceMergesAfterSorting) {
    auto entry = [](std::uint64_t start, std::uint64_t end) {
        MapEntry e;
        e.start = start;
        e.end = end;
        e.readable = true;
        return e;
    };
    AddressSpace space({entry(0x3000, 0x4000), entry(0x1000, 0x2000), entry(0x2000, 0x3000)});
    EXPECT_TRUE(space.readable(0x2800, 0x1000));
    EXPECT_TRUE(space.readable(0x1000, 0x3000));
    EXPECT_FALSE(space.readable(0x1000, 0x3001));
    AddressSpace reversed({entry(0x5000, 0x4000)});
    EXPECT_FALSE(reversed.readable(0x4800, 8));
    AddressSpace top({entry(0xffffffffffff0000ull, 0xfffffffffffff000ull)});
    EXPECT_TRUE(top.readable(0xffffffffffff0000ull, 0xf000));
    EXPECT_FALSE(top.readable(0xfffffffffffff000ull - 8, 0x2000000000000000ull));
}

TEST(UntrustedProcfs, NamespacedPidTakesOnlyPositivePids) {
    using spyglass::process::parse_namespaced_pid;
    EXPECT_EQ(parse_namespaced_pid("Name:\tpython\nNSpid:\t4242\t7\nNSgid:\t1\n", 4242), 7);
    EXPECT_EQ(parse_namespaced_pid("Name:\tpython\nNSpid:\t4242\n", 4242), 4242);
    EXPECT_EQ(parse_namespaced_pid("Name:\tpython\nNSpid:\t4242\t0\n", 4242), 4242);
    EXPECT_EQ(parse_namespaced_pid("Name:\tpython\nNSpid:\t4242\t-1\n", 4242), 4242);
    EXPECT_EQ(parse_namespaced_pid("Name:\tpython\nNSpid:\t4242\t99999999999\n", 4242), 4242);
    EXPECT_EQ(parse_namespaced_pid("Name:\tpython\nNSpid:", 4242), 4242);
    EXPECT_EQ(parse_namespaced_pid("", 4242), 4242);
}

// The minor version's digits were summed into an int before their count was checked.
TEST(UntrustedDiscovery, AFileNameWithEndlessDigitsHasNoVersion) {
    using spyglass::python::version_from_file_name;
    EXPECT_FALSE(version_from_file_name("/usr/lib/libpython3.99999999999999999999.so"));
    EXPECT_FALSE(version_from_file_name("/usr/lib/libpython3.123.so"));
    EXPECT_EQ(version_from_file_name("/usr/lib/libpython3.12.so")->minor, 12);
}

} // namespace
