#include "spyglass/model/labels.hpp"

#include <algorithm>

#include "spyglass/model/frame_table.hpp"
#include "spyglass/terminal_text.hpp"

namespace spyglass::model {

std::uint64_t LabelSetTable::hash(std::span<const Label> labels) noexcept {
    std::uint64_t h = 0xcbf29ce484222325ull ^ labels.size();
    for (const Label& label : labels)
        h = (((h ^ label.key.value) * 0x100000001b3ull) ^ label.value.value) * 0x100000001b3ull;
    return h;
}

LabelSetId LabelSetTable::intern(std::span<const Label> labels, const StringTable& strings) {
    if (labels.empty()) return LabelSetId{};
    scratch_.assign(labels.begin(), labels.end());
    std::stable_sort(scratch_.begin(), scratch_.end(), [&](const Label& a, const Label& b) {
        return strings.view(a.key) < strings.view(b.key);
    });
    // One value per key: the last one given (stable_sort kept their order).
    auto last = std::unique(scratch_.rbegin(), scratch_.rend(),
                            [](const Label& a, const Label& b) { return a.key == b.key; });
    scratch_.erase(scratch_.begin(), last.base());
    const std::uint64_t h = hash(scratch_);
    auto [begin, end] = index_.equal_range(h);
    for (auto it = begin; it != end; ++it) {
        std::span<const Label> existing = get(it->second);
        if (std::equal(existing.begin(), existing.end(), scratch_.begin(), scratch_.end()))
            return it->second;
    }
    LabelSetId id(static_cast<std::uint32_t>(entries_.size()));
    entries_.push_back(
        {static_cast<std::uint32_t>(pool_.size()), static_cast<std::uint32_t>(scratch_.size())});
    pool_.insert(pool_.end(), scratch_.begin(), scratch_.end());
    index_.emplace(h, id);
    return id;
}

void LabelSetTable::clear() {
    index_.clear();
    pool_.clear();
    entries_.assign(1, {0, 0});
}

bool valid_label_key(std::string_view key) noexcept {
    if (key.empty() || key.size() > kMaxLabelKey) return false;
    return std::all_of(key.begin(), key.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '.' || c == '-';
    });
}

Result<LabelText> parse_label(std::string_view flag, std::string_view text) {
    const std::string shown = terminal_safe(text);
    const std::size_t equals = text.find('=');
    if (equals == std::string_view::npos)
        return fail(Errc::invalid_argument, "{} '{}': expected NAME=VALUE", flag, shown);
    LabelText out{std::string(text.substr(0, equals)), std::string(text.substr(equals + 1))};
    if (!valid_label_key(out.key))
        return fail(Errc::invalid_argument,
                    "{} '{}': a label's name is 1 to {} of the characters A-Z a-z 0-9 _ . -", flag,
                    shown, kMaxLabelKey);
    if (out.value.empty() || out.value.size() > kMaxLabelValue)
        return fail(Errc::invalid_argument, "{} '{}': a label's value is 1 to {} bytes", flag,
                    shown, kMaxLabelValue);
    if (std::any_of(out.value.begin(), out.value.end(),
                    [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == '\x7f'; }))
        return fail(Errc::invalid_argument, "{} '{}': a label's value has no control characters",
                    flag, shown);
    return out;
}

} // namespace spyglass::model
