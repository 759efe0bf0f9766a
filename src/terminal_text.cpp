#include "spyglass/terminal_text.hpp"

#include <cstdint>

#include <fmt/format.h>

namespace spyglass {

namespace {

// The length of the UTF-8 sequence at `at` and its code point, or 0 when it is not one (a
// stray continuation byte, an overlong form, a surrogate, a cut sequence).
std::size_t utf8_sequence(std::string_view text, std::size_t at, std::uint32_t& code) {
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
    unsigned char lead = byte(at);
    std::size_t length = 0;
    std::uint32_t min = 0;
    if (lead >= 0xC2 && lead <= 0xDF) {
        length = 2, code = lead & 0x1F, min = 0x80;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        length = 3, code = lead & 0x0F, min = 0x800;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        length = 4, code = lead & 0x07, min = 0x10000;
    } else {
        return 0;
    }
    if (text.size() - at < length) return 0;
    for (std::size_t i = 1; i < length; ++i) {
        if ((byte(at + i) & 0xC0) != 0x80) return 0;
        code = (code << 6) | (byte(at + i) & 0x3F);
    }
    if (code < min || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0;
    return length;
}

bool shown_escaped(std::uint32_t code) {
    return (code >= 0x80 && code <= 0x9F) || (code >= 0x202A && code <= 0x202E) ||
           (code >= 0x2066 && code <= 0x2069);
}

bool plain(unsigned char c) {
    return c >= 0x20 && c < 0x7F;
}

void append_escaped(std::string& out, std::string_view text, bool keep_newlines) {
    std::size_t i = 0;
    while (i < text.size()) {
        std::size_t run = i;
        while (run < text.size() && plain(static_cast<unsigned char>(text[run])))
            ++run;
        out.append(text, i, run - i);
        if (run == text.size()) return;
        i = run;
        auto c = static_cast<unsigned char>(text[i]);
        if (c < 0x80) {
            switch (c) {
            case '\n':
                out += keep_newlines ? "\n" : "\\n";
                break;
            case '\t':
                out += "\\t";
                break;
            case '\r':
                out += "\\r";
                break;
            default:
                out += fmt::format("\\x{:02x}", c);
            }
            ++i;
            continue;
        }
        std::uint32_t code = 0;
        std::size_t length = utf8_sequence(text, i, code);
        if (length == 0) {
            out += fmt::format("\\x{:02x}", c);
            ++i;
        } else if (shown_escaped(code)) {
            out += fmt::format("\\u{:04x}", code);
            i += length;
        } else {
            out.append(text, i, length);
            i += length;
        }
    }
}

} // namespace

void append_terminal_safe(std::string& out, std::string_view text) {
    append_escaped(out, text, false);
}

std::string terminal_safe(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    append_escaped(out, text, false);
    return out;
}

std::string terminal_safe_lines(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    append_escaped(out, text, true);
    return out;
}

} // namespace spyglass
