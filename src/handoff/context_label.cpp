// record --context NAME: the value of the contextvars.ContextVar called NAME in the thread's
// current context. Offsets and the walk: asyncio-and-contextvars-internals.md section 4 (verified
// on 3.8 - 3.15, GIL builds).
//
// Read whole on the sampling thread: the thread state's `context`, its `ctx_vars` (a HAMT), the
// HAMT's nodes, the value. A web framework sets a request's variable and resets it when the
// request ends, which frees the HAMT (and often the value) the sample saw: read later, on the
// resolver's thread, that memory would already belong to the next request. Every object on the
// way is checked by its type's name (learned once per type); a ContextVar is recognised by its
// name once per address (one lives as long as the module that made it).
#include <algorithm>
#include <array>
#include <cstring>
#include <unordered_map>

#include <fmt/ranges.h>

#include "spyglass/handoff/label_source.hpp"
#include "spyglass/model/labels.hpp"
#include "spyglass/python/objects.hpp"

namespace spyglass::sampling {
namespace {

using process::Address;

// PyThreadState.context, by minor version (3.x).
std::optional<std::uint64_t> thread_context_offset(const python::PythonVersion& version) {
    if (version.major != 3) return std::nullopt;
    switch (version.minor) {
    case 8:
    case 9:
    case 10:
        return 240;
    case 11:
        return 224;
    case 12:
    case 13:
    case 14:
        return 208;
    case 15:
        return 232;
    default:
        return std::nullopt;
    }
}

constexpr std::uint64_t kObType = 8;       // PyObject.ob_type
constexpr std::uint64_t kObSize = 16;      // PyVarObject.ob_size
constexpr std::uint64_t kContextVars = 24; // PyContext.ctx_vars
constexpr std::uint64_t kHamtRoot = 16;    // PyHamtObject.h_root
constexpr std::uint64_t kHamtCount = 32;   // PyHamtObject.h_count
constexpr std::uint64_t kVarName = 16;     // PyContextVar.var_name
constexpr std::uint64_t kPairs = 32;       // hamt_bitmap_node.b_array, hamt_collision_node.c_array
constexpr std::uint64_t kChildren = 16;    // hamt_array_node.a_array[32]
constexpr std::size_t kMaxSlots = 64;      // a bitmap node's; a collision node's, bounded here
constexpr int kMaxDepth = 8;               // _Py_HAMT_MAX_TREE_DEPTH
constexpr std::size_t kMaxNodes = 64;      // one sample's walk
constexpr std::size_t kMaxVars = 4096;     // ContextVar addresses remembered

enum class Kind : std::uint8_t { other, context, hamt, bitmap, array, collision, var, none, str };

Kind kind_of_type_name(std::string_view name) {
    // "_contextvars.Context" from 3.12 on, "Context" before.
    if (name == "_contextvars.Context" || name == "Context") return Kind::context;
    if (name == "hamt") return Kind::hamt;
    if (name == "hamt_bitmap_node") return Kind::bitmap;
    if (name == "hamt_array_node") return Kind::array;
    if (name == "hamt_collision_node") return Kind::collision;
    if (name == "_contextvars.ContextVar" || name == "ContextVar") return Kind::var;
    if (name == "NoneType") return Kind::none;
    if (name == "str") return Kind::str;
    return Kind::other;
}

template <class T>
T word_at(const unsigned char* bytes, std::size_t offset) {
    T value;
    std::memcpy(&value, bytes + offset, sizeof value);
    return value;
}

class ContextCapture final : public LabelCapture {
  public:
    ContextCapture(process::RemoteMemory& memory, const python::TargetInfo& target,
                   std::uint64_t context_offset, std::vector<std::string> names)
        : memory_(memory), objects_(memory, target), context_offset_(context_offset),
          names_(std::move(names)), found_(names_.size()) {}

    void capture(const python::ThreadRecord& thread, LabelValues& values,
                 std::span<std::uint64_t> words) override {
        std::fill(words.begin(), words.end(), 0);
        std::fill(found_.begin(), found_.end(), 0);
        if (!find(thread)) {
            ++unreadable_;
            return;
        }
        for (std::size_t k = 0; k < names_.size() && k < words.size(); ++k)
            if (found_[k] != 0) words[k] = value(found_[k], values);
    }

  private:
    // The values of the names in the thread's context (found_; 0: not set). False: what was
    // read is not a context's variables.
    bool find(const python::ThreadRecord& thread) {
        auto context = memory_.read_value<Address>(thread.tstate + context_offset_);
        if (!context) return false;
        if (*context == 0) return true; // no context yet: nothing set
        std::array<unsigned char, 40> head{};
        if (!memory_.read(*context, head.data(), 32) ||
            kind(word_at<Address>(head.data(), kObType), *context) != Kind::context)
            return false;
        const Address hamt = word_at<Address>(head.data(), kContextVars);
        if (!memory_.read(hamt, head.data(), 40) ||
            kind(word_at<Address>(head.data(), kObType), hamt) != Kind::hamt)
            return false;
        if (word_at<std::int64_t>(head.data(), kHamtCount) <= 0) return true;
        missing_ = names_.size();
        nodes_ = 0;
        broken_ = false;
        walk(word_at<Address>(head.data(), kHamtRoot), 0);
        return !broken_;
    }

