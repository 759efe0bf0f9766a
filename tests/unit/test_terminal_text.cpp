// Text from the target on root's terminal (issue 23, item 3): what a terminal would act on is
// made visible, everything else is kept byte for byte.
#include <gtest/gtest.h>

#include "spyglass/terminal_text.hpp"

namespace {

using spyglass::terminal_safe;
using spyglass::terminal_safe_lines;

TEST(TerminalText, KeepsPrintableTextAndUtf8) {
    EXPECT_EQ(terminal_safe("handler (app.py:40)"), "handler (app.py:40)");
    EXPECT_EQ(terminal_safe("caf\xC3\xA9 \xE2\x80\x94 \xF0\x9F\x90\x8D"),
              "caf\xC3\xA9 \xE2\x80\x94 \xF0\x9F\x90\x8D");
    EXPECT_EQ(terminal_safe(""), "");
    EXPECT_EQ(terminal_safe("a\\x1b"), "a\\x1b"); // a backslash stays as it is
}

TEST(TerminalText, EscapesC0ControlsAndDel) {
    EXPECT_EQ(terminal_safe("\x1b]0;pwned\x07"), "\\x1b]0;pwned\\x07");
    EXPECT_EQ(terminal_safe("a\nb\tc\rd"), "a\\nb\\tc\\rd");
    EXPECT_EQ(terminal_safe(std::string_view("nul\0end", 7)), "nul\\x00end");
    EXPECT_EQ(terminal_safe("\x7f"), "\\x7f");
}

TEST(TerminalText, EscapesC1ControlsAndBidiOverrides) {
    EXPECT_EQ(terminal_safe("\xC2\x9B"
                            "31m"),
              "\\u009b31m");                                   // CSI
    EXPECT_EQ(terminal_safe("\xE2\x80\xAEtxt"), "\\u202etxt"); // right-to-left override
    EXPECT_EQ(terminal_safe("\xE2\x81\xA6x"), "\\u2066x");     // left-to-right isolate
}

TEST(TerminalText, EscapesBytesThatAreNotUtf8) {
    EXPECT_EQ(terminal_safe("\xff"), "\\xff");
    EXPECT_EQ(terminal_safe("\xC3"), "\\xc3");                   // cut sequence
    EXPECT_EQ(terminal_safe("\xC0\xAF"), "\\xc0\\xaf");          // overlong '/'
    EXPECT_EQ(terminal_safe("\xED\xA0\x80"), "\\xed\\xa0\\x80"); // a surrogate
    EXPECT_EQ(terminal_safe("\x80x"), "\\x80x");                 // a stray continuation byte
}

TEST(TerminalText, LinesKeepTheirOwnNewlinesOnly) {
    EXPECT_EQ(terminal_safe_lines("one\ntwo\x1b[2J\n"), "one\ntwo\\x1b[2J\n");
}

} // namespace
