// The fallbacks of discovery, on in-memory input: version strings, file names, decoding
// PyInterpreterState_Head, and the plausibility-checked scan for the interpreter state.
#include "fake_python.hpp"
#include <gtest/gtest.h>

#include "spyglass/process/procfs.hpp"
#include "spyglass/python/discovery.hpp"

namespace {

using spyglass::python::decode_interp_head_function;
using spyglass::python::find_version_string;
using spyglass::python::version_from_file_name;
using spyglass::test_support::FakePython;

std::span<const std::uint8_t> bytes_of(std::string_view text) {
    return {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()};
}

TEST(Discovery, FindsTheSysVersionText) {
    using namespace std::string_literals;
    std::string bss = "\0\0\x01garbage 2.7 3.9.18 (main, May  9 2026, 07:33:49) [GCC 12.2.0]\0"s;
    auto version = find_version_string(bytes_of(bss));
    ASSERT_TRUE(version);
    EXPECT_EQ(*version, (spyglass::python::PythonVersion{3, 9, 18}));
    auto prerelease = find_version_string(bytes_of("x3.13.0rc2 (main, ...)"));
    ASSERT_TRUE(prerelease);
    EXPECT_EQ(prerelease->minor, 13);
    EXPECT_TRUE(find_version_string(bytes_of("2.7.18+ (default")));
    EXPECT_FALSE(find_version_string(bytes_of("version 3.9.18 built")));
    EXPECT_FALSE(find_version_string(bytes_of("13.9.18 (")));
    EXPECT_FALSE(find_version_string(bytes_of("3.9 (")));
}

TEST(Discovery, VersionFromFileNames) {
    EXPECT_EQ(version_from_file_name("/usr/lib/libpython3.9.so.1.0")->minor, 9);
    EXPECT_EQ(version_from_file_name("/opt/lib/libpython3.6m.so")->minor, 6);
    EXPECT_EQ(version_from_file_name("/usr/bin/python3.11")->minor, 11);
    EXPECT_EQ(version_from_file_name("libpython2.7.so")->major, 2);
    EXPECT_FALSE(version_from_file_name("/usr/bin/python"));
    EXPECT_FALSE(version_from_file_name("/usr/bin/uwsgi"));
    EXPECT_FALSE(version_from_file_name("/usr/lib/python3.11/foo.so/python3"));
}

TEST(Discovery, DecodesPyInterpreterStateHead) {
    // mov rax, [rip + 0x200000]; ret
    const std::uint8_t code[] = {0x48, 0x8b, 0x05, 0x00, 0x00, 0x20, 0x00, 0xc3};
    auto slot = decode_interp_head_function(code, 0x1000);
    ASSERT_TRUE(slot);
    EXPECT_EQ(*slot, 0x1000u + 7 + 0x200000);
    const std::uint8_t other[] = {0x55, 0x48, 0x89, 0xe5, 0x00, 0x00, 0x00, 0xc3};
    EXPECT_FALSE(decode_interp_head_function(other, 0x1000));
}

class RootScan : public ::testing::TestWithParam<const spyglass::python::Layout*> {};

TEST_P(RootScan, FindsTheSlotThatPointsAtTheInterpreter) {
    FakePython fake(*GetParam());
    auto interp = fake.interpreter();
    auto tstate = fake.thread(interp, 0x7f00000010c0);
    bool chunks = GetParam()->frame_model == spyglass::python::FrameModel::interpreter_frames;
    FakePython::Chunk chunk{};
    if (chunks) chunk = fake.chunk(4096);
    auto code = fake.code("main", "/app.py", 1);
    auto frame = chunks ? fake.push_frame(chunk, code, 0, 1) : fake.frame_object(code, 0, 1);
    fake.set_frame(tstate, frame, chunks ? &chunk : nullptr);

    // A ".data" image: decoys first (a pointer to a thread state, a self-pointing object, a
    // pointer to unmapped memory), then the real slot.
    auto decoy = fake.alloc(256);
    fake.put<std::uint64_t>(decoy, GetParam()->off.interp_threads_head, decoy);
    std::vector<std::uint64_t> words = {0, tstate, decoy, 0x7000'0000'0000, 12345, interp, 0};
    std::vector<std::uint8_t> region(words.size() * 8);
    std::memcpy(region.data(), words.data(), region.size());
    spyglass::process::MapEntry heap;
    heap.start = FakePython::kHeap;
    heap.end = FakePython::kHeap + FakePython::kHeapSize;
    heap.readable = true;
    spyglass::process::AddressSpace space({heap});
    auto slot = spyglass::python::scan_for_interpreter(fake.memory(), *GetParam(),
                                                       fake.target().types, space, 0x5000, region);
    ASSERT_TRUE(slot);
    EXPECT_EQ(*slot, 0x5000u + 5 * 8);
}

TEST_P(RootScan, RejectsAnInterpreterWhoseThreadRunsNoCode) {
    FakePython fake(*GetParam());
    auto interp = fake.interpreter();
    auto tstate = fake.thread(interp, 0x7f00000010c0);
    fake.set_frame(tstate, 0);
    std::vector<std::uint64_t> words = {interp};
    std::vector<std::uint8_t> region(8);
    std::memcpy(region.data(), words.data(), 8);
    spyglass::process::MapEntry heap;
    heap.start = FakePython::kHeap;
    heap.end = FakePython::kHeap + FakePython::kHeapSize;
    heap.readable = true;
    spyglass::process::AddressSpace space({heap});
    EXPECT_FALSE(spyglass::python::scan_for_interpreter(
        fake.memory(), *GetParam(), fake.target().types, space, 0x5000, region));
}

std::string layout_name(const ::testing::TestParamInfo<const spyglass::python::Layout*>& info) {
    return "Py" + std::to_string(info.param->version.major) + "_" +
           std::to_string(info.param->version.minor);
}

INSTANTIATE_TEST_SUITE_P(AllLayouts, RootScan,
                         ::testing::ValuesIn(spyglass::python::all_layouts().begin(),
                                             spyglass::python::all_layouts().end()),
                         layout_name);

TEST(Procfs, ParsesStatWithSpacesAndParensInTheName) {
    auto stat = spyglass::process::parse_stat(
        "1234 (my (odd) name) S 1 1234 1234 0 -1 4194560 1 0 0 0 25 7 0 0 20 0 3 0 987 1 2 3");
    ASSERT_TRUE(stat);
    EXPECT_EQ(stat->comm, "my (odd) name");
    EXPECT_EQ(stat->state, 'S');
    EXPECT_EQ(stat->ppid, 1);
    EXPECT_EQ(stat->utime_ticks, 25u);
    EXPECT_EQ(stat->stime_ticks, 7u);
    EXPECT_EQ(stat->start_ticks, 987u);
    EXPECT_FALSE(spyglass::process::parse_stat("1234 no parens S 1"));
}

TEST(Procfs, ParsesMaps) {
    auto maps = spyglass::process::parse_maps(
        "55d0c0a00000-55d0c0a21000 r--p 00000000 08:01 131 /usr/bin/python3.11\n"
        "7f0000000000-7f0000001000 rw-p 00000000 00:00 0 \n"
        "7f0000001000-7f0000002000 r-xp 00001000 08:01 42 /opt/my lib/libpython3.12.so.1.0 "
        "(deleted)\n"
        "garbage\n");
    ASSERT_EQ(maps.size(), 3u);
    EXPECT_EQ(maps[0].path, "/usr/bin/python3.11");
    EXPECT_TRUE(maps[0].readable);
    EXPECT_FALSE(maps[0].writable);
    EXPECT_TRUE(maps[1].path.empty());
    EXPECT_TRUE(maps[1].writable);
    EXPECT_EQ(maps[2].path, "/opt/my lib/libpython3.12.so.1.0 (deleted)");
    EXPECT_EQ(maps[2].offset, 0x1000u);
    spyglass::process::AddressSpace space(maps);
    EXPECT_TRUE(space.readable(0x7f0000000ff8, 16)); // spans two adjacent mappings
    EXPECT_FALSE(space.readable(0x7f0000001ff8, 16));
}

} // namespace