    // The kind of the object at `object` whose ob_type is `type` (its name read once).
    Kind kind(Address type, Address object) {
        if (auto it = types_.find(type); it != types_.end()) return it->second;
        auto name = objects_.type_name(object);
        if (!name) return Kind::other; // not remembered: it may be readable next time
        const Kind found = kind_of_type_name(*name);
        if (types_.size() < kMaxVars) types_.emplace(type, found);
        return found;
    }

    // Depth first, until every name is found or a node is not what it should be.
    void walk(Address node, int depth) {
        if (missing_ == 0 || broken_) return;
        if (depth > kMaxDepth || ++nodes_ > kMaxNodes) {
            broken_ = true;
            return;
        }
        std::array<unsigned char, kPairs + kMaxSlots * sizeof(Address)> bytes{};
        auto got = memory_.read_prefix(node, bytes.data(), kPairs + 32 * sizeof(Address));
        if (!got || *got < kPairs) {
            broken_ = true;
            return;
        }
        const Kind node_kind = kind(word_at<Address>(bytes.data(), kObType), node);
        if (node_kind == Kind::array) {
            if (*got < kChildren + 32 * sizeof(Address)) {
                broken_ = true;
                return;
            }
            for (std::size_t i = 0; i < 32 && missing_ != 0 && !broken_; ++i)
                if (Address child = word_at<Address>(bytes.data(), kChildren + i * 8); child != 0)
                    walk(child, depth + 1);
            return;
        }
        if (node_kind != Kind::bitmap && node_kind != Kind::collision) {
            broken_ = true;
            return;
        }
        const auto slots = word_at<std::int64_t>(bytes.data(), kObSize);
        if (slots < 0 || static_cast<std::size_t>(slots) > kMaxSlots || slots % 2 != 0) {
            broken_ = true;
            return;
        }
        const std::size_t need = kPairs + static_cast<std::size_t>(slots) * sizeof(Address);
        if (need > *got && !memory_.read(node + *got, bytes.data() + *got, need - *got)) {
            broken_ = true;
            return;
        }
        for (std::int64_t i = 0; i + 1 < slots && missing_ != 0 && !broken_; i += 2) {
            const auto key =
                word_at<Address>(bytes.data(), kPairs + static_cast<std::size_t>(i) * 8);
            const auto item =
                word_at<Address>(bytes.data(), kPairs + static_cast<std::size_t>(i + 1) * 8);
            if (key == 0) {
                if (node_kind == Kind::bitmap)
                    walk(item, depth + 1);
                else
                    broken_ = true;
            } else if (const int k = wanted_var(key);
                       k >= 0 && found_[static_cast<std::size_t>(k)] == 0) {
                found_[static_cast<std::size_t>(k)] = item;
                --missing_;
            }
        }
    }

    // Which name the key is a ContextVar of (-1: none of them, or not a ContextVar).
    int wanted_var(Address key) {
        if (auto it = vars_.find(key); it != vars_.end()) return it->second;
        std::array<unsigned char, 24> head{};
        if (!memory_.read(key, head.data(), head.size())) {
            broken_ = true;
            return -1;
        }
        int wanted = -1;
        if (kind(word_at<Address>(head.data(), kObType), key) == Kind::var) {
            auto text = objects_.str_value(word_at<Address>(head.data(), kVarName),
                                           model::kMaxLabelKey + 1);
            if (!text) {
                broken_ = true;
                return -1;
            }
            for (std::size_t k = 0; k < names_.size(); ++k)
                if (*text == names_[k]) wanted = static_cast<int>(k);
        }
        if (vars_.size() < kMaxVars) vars_.emplace(key, wanted);
        return wanted;
    }

    // str: its text; None: no label; an int, or anything else: its bounded repr.
    std::uint64_t value(Address object, LabelValues& values) {
        auto type = memory_.read_value<Address>(object + kObType);
        if (!type) {
            ++unreadable_;
            return 0;
        }
        const Kind value_kind = kind(*type, object);
        if (value_kind == Kind::none) return 0;
        if (value_kind == Kind::str) {
            auto text = objects_.str_value(object, model::kMaxLabelValue);
            if (!text) {
                ++unreadable_;
                return 0;
            }
            text_ = std::move(*text);
        } else {
            text_ = objects_.repr(object, model::kMaxLabelValue);
        }
        // A label's value has no control characters (model::parse_label's rule).
        for (char& c : text_)
            if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
        if (text_.size() > model::kMaxLabelValue) text_.resize(model::kMaxLabelValue);
        if (text_.empty()) return 0;
        return values.intern(text_);
    }

    process::RemoteMemory& memory_;
    python::ObjectReader objects_;
    std::uint64_t context_offset_;
    std::vector<std::string> names_;
    std::vector<Address> found_; // per name: its value in the context being read
    std::unordered_map<Address, Kind> types_;
    std::unordered_map<Address, int> vars_; // key -> the name it is a ContextVar of, or -1
    std::string text_;
    std::size_t missing_ = 0;
    std::size_t nodes_ = 0;
    bool broken_ = false;
};

} // namespace

std::unique_ptr<LabelCapture> make_context_capture(const std::vector<std::string>& keys,
                                                   const python::TargetInfo& target,
                                                   process::RemoteMemory& memory,
                                                   std::string& note) {
    auto offset = thread_context_offset(target.version);
    if (!offset) {
        note = fmt::format("--context {}: contextvars are read on Python 3.8 to 3.15, not {}",
                           fmt::join(keys, ", "), target.version.to_string());
        return nullptr;
    }
    return std::make_unique<ContextCapture>(memory, target, *offset, keys);
}

} // namespace spyglass::sampling
