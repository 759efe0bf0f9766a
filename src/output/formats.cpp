// Lookups over the format table, and the words and sentences written from it.
#include "spyglass/output/formats.hpp"

#include <cctype>

#include <fmt/format.h>

namespace spyglass::output {

namespace {

bool ends_with_nocase(std::string_view text, std::string_view suffix) {
    if (text.size() < suffix.size()) return false;
    text.remove_prefix(text.size() - suffix.size());
    for (std::size_t i = 0; i < suffix.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(text[i])) != suffix[i]) return false;
    return true;
}

// "a, b or c" (`last_joiner` "or"), each part from `part(info)`.
template <typename Part>
std::string listed(std::string_view last_joiner, Part part) {
    std::string out;
    for (std::size_t i = 0; i < kFormats.size(); ++i) {
        if (i > 0) out += i + 1 == kFormats.size() ? fmt::format(" {} ", last_joiner) : ", ";
        out += part(kFormats[i]);
    }
    return out;
}

} // namespace

const FormatInfo& format_info(Format format) noexcept {
    for (const FormatInfo& info : kFormats)
        if (info.format == format) return info;
    return kFormats[0]; // unreachable: the table test checks that every format has its row
}

const char* format_name(Format format) noexcept {
    return format_info(format).name.data(); // the literals are NUL-terminated
}

std::optional<Format> parse_format(std::string_view name) noexcept {
    if (name.empty()) return std::nullopt;
    for (const FormatInfo& info : kFormats)
        if (name == info.name || name == info.pyspy_alias || name == info.other_alias)
            return info.format;
    return std::nullopt;
}

Format format_for_path(std::string_view path) noexcept {
    Format best = kDefaultFormat;
    std::size_t best_length = 0;
    for (const FormatInfo& info : kFormats)
        for (std::string_view extension : info.extensions)
            if (extension.size() > best_length && ends_with_nocase(path, extension)) {
                best = info.format;
                best_length = extension.size();
            }
    return best;
}

bool needs_timeline(Format format) noexcept {
    return format_info(format).needs_timeline;
}

bool needs_calls(Format format) noexcept {
    return format_info(format).needs_calls;
}

std::string_view default_extension(Format format) noexcept {
    return format_info(format).extensions[0].substr(1);
}

std::vector<std::string> format_words(bool with_pyspy_aliases) {
    std::vector<std::string> words;
    for (const FormatInfo& info : kFormats) {
        words.emplace_back(info.name);
        if (with_pyspy_aliases && !info.pyspy_alias.empty()) words.emplace_back(info.pyspy_alias);
    }
    return words;
}

std::string format_names_text(bool with_pyspy_aliases) {
    return listed("or", [&](const FormatInfo& info) {
        if (!with_pyspy_aliases || info.pyspy_alias.empty()) return std::string(info.name);
        return fmt::format("{} (or {})", info.name, info.pyspy_alias);
    });
}

std::string format_descriptions_text(std::string_view last_joiner) {
    return listed(last_joiner,
                  [](const FormatInfo& info) { return std::string(info.description); });
}

std::string unknown_format_message(std::string_view name) {
    return fmt::format("unknown format {}: use {}", name, format_names_text(false));
}

} // namespace spyglass::output
