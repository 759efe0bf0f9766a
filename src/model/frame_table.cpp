#include "spyglass/model/frame_table.hpp"

#include <algorithm>

namespace spyglass::model {

StringId StringTable::intern(std::string_view text) {
    auto it = index_.find(text);
    if (it != index_.end()) return it->second;
    StringId id(static_cast<std::uint32_t>(strings_.size()));
    const std::string& stored = strings_.emplace_back(text);
    index_.emplace(stored, id);
    return id;
}

std::size_t FrameTable::Hash::operator()(const Frame& f) const noexcept {
    std::uint64_t h = f.function.value;
    h = h * 0x9E3779B97F4A7C15ull ^ f.file.value;
    h = h * 0x9E3779B97F4A7C15ull ^ static_cast<std::uint32_t>(f.line);
    h = h * 0x9E3779B97F4A7C15ull ^ static_cast<std::uint32_t>(f.first_line);
    h = h * 0x9E3779B97F4A7C15ull ^ static_cast<std::uint8_t>(f.kind);
    h = h * 0x9E3779B97F4A7C15ull ^ f.module.value;
    return static_cast<std::size_t>(h ^ (h >> 29));
}

FrameId FrameTable::intern(const Frame& frame) {
    auto it = index_.find(frame);
    if (it != index_.end()) return it->second;
    FrameId id(static_cast<std::uint32_t>(frames_.size()));
    frames_.push_back(frame);
    index_.emplace(frame, id);
    return id;
}

FrameId FrameTable::marker(std::string_view text) {
    return intern(Frame{strings_.intern(text), StringId{}, 0, 0, FrameKind::marker});
}

std::uint64_t StackTable::hash(std::span<const FrameId> frames) noexcept {
    std::uint64_t h = 0xcbf29ce484222325ull ^ frames.size();
    for (FrameId id : frames)
        h = (h ^ id.value) * 0x100000001b3ull;
    return h;
}

StackId StackTable::intern(std::span<const FrameId> frames) {
    std::uint64_t h = hash(frames);
    auto [begin, end] = index_.equal_range(h);
    for (auto it = begin; it != end; ++it) {
        std::span<const FrameId> existing = get(it->second);
        if (std::equal(existing.begin(), existing.end(), frames.begin(), frames.end()))
            return it->second;
    }
    StackId id(static_cast<std::uint32_t>(entries_.size()));
    entries_.push_back(
        {static_cast<std::uint32_t>(pool_.size()), static_cast<std::uint32_t>(frames.size()), h});
    pool_.insert(pool_.end(), frames.begin(), frames.end());
    index_.emplace(h, id);
    return id;
}

void StringTable::clear() {
    index_.clear();
    strings_.clear();
    intern("");
}

void FrameTable::clear() {
    index_.clear();
    frames_.clear();
    frames_.shrink_to_fit();
    waits_.clear();
    label_sets_.clear();
    build_ids_.clear();
    build_id_list_.clear();
    strings_.clear();
}

void FrameTable::set_build_id(StringId module, std::string_view hex) {
    if (module == StringId{} || hex.empty() || build_ids_.contains(module)) return;
    StringId id = strings_.intern(hex);
    build_ids_.emplace(module, id);
    build_id_list_.emplace_back(module, id);
}

std::string_view FrameTable::build_id(StringId module) const noexcept {
    auto it = build_ids_.find(module);
    return it == build_ids_.end() ? std::string_view() : strings_.view(it->second);
}

void StackTable::clear() {
    index_.clear();
    entries_.clear();
    entries_.shrink_to_fit();
    pool_.clear();
    pool_.shrink_to_fit();
    intern({});
}

} // namespace spyglass::model
