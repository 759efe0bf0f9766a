#include "spyglass/output/json_writer.hpp"

#include <cmath>

#include <fmt/format.h>

namespace spyglass::output {

void JsonWriter::separate() {
    if (after_key_) {
        after_key_ = false;
        return;
    }
    if (!first_.empty()) {
        if (!first_.back()) out_.push_back(',');
        first_.back() = false;
    }
}

JsonWriter& JsonWriter::begin_object() {
    separate();
    out_.push_back('{');
    first_.push_back(true);
    return *this;
}

JsonWriter& JsonWriter::end_object() {
    out_.push_back('}');
    first_.pop_back();
    return *this;
}

JsonWriter& JsonWriter::begin_array() {
    separate();
    out_.push_back('[');
    first_.push_back(true);
    return *this;
}

JsonWriter& JsonWriter::end_array() {
    out_.push_back(']');
    first_.pop_back();
    return *this;
}

JsonWriter& JsonWriter::key(std::string_view name) {
    separate();
    append_quoted(out_, name);
    out_.push_back(':');
    after_key_ = true;
    return *this;
}

JsonWriter& JsonWriter::value(std::string_view text) {
    separate();
    append_quoted(out_, text);
    return *this;
}

JsonWriter& JsonWriter::value(std::int64_t number) {
    separate();
    fmt::format_to(std::back_inserter(out_), "{}", number);
    return *this;
}

JsonWriter& JsonWriter::value(std::uint64_t number) {
    separate();
    fmt::format_to(std::back_inserter(out_), "{}", number);
    return *this;
}

JsonWriter& JsonWriter::value(double number) {
    separate();
    if (!std::isfinite(number)) number = 0;
    fmt::format_to(std::back_inserter(out_), "{}", number);
    return *this;
}

JsonWriter& JsonWriter::value(bool flag) {
    separate();
    out_ += flag ? "true" : "false";
    return *this;
}

JsonWriter& JsonWriter::null() {
    separate();
    out_ += "null";
    return *this;
}

void JsonWriter::append_quoted(std::string& out, std::string_view text) {
    out.push_back('"');
    const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
    std::size_t i = 0, n = text.size();
    while (i < n) {
        unsigned char c = bytes[i];
        if (c == '"' || c == '\\') {
            out.push_back('\\');
            out.push_back(static_cast<char>(c));
            ++i;
        } else if (c < 0x20) {
            switch (c) {
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                fmt::format_to(std::back_inserter(out), "\\u{:04x}", c);
            }
            ++i;
        } else if (c < 0x80) {
            out.push_back(static_cast<char>(c));
            ++i;
        } else {
            // Copy a valid UTF-8 sequence, replace anything else.
            std::size_t len = (c & 0xE0) == 0xC0   ? 2
                              : (c & 0xF0) == 0xE0 ? 3
                              : (c & 0xF8) == 0xF0 ? 4
                                                   : 0;
            bool ok = len != 0 && i + len <= n;
            for (std::size_t k = 1; ok && k < len; ++k)
                ok = (bytes[i + k] & 0xC0) == 0x80;
            if (ok) {
                out.append(text.substr(i, len));
                i += len;
            } else {
                out += "\xEF\xBF\xBD";
                ++i;
            }
        }
    }
    out.push_back('"');
}

} // namespace spyglass::output
