// Types and values of the target: classifying type objects, decoding numbers and strings,
// repr-like rendering, threading's thread names and the local variables of a frame.
#include "spyglass/python/objects.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include "objects_internal.hpp"
#include <fmt/format.h>

#include "spyglass/process/bytes.hpp"
#include "spyglass/process/checked.hpp"
#include "spyglass/process/remote_field.hpp"
#include "spyglass/python/strings.hpp"

namespace spyglass::python {

using namespace objects_detail;

namespace objects_detail {

std::optional<LongDigits> read_long(process::RemoteMemory& memory, const Layout& layout,
                                    Address object, std::size_t max_digits) {
    const LayoutOffsets& o = layout.off;
    if (o.long_shift != 15 && o.long_shift != 30) return std::nullopt;
    LongDigits out;
    if (o.long_tag != kAbsent) {
        // 3.12+: lv_tag = digit count << 3 | sign (0 positive, 1 zero, 2 negative).
        auto tag = process::read_field<std::uint64_t>(memory, object, o.long_tag);
        if (!tag || (*tag & 3) == 3) return std::nullopt;
        if ((*tag & 3) == 1) return out;
        out.negative = (*tag & 3) == 2;
        out.count = *tag >> 3;
    } else {
        auto size = process::read_field<std::int64_t>(memory, object, o.var_size);
        if (!size) return std::nullopt;
        out.negative = *size < 0;
        out.count = out.negative ? 0 - static_cast<std::uint64_t>(*size)
                                 : static_cast<std::uint64_t>(*size);
    }
    std::size_t width = o.long_shift == 15 ? 2 : 4;
    auto bytes = process::checked_mul(out.count, width);
    if (!bytes || *bytes > kMaxObjectBytes) return std::nullopt;
    if (out.count > max_digits) return out;
    std::vector<std::uint8_t> raw(static_cast<std::size_t>(*bytes));
    if (!raw.empty() &&
        !process::read_field_bytes(memory, object, o.long_digits, raw.data(), raw.size()))
        return std::nullopt;
    out.digits.resize(out.count);
    for (std::size_t i = 0; i < out.count; ++i)
        out.digits[i] = width == 2 ? load<std::uint16_t>(raw.data() + 2 * i)
                                   : load<std::uint32_t>(raw.data() + 4 * i);
    return out;
}

} // namespace objects_detail

ObjectReader::ObjectReader(process::RemoteMemory& memory, const TargetInfo& target)
    : memory_(memory), target_(target) {}

const ObjectReader::TypeInfo* ObjectReader::type_at(Address type) {
    if (!plausible(type)) return nullptr;
    if (auto it = types_.find(type); it != types_.end()) return it->second ? &*it->second : nullptr;
    std::optional<TypeInfo>& slot = types_[type]; // a failure is remembered too
    const LayoutOffsets& o = target_.layout.off;
    std::uint64_t end = 0;
    for (std::uint32_t offset :
         {o.type_name, o.type_flags, o.type_basicsize, o.type_itemsize, o.type_dictoffset})
        if (offset != kAbsent) end = std::max(end, std::uint64_t{offset} + 8);
    std::array<std::uint8_t, 512> header{};
    if (end > header.size() || !memory_.read(type, header.data(), end)) return nullptr;
    auto field = [&](std::uint32_t offset) {
        return process::checked_load<std::int64_t>(header, offset).value_or(0);
    };
    TypeInfo info;
    info.address = type;
    info.flags = static_cast<std::uint64_t>(field(o.type_flags));
    info.basicsize = field(o.type_basicsize);
    info.itemsize = field(o.type_itemsize);
    info.dictoffset = field(o.type_dictoffset);
    if ((info.flags & kTpflagsReady) == 0 || info.basicsize < 16 || info.basicsize > (1 << 20) ||
        info.itemsize < 0 || info.itemsize > (1 << 16) || info.dictoffset > (1 << 20) ||
        info.dictoffset < -(1 << 20))
        return nullptr;
    auto name = static_cast<Address>(field(o.type_name));
    std::array<char, kMaxTypeName> text{};
    auto got = name == 0 ? std::expected<std::size_t, ReadError>(0)
                         : memory_.read_prefix(name, text.data(), text.size());
    if (!got || *got == 0) return nullptr;
    const char* nul = static_cast<const char*>(std::memchr(text.data(), 0, *got));
    if (nul == nullptr || nul == text.data()) return nullptr;
    info.name.assign(text.data(), static_cast<std::size_t>(nul - text.data()));
    if ((info.flags & kTpflagsHeapType) != 0 && o.heaptype_cached_keys != kAbsent) {
        if (auto keys = process::read_field<std::uint64_t>(memory_, type, o.heaptype_cached_keys))
            info.cached_keys = *keys;
    }
    classify(info);
    slot = std::move(info);
    return &*slot;
}

const ObjectReader::TypeInfo* ObjectReader::type_of(Address object) {
    if (!plausible(object)) return nullptr;
    auto type = process::read_field<std::uint64_t>(memory_, object, target_.layout.off.object_type);
    if (!type) return nullptr;
    return type_at(*type);
}

void ObjectReader::classify(TypeInfo& type) const {
    const TypeAddresses& a = target_.types;
    bool py2 = target_.layout.py2_strings;
    struct Known {
        Address address;
        const char* name;
        Kind kind;
    };
    const Known known[] = {
        {a.bool_, "bool", Kind::boolean},
        {a.float_, "float", Kind::float_},
        {a.long_, py2 ? "long" : "int", Kind::long_},
        {a.int_, py2 ? "int" : nullptr, Kind::py2_int},
        {a.unicode, py2 ? "unicode" : "str", Kind::unicode},
        {a.str, py2 ? "str" : nullptr, Kind::py2_str},
        {a.bytes, py2 ? nullptr : "bytes", Kind::bytes},
        {a.tuple, "tuple", Kind::tuple},
        {a.list, "list", Kind::list},
        {a.dict, "dict", Kind::dict},
        {0, "set", Kind::set},
        {0, "frozenset", Kind::frozenset},
        {a.module, "module", Kind::module},
        {0, "function", Kind::function},
        {a.type, "type", Kind::type},
        {0, "cell", Kind::cell},
        {0, "NoneType", Kind::none},
    };
    auto set = [&](Kind kind, bool exact) {
        type.kind = kind;
        type.exact = exact;
    };
    for (const Known& k : known)
        if (k.address != 0 && k.address == type.address) return set(k.kind, true);
    // Without the symbol, a static (non-heap) type of the builtin's name is the builtin.
    if ((type.flags & kTpflagsHeapType) == 0)
        for (const Known& k : known)
            if (k.address == 0 && k.name != nullptr && type.name == k.name)
                return set(k.kind, true);
    std::uint64_t f = type.flags;
    if ((f & kTpflagsTypeSubclass) != 0) return set(Kind::type, true); // instances are classes
    if (py2 && (f & kTpflagsPy2IntSubclass) != 0) return set(Kind::py2_int, false);
    if ((f & kTpflagsLongSubclass) != 0) return set(Kind::long_, false);
    if ((f & kTpflagsListSubclass) != 0) return set(Kind::list, false);
    if ((f & kTpflagsTupleSubclass) != 0) return set(Kind::tuple, false);
    if ((f & kTpflagsBytesSubclass) != 0) return set(py2 ? Kind::py2_str : Kind::bytes, false);
    if ((f & kTpflagsUnicodeSubclass) != 0) return set(Kind::unicode, false);
    if ((f & kTpflagsDictSubclass) != 0) return set(Kind::dict, false);
    if ((f & kTpflagsBaseExcSubclass) != 0) return set(Kind::exception, true); // Name(args)
    set(Kind::other, false);
}

std::optional<std::string> ObjectReader::type_name(Address object) {
    const TypeInfo* type = type_of(object);
    if (type == nullptr) return std::nullopt;
    return type->name;
}

std::optional<std::int64_t> ObjectReader::int_value(Address object) {
    const TypeInfo* type = type_of(object);
    if (type == nullptr) return std::nullopt;
    return int_value_as(object, *type);
}

std::optional<std::int64_t> ObjectReader::int_value_as(Address object, const TypeInfo& type) {
    const Layout& layout = target_.layout;
    bool py2 = layout.py2_strings;
    if (type.kind == Kind::py2_int || (py2 && type.kind == Kind::boolean)) {
        auto value = process::read_field<std::int64_t>(memory_, object, layout.off.int_value);
        if (!value) return std::nullopt;
        return *value;
    }
    if (type.kind != Kind::long_ && type.kind != Kind::boolean) return std::nullopt;
    auto number = read_long(memory_, layout, object, 4);
    if (!number || number->digits.size() != number->count) return std::nullopt;
    unsigned shift = layout.off.long_shift;
    std::uint64_t value = 0;
    for (auto it = number->digits.rbegin(); it != number->digits.rend(); ++it) {
        if (value > (static_cast<std::uint64_t>(INT64_MAX) >> shift)) return std::nullopt;
        value = (value << shift) | (*it & ((std::uint64_t{1} << shift) - 1));
    }
    return number->negative ? -static_cast<std::int64_t>(value) : static_cast<std::int64_t>(value);
}

std::optional<std::string> ObjectReader::str_value(Address object, std::size_t max_chars) {
    const TypeInfo* type = type_of(object);
    if (type == nullptr) return std::nullopt;
    return str_value_as(object, *type, max_chars);
}

std::optional<std::string> ObjectReader::str_value_as(Address object, const TypeInfo& type,
                                                      std::size_t max_chars) {
    const Layout& layout = target_.layout;
    const LayoutOffsets& o = layout.off;
    std::string out;
    if (layout.py2_strings && type.kind == Kind::unicode) {
        // 2.7 unicode: a length and a pointer to Py_UNICODE units (UCS-2 or UCS-4).
        auto length = process::read_field<std::int64_t>(memory_, object, o.py2_unicode_length);
        auto buffer = process::read_field<std::uint64_t>(memory_, object, o.py2_unicode_str);
        unsigned unit = o.py2_unicode_size;
        if (!length || !buffer || *length < 0 || (unit != 2 && unit != 4)) return std::nullopt;
        std::size_t take = std::min(static_cast<std::size_t>(*length), max_chars);
        auto bytes = process::checked_mul(take, unit);
        if (!bytes || *bytes > kMaxStrBytes) return std::nullopt;
        std::vector<std::uint8_t> data(static_cast<std::size_t>(*bytes));
        if (!data.empty() && !memory_.read(*buffer, data.data(), data.size())) return std::nullopt;
        append_unicode_kind(out, static_cast<int>(unit), data);
        if (take < static_cast<std::size_t>(*length)) out += "...";
        return out;
    }
    if (type.kind != Kind::unicode && type.kind != Kind::py2_str) return std::nullopt;
    if (!read_str(memory_, layout, object, out, 0, max_chars, Overlong::truncate))
        return std::nullopt;
    return out;
}

std::vector<std::string> ObjectReader::tuple_strings(Address tuple, std::size_t max_items) {
    std::vector<std::string> names;
    const LayoutOffsets& o = target_.layout.off;
    const TypeInfo* type = type_of(tuple);
    if (type == nullptr || type->kind != Kind::tuple) return names;
    auto size = process::read_field<std::int64_t>(memory_, tuple, o.var_size);
    if (!size || *size < 0) return names;
    std::vector<Address> items(std::min(static_cast<std::size_t>(*size), max_items));
    if (!items.empty() && !process::read_field_bytes(memory_, tuple, o.tuple_items, items.data(),
                                                     items.size() * sizeof(Address)))
        return names;
    for (Address item : items)
        names.push_back(str_value(item, kMaxNameChars).value_or("?"));
    return names;
}

std::optional<Address> ObjectReader::module(Address interp, std::string_view name) {
    const LayoutOffsets& o = target_.layout.off;
    if (!plausible(interp) || o.interp_modules == kAbsent) return std::nullopt;
    auto modules = process::read_field<std::uint64_t>(memory_, interp, o.interp_modules);
    if (!modules) return std::nullopt;
    auto found = dict_get(*modules, name);
    if (!found) return std::nullopt;
    const TypeInfo* type = type_of(*found);
    if (type == nullptr || type->kind != Kind::module) return std::nullopt;
    return found;
}

std::unordered_map<std::uint64_t, std::string> ObjectReader::thread_names(Address interp) {
    std::unordered_map<std::uint64_t, std::string> names;
    const LayoutOffsets& o = target_.layout.off;
    auto threading = module(interp, "threading");
    if (!threading || o.module_dict == kAbsent) return names;
    auto globals = process::read_field<std::uint64_t>(memory_, *threading, o.module_dict);
    if (!globals) return names;
    // threading._active maps get_ident() to the Thread; 2.7 mangles Thread.__name.
    auto active = dict_get(*globals, "_active");
    if (!active) return names;
    std::string_view attribute_name = target_.layout.py2_strings ? "_Thread__name" : "_name";
    dict_items(
        *active,
        [&](Address key, Address thread) {
            auto ident = int_value(key);
            if (!ident) return true;
            auto name = attribute(thread, attribute_name);
            if (!name) return true;
            auto text = str_value(*name, 256);
            names[static_cast<std::uint64_t>(*ident)] = text ? *text : repr(*name, 64);
            return true;
        },
        kMaxThreadNames);
    return names;
}

std::vector<LocalVariable> ObjectReader::locals(const RawFrame& frame, const CodeInfo& code,
                                                std::size_t max_value_chars) {
    std::vector<LocalVariable> result;
    const Layout& layout = target_.layout;
    const LayoutOffsets& o = layout.off;
    if (!plausible(frame.frame) || code.nlocals <= 0 ||
        static_cast<std::size_t>(code.nlocals) > kMaxLocals)
        return result;
    auto count = static_cast<std::size_t>(code.nlocals);

    // Arguments come first: positional ones, keyword-only ones, then *args and **kwargs.
    std::size_t arguments = code.argcount > 0 ? static_cast<std::size_t>(code.argcount) : 0;
    if (o.code_flags != kAbsent)
        if (auto flags = process::read_field<std::int32_t>(memory_, frame.code, o.code_flags))
            arguments += ((*flags & kCoVarargs) != 0) + ((*flags & kCoVarkeywords) != 0);
    if (o.code_kwonlyargcount != kAbsent)
        if (auto kwonly =
                process::read_field<std::int32_t>(memory_, frame.code, o.code_kwonlyargcount);
            kwonly && *kwonly > 0)
            arguments += static_cast<std::size_t>(*kwonly);

    struct Slot {
        std::string name;
        Address value;
        bool cell;
        bool argument;
    };
    std::vector<Slot> slots;
    std::vector<std::string> names = tuple_strings(code.local_names, count);
    names.resize(count, "?");
    std::vector<Address> values;
    if (layout.frame_model == FrameModel::interpreter_frames) {
        std::vector<std::uint8_t> kinds;
        if (!read_bytes(memory_, layout, code.local_kinds, kinds, count,
                        target_.types.bytes_type(layout)))
            kinds.clear();
        kinds.resize(count, 0);
        values.resize(count);
        if (!process::read_field_bytes(memory_, frame.frame, o.iframe_localsplus, values.data(),
                                       values.size() * sizeof(Address)))
            return result;
        for (std::size_t i = 0; i < count; ++i)
            slots.push_back({names[i], values[i] & ~layout.code_tag_mask,
                             (kinds[i] & (kCoFastCell | kCoFastFree)) != 0, i < arguments});
    } else {
        // f_localsplus holds the co_nlocals locals, then the cells, then the free variables.
        auto tuple_at = [&](std::uint32_t offset) {
            if (offset == kAbsent) return std::vector<std::string>{};
            auto tuple = process::read_field<std::uint64_t>(memory_, frame.code, offset);
            return tuple ? tuple_strings(*tuple, kMaxLocals) : std::vector<std::string>{};
        };
        std::vector<std::string> cells = tuple_at(o.code_cellvars);
        std::vector<std::string> frees = tuple_at(o.code_freevars);
        if (count + cells.size() + frees.size() > kMaxLocals) return result;
        values.resize(count + cells.size() + frees.size());
        if (!process::read_field_bytes(memory_, frame.frame, o.frame_localsplus, values.data(),
                                       values.size() * sizeof(Address)))
            return result;
        for (std::size_t i = 0; i < count; ++i)
            slots.push_back({names[i], values[i], false, i < arguments});
        for (std::size_t j = 0; j < cells.size(); ++j) {
            // An argument that a closure captures lives in a cell of the same name.
            std::size_t limit = std::min(arguments, count);
            bool argument =
                std::find(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(limit),
                          cells[j]) != names.begin() + static_cast<std::ptrdiff_t>(limit);
            slots.push_back({cells[j], values[count + j], true, argument});
        }
        for (std::size_t j = 0; j < frees.size(); ++j)
            slots.push_back({frees[j], values[count + cells.size() + j], true, false});
    }

    std::unordered_map<std::string, std::size_t> index_of;
    for (Slot& slot : slots) {
        Address value = slot.value;
        if (value == 0) continue;
        if (slot.cell) {
            // A cell slot holds the cell once MAKE_CELL / COPY_FREE_VARS ran (3.11+: before
            // that, the plain value).
            const TypeInfo* type = type_of(value);
            if (type != nullptr && type->kind == Kind::cell) {
                auto ref = process::read_field<std::uint64_t>(memory_, value, o.cell_ref);
                if (!ref || *ref == 0) continue;
                value = *ref;
            }
        }
        std::string text = repr(value, max_value_chars);
        // 2.7 keeps a captured argument both in its slot and in its cell: the cell is current.
        if (auto it = index_of.find(slot.name); it != index_of.end()) {
            result[it->second].value = std::move(text);
            continue;
        }
        index_of.emplace(slot.name, result.size());
        result.push_back({slot.name, std::move(text), slot.argument});
    }
    return result;
}

} // namespace spyglass::python
