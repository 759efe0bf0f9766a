// str / bytes decoding for every layout: each PyUnicode kind, 2.7 byte strings, bounds.
#include "fake_python.hpp"
#include <gtest/gtest.h>

#include "spyglass/python/strings.hpp"

namespace {

using spyglass::Errc;
using spyglass::python::Layout;
using spyglass::python::Overlong;
using spyglass::python::read_bytes;
using spyglass::python::read_str;
using spyglass::test_support::FakePython;

class Strings : public ::testing::TestWithParam<const Layout*> {
  protected:
    std::string decode(FakePython& fake, spyglass::process::Address object) {
        std::string out;
        auto status = read_str(fake.memory(), *GetParam(), object, out,
                               fake.target().types.name_type(*GetParam()));
        EXPECT_TRUE(status.has_value());
        return out;
    }
};

TEST_P(Strings, EveryKindRoundTrips) {
    FakePython fake(*GetParam());
    for (const char* text :
         {"", "plain_ascii", "f\xc3\xbcnf" /* fünf: kind 1 */,
          "\xe5\x87\xbd\xe6\x95\xb0" /* 函数: kind 2 */, "\xf0\xa0\x80\x80" /* U+20000: kind 4 */,
          "mixed \xc3\xa4 \xe5\x87\xbd \xf0\x9f\x92\xa9"})
        EXPECT_EQ(decode(fake, fake.str(text)), text);
}

TEST_P(Strings, LongStringsAreReadPastTheFirstProbe) {
    FakePython fake(*GetParam());
    std::string long_text(3000, 'x');
    long_text += "\xce\xa9"; // one non-ASCII char makes it a latin-1/UCS-2 compact string
    EXPECT_EQ(decode(fake, fake.str(long_text)), long_text);
}

TEST_P(Strings, OverlongNamesAreCorruptUnlessTruncating) {
    FakePython fake(*GetParam());
    auto object = fake.str(std::string(100, 'a'));
    std::string out;
    auto status = read_str(fake.memory(), *GetParam(), object, out, 0, 10, Overlong::fail);
    ASSERT_FALSE(status.has_value());
    EXPECT_EQ(status.error().code, Errc::corrupt);
    out.clear();
    ASSERT_TRUE(read_str(fake.memory(), *GetParam(), object, out, 0, 10, Overlong::truncate));
    EXPECT_EQ(out, "aaaaaaaaaa...");
}

TEST_P(Strings, WrongTypeAndUnmappedMemory) {
    FakePython fake(*GetParam());
    auto object = fake.str("name");
    std::string out;
    auto wrong = read_str(fake.memory(), *GetParam(), object, out, fake.target().types.code);
    ASSERT_FALSE(wrong.has_value());
    EXPECT_EQ(wrong.error().code, Errc::corrupt);
    auto unmapped = read_str(fake.memory(), *GetParam(), 0x7000'0000'0000, out);
    ASSERT_FALSE(unmapped.has_value());
    EXPECT_EQ(unmapped.error().code, Errc::bad_address);
}

TEST_P(Strings, CorruptStateIsRejected) {
    if (GetParam()->py2_strings) return; // 2.7 str has no kind bits to corrupt
    FakePython fake(*GetParam());
    auto object = fake.str("name");
    const auto& o = GetParam()->off;
    fake.put<std::uint32_t>(object, o.unicode_state, 3u << o.unicode_kind_shift); // kind 3
    std::string out;
    auto status = read_str(fake.memory(), *GetParam(), object, out);
    ASSERT_FALSE(status.has_value());
    EXPECT_EQ(status.error().code, Errc::corrupt);
}

TEST_P(Strings, BytesContent) {
    FakePython fake(*GetParam());
    std::vector<std::uint8_t> content(300);
    for (std::size_t i = 0; i < content.size(); ++i)
        content[i] = static_cast<std::uint8_t>(i);
    std::vector<std::uint8_t> out;
    ASSERT_TRUE(read_bytes(fake.memory(), *GetParam(), fake.bytes(content), out, 1000));
    EXPECT_EQ(out, content);
    EXPECT_FALSE(read_bytes(fake.memory(), *GetParam(), fake.bytes(content), out, 100));
}

std::string layout_name(const ::testing::TestParamInfo<const Layout*>& info) {
    return "Py" + std::to_string(info.param->version.major) + "_" +
           std::to_string(info.param->version.minor);
}

INSTANTIATE_TEST_SUITE_P(AllLayouts, Strings,
                         ::testing::ValuesIn(spyglass::python::all_layouts().begin(),
                                             spyglass::python::all_layouts().end()),
                         layout_name);

TEST(Utf8, Py2BytesAreDecodedAsUtf8WithReplacement) {
    std::string out;
    std::vector<std::uint8_t> bytes{'a', 0xc3, 0xa4, 0xff, 'b', 0xe5, 0x87};
    spyglass::python::append_utf8_lossy(out, bytes);
    EXPECT_EQ(out, "a\xc3\xa4\xef\xbf\xbd"
                   "b\xef\xbf\xbd\xef\xbf\xbd");
}

TEST(Utf8, SurrogatesBecomeReplacementCharacters) {
    std::string out;
    spyglass::python::append_utf8(out, 0xD800);
    spyglass::python::append_utf8(out, 0x110000);
    EXPECT_EQ(out, "\xef\xbf\xbd\xef\xbf\xbd");
}

} // namespace
