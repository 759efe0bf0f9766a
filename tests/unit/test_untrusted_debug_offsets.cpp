// _Py_DebugOffsets that are each consistent with their struct size but that no reader can use:
// refused at attach with `unsupported` instead of indexing past a fixed local buffer later.
#include <cstring>
#include <fstream>
#include <iterator>

#include "fake_python.hpp"
#include <gtest/gtest.h>

#include "spyglass/python/code.hpp"
#include "spyglass/python/debug_offsets.hpp"
#include "spyglass/python/strings.hpp"

namespace {

using spyglass::Errc;
using spyglass::python::layout_for;
using spyglass::python::layout_from_debug_offsets;

constexpr std::uint64_t kRuntimeSize = 283320;

std::vector<std::uint8_t> live_313() {
    std::ifstream in(std::string(SPYGLASS_SOURCE_DIR) + "/tests/unit/data/debug_offsets_3.13.0.bin",
                     std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void put(std::vector<std::uint8_t>& bytes, std::size_t position, std::uint64_t value) {
    std::memcpy(bytes.data() + position, &value, sizeof value);
}

// Positions in 3.13's _Py_DebugOffsets.
constexpr std::size_t kFrameSize = 224, kFrameOwner = 264;
constexpr std::size_t kCodeSize = 272, kCodeLinetable = 304;
constexpr std::size_t kUnicodeSize = 536, kUnicodeLength = 552, kAsciiSize = 560;
constexpr std::size_t kBytesSize = 512, kBytesData = 528;
constexpr std::size_t kObjectSize = 352, kObjectType = 360;
constexpr std::size_t kTstateSize = 152, kTstateChunk = 208;

void expect_refused(const std::vector<std::uint8_t>& bytes, std::string_view what) {
    auto result = layout_from_debug_offsets(bytes, kRuntimeSize);
    ASSERT_FALSE(result) << what << " was accepted";
    EXPECT_EQ(result.error().code, Errc::unsupported);
    EXPECT_NE(result.error().message.find(what), std::string::npos) << result.error().message;
}

TEST(UntrustedDebugOffsets, TheLiveDescriptorPassesTheReaderBounds) {
    auto result = layout_from_debug_offsets(live_313(), kRuntimeSize);
    ASSERT_TRUE(result) << result.error().message;
    EXPECT_TRUE(spyglass::python::check_reader_bounds(result->layout));
    for (const auto* layout : spyglass::python::all_layouts())
        EXPECT_TRUE(spyglass::python::check_reader_bounds(*layout)) << layout->version.minor;
}

// The brief's case: a str field at 1 MiB - 1, inside a 1 MiB PyUnicodeObject.
TEST(UntrustedDebugOffsets, AStrFieldFarPastTheProbeIsRefused) {
    auto bytes = live_313();
    put(bytes, kUnicodeSize, 1u << 20);
    put(bytes, kUnicodeLength, (1u << 20) - 1);
    expect_refused(bytes, "str");
}

// The layout it would have produced indexes the probe buffer out of bounds: reading a str with
// it must fail cleanly even if a caller skipped the check.
TEST(UntrustedDebugOffsets, AStrFieldFarPastTheProbeDoesNotCrashTheReader) {
    spyglass::python::Layout layout = *layout_for(3, 13);
    layout.off.unicode_length = (1u << 20) - 1;
    spyglass::process::FakeMemory memory;
    memory.map(0x5000'0000, 4096);
    std::string out;
    auto status = spyglass::python::read_str(memory, layout, 0x5000'0000, out);
    ASSERT_FALSE(status);
    EXPECT_EQ(status.error().code, Errc::corrupt);
}

TEST(UntrustedDebugOffsets, AStrHeaderPastTheProbeIsRefused) {
    auto bytes = live_313();
    put(bytes, kAsciiSize, 256); // compact data at 272
    expect_refused(bytes, "str");
    auto type = live_313();
    put(type, kObjectSize, 1u << 20);
    put(type, kObjectType, 4000);
    expect_refused(type, "str");
}

TEST(UntrustedDebugOffsets, ABytesHeaderPastTheProbeIsRefused) {
    auto bytes = live_313();
    put(bytes, kBytesSize, 1u << 20);
    put(bytes, kBytesData, 600);
    expect_refused(bytes, "bytes");
}

TEST(UntrustedDebugOffsets, ACodeHeaderPastTheCodeBufferIsRefused) {
    auto bytes = live_313();
    put(bytes, kCodeSize, 1u << 20);
    put(bytes, kCodeLinetable, 600);
    expect_refused(bytes, "code");
}

TEST(UntrustedDebugOffsets, AFrameHeaderPastTheFrameBufferIsRefused) {
    auto bytes = live_313();
    put(bytes, kFrameSize, 1u << 20);
    put(bytes, kFrameOwner, 300);
    expect_refused(bytes, "frame");
}

TEST(UntrustedDebugOffsets, AThreadStateReadOfAMegabyteIsRefused) {
    auto bytes = live_313();
    put(bytes, kTstateSize, 1u << 20);
    put(bytes, kTstateChunk, (1u << 20) - 16);
    expect_refused(bytes, "thread state");
}

} // namespace
