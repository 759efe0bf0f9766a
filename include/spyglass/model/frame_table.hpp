// Interned strings, frames, stacks and label sets: a sample refers to its stack by a small
// integer, and each distinct function/file/line exists once however many samples contain it.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "spyglass/model/ids.hpp"
#include "spyglass/model/wait.hpp"

namespace spyglass::model {

class StringTable {
  public:
    StringTable() { intern(""); } // id 0 is the empty string
    StringId intern(std::string_view text);
    void clear(); // back to the empty string alone
    [[nodiscard]] std::string_view view(StringId id) const noexcept { return strings_[id.value]; }
    [[nodiscard]] std::size_t size() const noexcept { return strings_.size(); }

  private:
    std::deque<std::string> strings_; // stable addresses for the views in index_
    std::unordered_map<std::string_view, StringId> index_;
};

// One (key, value) pair a sample is labelled with (env=prod, a trace id...), both strings of the
// frame table.
struct Label {
    StringId key{};
    StringId value{};
    friend bool operator==(const Label&, const Label&) = default;
};

// Sets of labels, interned: a sample refers to its set by a small integer. A set holds one value
// per key, its pairs sorted by the keys' text; id 0 is the empty set (no labels).
class LabelSetTable {
  public:
    LabelSetTable() { entries_.push_back({0, 0}); }
    // `labels` in any order; of a key given more than once, the last value counts.
    LabelSetId intern(std::span<const Label> labels, const StringTable& strings);
    void clear(); // back to the empty set alone
    [[nodiscard]] std::span<const Label> get(LabelSetId id) const noexcept {
        const Entry& e = entries_[id.value];
        return {pool_.data() + e.offset, e.length};
    }
    [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }

  private:
    struct Entry {
        std::uint32_t offset;
        std::uint32_t length;
    };
    static std::uint64_t hash(std::span<const Label> labels) noexcept;
    std::vector<Label> pool_;
    std::vector<Entry> entries_;
    std::unordered_multimap<std::uint64_t, LabelSetId> index_;
    std::vector<Label> scratch_;
};

enum class FrameKind : std::uint8_t {
    python,
    native,
    marker, // a pseudo-frame: <truncated>, <torn>, a thread root with --threads
};

struct Frame {
    StringId function{};   // qualified name on 3.11+
    StringId file{};       // native: the source file where DWARF has it, else the module's name
    std::int32_t line = 0; // 0 = not shown (--nolineno), or none known (native)
    std::int32_t first_line = 0; // the function's first line
    FrameKind kind = FrameKind::python;
    StringId module{}; // native: the module's path as the target maps it
    // native: an instruction of it, as an address of its module's own ELF address space (the
    // pc less the module's load bias: what objdump and addr2line show), the first one interned;
    // 0 when not known. Not part of the frame's identity: a frame is a function and a line,
    // not an instruction (pprof's Location.address; the raw format does not keep it).
    std::uint64_t address = 0;
    friend bool operator==(const Frame& a, const Frame& b) noexcept {
        return a.function == b.function && a.file == b.file && a.line == b.line &&
               a.first_line == b.first_line && a.kind == b.kind && a.module == b.module;
    }
};

class FrameTable {
  public:
    FrameId intern(const Frame& frame);
    [[nodiscard]] const Frame& get(FrameId id) const noexcept { return frames_[id.value]; }
    [[nodiscard]] std::size_t size() const noexcept { return frames_.size(); }
    [[nodiscard]] std::span<const Frame> frames() const noexcept { return frames_; }
    StringTable& strings() noexcept { return strings_; }
    [[nodiscard]] const StringTable& strings() const noexcept { return strings_; }

    // A marker frame with the given text as its function name.
    FrameId marker(std::string_view text);
    // Empties the frames, their strings, the waits and the label sets (ids start again from the
    // first).
    void clear();
    // The waits samples refer to (their names and targets are strings of this table).
    WaitTable& waits() noexcept { return waits_; }
    [[nodiscard]] const WaitTable& waits() const noexcept { return waits_; }
    // The label sets samples refer to (their keys and values are strings of this table).
    LabelSetTable& label_sets() noexcept { return label_sets_; }
    [[nodiscard]] const LabelSetTable& label_sets() const noexcept { return label_sets_; }
    LabelSetId intern_labels(std::span<const Label> labels) {
        return label_sets_.intern(labels, strings_);
    }
    // The build-id (hex) of a native module, by its path's string id; "" when not known.
    void set_build_id(StringId module, std::string_view hex);
    [[nodiscard]] std::string_view build_id(StringId module) const noexcept;
    // (module, build-id) string ids in the order they were set.
    [[nodiscard]] std::span<const std::pair<StringId, StringId>> build_ids() const noexcept {
        return build_id_list_;
    }

  private:
    struct Hash {
        std::size_t operator()(const Frame& f) const noexcept;
    };
    StringTable strings_;
    WaitTable waits_;
    LabelSetTable label_sets_;
    std::unordered_map<StringId, StringId> build_ids_; // module path -> build-id
    std::vector<std::pair<StringId, StringId>> build_id_list_;
    std::vector<Frame> frames_;
    std::unordered_map<Frame, FrameId, Hash> index_;
};

// Stacks as sequences of frame ids, innermost first, stored back to back.
class StackTable {
  public:
    StackTable() { intern({}); } // id 0 is the empty stack
    StackId intern(std::span<const FrameId> frames);
    void clear(); // back to the empty stack alone
    [[nodiscard]] std::span<const FrameId> get(StackId id) const noexcept {
        const Entry& e = entries_[id.value];
        return {pool_.data() + e.offset, e.length};
    }
    [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }
    [[nodiscard]] std::size_t frame_count() const noexcept { return pool_.size(); }

  private:
    struct Entry {
        std::uint32_t offset;
        std::uint32_t length;
        std::uint64_t hash;
    };
    static std::uint64_t hash(std::span<const FrameId> frames) noexcept;
    std::vector<FrameId> pool_;
    std::vector<Entry> entries_;
    std::unordered_multimap<std::uint64_t, StackId> index_;
};

} // namespace spyglass::model
