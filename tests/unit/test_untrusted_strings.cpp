// str, bytes and code objects whose bytes (or whose layout, as a target's _Py_DebugOffsets can
// make it) are hostile: every field stays inside what was read, every size is checked.
#include <limits>

#include "fake_python.hpp"
#include <gtest/gtest.h>

#include "spyglass/python/code.hpp"
#include "spyglass/python/strings.hpp"

namespace {

using spyglass::Errc;
using spyglass::process::Address;
using spyglass::python::kAbsent;
using spyglass::python::Layout;
using spyglass::python::layout_for;
using spyglass::python::Overlong;
using spyglass::python::read_bytes;
using spyglass::python::read_code;
using spyglass::python::read_str;
using spyglass::test_support::FakePython;

constexpr std::size_t kUnlimited = std::numeric_limits<std::size_t>::max();

Layout layout_313() {
    return *layout_for(3, 13);
}

// A layout whose str length field lies past the 128 bytes read first: the load must not index
// the local probe buffer beyond its end.
TEST(UntrustedStrings, AFieldPastTheProbeIsCorrupt) {
    Layout layout = layout_313();
    layout.off.unicode_length = 128; // just past the probe: ASan sees it
    FakePython fake(layout);
    Address object = fake.str("name");
    std::string out;
    auto status = read_str(fake.memory(), layout, object, out);
    ASSERT_FALSE(status);
    EXPECT_EQ(status.error().code, Errc::corrupt);
}

TEST(UntrustedStrings, ATypeFieldPastTheProbeIsCorrupt) {
    Layout layout = layout_313();
    layout.off.object_type = 4000;
    FakePython fake(layout);
    Address object = fake.str("name");
    std::string out;
    auto status = read_str(fake.memory(), layout, object, out, fake.target().types.unicode);
    ASSERT_FALSE(status);
    EXPECT_EQ(status.error().code, Errc::corrupt);
    std::vector<std::uint8_t> bytes;
    Address data = fake.bytes({1, 2, 3});
    auto bytes_status = read_bytes(fake.memory(), layout, data, bytes, 16, 1);
    ASSERT_FALSE(bytes_status);
    EXPECT_EQ(bytes_status.error().code, Errc::corrupt);
}

TEST(UntrustedStrings, ABytesSizePastTheProbeIsCorrupt) {
    Layout layout = layout_313();
    layout.off.var_size = 128;
    FakePython fake(layout);
    Address object = fake.bytes({1, 2, 3});
    std::vector<std::uint8_t> out;
    auto status = read_bytes(fake.memory(), layout, object, out, 1024);
    ASSERT_FALSE(status);
    EXPECT_EQ(status.error().code, Errc::corrupt);
}

// 2^62 UCS-4 characters are 2^64 bytes: the product wraps to 0 and the string read as empty.
TEST(UntrustedStrings, ALengthWhoseByteCountWrapsIsCorrupt) {
    Layout layout = layout_313();
    FakePython fake(layout);
    const auto& o = layout.off;
    Address object = fake.str("\xf0\xa0\x80\x80"); // U+20000: a kind-4 compact str
    for (std::int64_t length : {std::int64_t{1} << 62, (std::int64_t{1} << 62) + 1}) {
        fake.put<std::int64_t>(object, o.unicode_length, length);
        std::string out;
        auto status =
            read_str(fake.memory(), layout, object, out, 0, kUnlimited, Overlong::truncate);
        ASSERT_FALSE(status) << "decoded " << out.size() << " bytes";
        EXPECT_EQ(status.error().code, Errc::corrupt);
    }
}

// Far more characters than any reader could want must not size a buffer.
TEST(UntrustedStrings, AHugeLengthDoesNotSizeABuffer) {
    Layout layout = layout_313();
    FakePython fake(layout);
    Address object = fake.str("\xce\xa9");
    fake.put<std::int64_t>(object, layout.off.unicode_length, std::int64_t{1} << 60);
    std::string out;
    auto status = read_str(fake.memory(), layout, object, out, 0, kUnlimited, Overlong::truncate);
    ASSERT_FALSE(status);
    EXPECT_EQ(status.error().code, Errc::corrupt);
}

// A 2.7 str whose mapping ends inside its header: ob_size is not all there, and must not be
// taken from the uninitialized rest of the probe buffer.
TEST(UntrustedStrings, AHeaderCutByTheEndOfTheMappingIsABadAddress) {
    const Layout& layout = *layout_for(2, 7);
    spyglass::process::FakeMemory memory;
    constexpr Address kAt = 0x5000'0000;
    memory.map(kAt, 20);
    memory.put<std::uint32_t>(kAt + 16, 5);
    std::string out;
    auto status = read_str(memory, layout, kAt, out);
    ASSERT_FALSE(status);
    EXPECT_EQ(status.error().code, Errc::bad_address);
    EXPECT_EQ(status.error().address, kAt + 20);
}

// A non-compact (legacy) str's pointer field past the probe.
TEST(UntrustedStrings, ALegacyPointerPastTheProbeIsCorrupt) {
    Layout layout = *layout_for(3, 11);
    layout.off.unicode_legacy_data = 0xfffffff9; // + 8 wraps in 32 bits
    FakePython fake(layout);
    Address object = fake.str("name");
    const auto& o = layout.off;
    fake.put<std::uint32_t>(object, o.unicode_state, 1u << o.unicode_kind_shift); // not compact
    std::string out;
    auto status = read_str(fake.memory(), layout, object, out);
    ASSERT_FALSE(status);
    EXPECT_EQ(status.error().code, Errc::corrupt);
}

// A code-object field near 2^32: `offset + 8` wrapped in 32 bits, the header came out short and
// the field silently read as 0.
TEST(UntrustedCode, AHeaderSizeThatWouldWrapIsRefused) {
    Layout layout = layout_313();
    FakePython fake(layout);
    Address code = fake.code("f", "f.py", 10);
    layout.off.code_linetable = 0xfffffff9;
    EXPECT_GT(spyglass::python::code_header_size(layout), spyglass::python::kMaxCodeHeaderBytes);
    spyglass::python::CodeInfo info;
    auto status = read_code(fake.memory(), layout, fake.target().types, code, info);
    ASSERT_FALSE(status);
    EXPECT_EQ(status.error().code, Errc::corrupt);
}

TEST(UntrustedCode, ImpossibleSizesAreCorrupt) {
    Layout layout = layout_313();
    FakePython fake(layout);
    const auto& o = layout.off;
    for (std::int64_t size : {std::int64_t{0}, std::int64_t{-1}, std::int64_t{1} << 62}) {
        Address code = fake.code("f", "f.py", 10);
        fake.put<std::int64_t>(code, o.var_size, size);
        spyglass::python::CodeInfo info;
        auto status = read_code(fake.memory(), layout, fake.target().types, code, info);
        ASSERT_FALSE(status);
        EXPECT_EQ(status.error().code, Errc::corrupt);
    }
    Address code = fake.code("f", "f.py", 10);
    fake.put<std::int32_t>(code, o.code_firsttraceable, -5);
    spyglass::python::CodeInfo info;
    ASSERT_TRUE(read_code(fake.memory(), layout, fake.target().types, code, info));
    EXPECT_EQ(info.first_traceable, 0);
}

TEST(UntrustedCode, ALineTableLongerThanTheLimitIsCorrupt) {
    Layout layout = layout_313();
    FakePython fake(layout);
    Address code = fake.code("f", "f.py", 10);
    Address table = fake.bytes({1, 2});
    fake.put<std::int64_t>(table, layout.off.var_size, std::int64_t{1} << 40);
    fake.put<std::uint64_t>(code, layout.off.code_linetable, table);
    spyglass::python::CodeInfo info;
    auto status = read_code(fake.memory(), layout, fake.target().types, code, info);
    ASSERT_FALSE(status);
    EXPECT_EQ(status.error().code, Errc::corrupt);
}

} // namespace
