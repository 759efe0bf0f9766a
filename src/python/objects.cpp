// Types and values of the target: classifying type objects, decoding numbers and strings,
// repr-like rendering, threading's thread names and the local variables of a frame.
#include "spyglass/python/objects.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <unordered_map>

#include <fmt/format.h>

#include "spyglass/process/bytes.hpp"
#include "spyglass/python/strings.hpp"

namespace spyglass::python {

namespace {

constexpr std::uint64_t kTpflagsHeapType = 1u << 9;
constexpr std::uint64_t kTpflagsReady = 1u << 12;
constexpr std::uint64_t kTpflagsPy2IntSubclass = 1u << 23; // 2.7 only: 3.12 reuses the bit
constexpr std::uint64_t kTpflagsLongSubclass = 1u << 24;
constexpr std::uint64_t kTpflagsListSubclass = 1u << 25;
constexpr std::uint64_t kTpflagsTupleSubclass = 1u << 26;
constexpr std::uint64_t kTpflagsBytesSubclass = 1u << 27;
constexpr std::uint64_t kTpflagsUnicodeSubclass = 1u << 28;
constexpr std::uint64_t kTpflagsDictSubclass = 1u << 29;
constexpr std::uint64_t kTpflagsBaseExcSubclass = 1u << 30;
constexpr std::uint64_t kTpflagsTypeSubclass = 1ull << 31;

constexpr std::int32_t kCoVarargs = 0x4;
constexpr std::int32_t kCoVarkeywords = 0x8;
constexpr std::uint8_t kCoFastCell = 0x40;
constexpr std::uint8_t kCoFastFree = 0x80;

constexpr int kMaxDepth = 3;
constexpr std::size_t kPreviewItems = 32;
constexpr std::size_t kMaxLongDigits = 2048;
constexpr std::size_t kMaxTypeName = 128;
constexpr std::uint32_t kDecimalBase = 1000000000;

using process::load;

bool plausible(Address address) {
    return address != 0 && (address & 7) == 0;
}

struct LongDigits {
    bool negative = false;
    std::uint64_t count = 0;
    std::vector<std::uint32_t> digits; // least significant first; empty when count > max
};

std::optional<LongDigits> read_long(process::RemoteMemory& memory, const Layout& layout,
                                    Address object, std::size_t max_digits) {
    const LayoutOffsets& o = layout.off;
    LongDigits out;
    if (o.long_tag != kAbsent) {
        // 3.12+: lv_tag = digit count << 3 | sign (0 positive, 1 zero, 2 negative).
        auto tag = memory.read_value<std::uint64_t>(object + o.long_tag);
        if (!tag || (*tag & 3) == 3) return std::nullopt;
        if ((*tag & 3) == 1) return out;
        out.negative = (*tag & 3) == 2;
        out.count = *tag >> 3;
    } else {
        auto size = memory.read_value<std::int64_t>(object + o.var_size);
        if (!size) return std::nullopt;
        out.negative = *size < 0;
        out.count = out.negative ? 0 - static_cast<std::uint64_t>(*size)
                                 : static_cast<std::uint64_t>(*size);
    }
    if (out.count > max_digits) return out;
    std::size_t width = o.long_shift == 15 ? 2 : 4;
    std::vector<std::uint8_t> raw(out.count * width);
    if (!raw.empty() && !memory.read(object + o.long_digits, raw.data(), raw.size()))
        return std::nullopt;
    out.digits.resize(out.count);
    for (std::size_t i = 0; i < out.count; ++i)
        out.digits[i] = width == 2 ? load<std::uint16_t>(raw.data() + 2 * i)
                                   : load<std::uint32_t>(raw.data() + 4 * i);
    return out;
}

std::string decimal(const std::vector<std::uint32_t>& digits, unsigned shift) {
    std::vector<std::uint32_t> parts; // base 10^9, least significant first
    for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
        std::uint64_t carry = *it & ((std::uint64_t{1} << shift) - 1);
        for (std::uint32_t& part : parts) {
            std::uint64_t z = (std::uint64_t{part} << shift) + carry;
            part = static_cast<std::uint32_t>(z % kDecimalBase);
            carry = z / kDecimalBase;
        }
        while (carry != 0) {
            parts.push_back(static_cast<std::uint32_t>(carry % kDecimalBase));
            carry /= kDecimalBase;
        }
    }
    if (parts.empty()) return "0";
    std::string text = std::to_string(parts.back());
    for (auto it = parts.rbegin() + 1; it != parts.rend(); ++it)
        text += fmt::format("{:09}", *it);
    return text;
}

// Python's repr(float): the shortest digits that round-trip, in fixed notation when the decimal
// point falls within 16 digits of them, else in exponent notation.
std::string float_repr(double value) {
    if (std::isnan(value)) return "nan";
    if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
    std::array<char, 64> buffer{};
    auto [end, ec] = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value,
                                   std::chars_format::scientific);
    if (ec != std::errc{}) return "?";
    std::string_view text(buffer.data(), static_cast<std::size_t>(end - buffer.data()));
    std::string out;
    if (text.front() == '-') {
        out += '-';
        text.remove_prefix(1);
    }
    std::size_t e = text.find('e');
    std::string digits;
    for (char c : text.substr(0, e))
        if (c != '.') digits += c;
    int exponent = 0;
    std::string_view exp_text = text.substr(e + 1);
    if (!exp_text.empty() && exp_text.front() == '+') exp_text.remove_prefix(1);
    std::from_chars(exp_text.data(), exp_text.data() + exp_text.size(), exponent);
    int point = exponent + 1; // digits are 0.d1d2... * 10^point
    auto count = static_cast<int>(digits.size());
    if (point > -4 && point <= 16) {
        if (point <= 0)
            out += "0." + std::string(static_cast<std::size_t>(-point), '0') + digits;
        else if (point >= count)
            out += digits + std::string(static_cast<std::size_t>(point - count), '0') + ".0";
        else
            out += digits.substr(0, static_cast<std::size_t>(point)) + "." +
                   digits.substr(static_cast<std::size_t>(point));
        return out;
    }
    out += digits.substr(0, 1);
    if (count > 1) out += "." + digits.substr(1);
    out += fmt::format("e{}{:02}", exponent < 0 ? '-' : '+', std::abs(exponent));
    return out;
}

// Appends `text` as a Python string literal. Returns false when it stopped early at `limit`.
bool append_quoted(std::string& out, std::string_view text, bool escape_high, std::size_t limit) {
    bool single = text.find('\'') != std::string_view::npos;
    bool dbl = text.find('"') != std::string_view::npos;
    char quote = single && !dbl ? '"' : '\'';
    out += quote;
    bool complete = true;
    for (std::size_t i = 0; i < text.size(); ++i) {
        auto c = static_cast<unsigned char>(text[i]);
        if (out.size() + 2 >= limit && (c & 0xC0) != 0x80) {
            complete = false;
            break;
        }
        if (c == '\\' || c == static_cast<unsigned char>(quote)) {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c == '\n') {
            out += "\\n";
        } else if (c == '\r') {
            out += "\\r";
        } else if (c == '\t') {
            out += "\\t";
        } else if (c < 0x20 || c == 0x7f || (escape_high && c >= 0x80)) {
            out += fmt::format("\\x{:02x}", c);
        } else {
            out += static_cast<char>(c);
        }
    }
    out += quote;
    return complete;
}

} // namespace

ObjectReader::ObjectReader(process::RemoteMemory& memory, const TargetInfo& target)
    : memory_(memory), target_(target) {}

const ObjectReader::TypeInfo* ObjectReader::type_at(Address type) {
    if (!plausible(type)) return nullptr;
    if (auto it = types_.find(type); it != types_.end()) return it->second ? &*it->second : nullptr;
    std::optional<TypeInfo>& slot = types_[type]; // a failure is remembered too
    const LayoutOffsets& o = target_.layout.off;
    std::uint32_t end = 0;
    for (std::uint32_t offset :
         {o.type_name, o.type_flags, o.type_basicsize, o.type_itemsize, o.type_dictoffset})
        if (offset != kAbsent) end = std::max(end, offset + 8);
    std::array<std::uint8_t, 512> header{};
    if (end > header.size() || !memory_.read(type, header.data(), end)) return nullptr;
    auto field = [&](std::uint32_t offset) {
        return offset == kAbsent ? 0 : load<std::int64_t>(header.data() + offset);
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
        if (auto keys = memory_.read_value<std::uint64_t>(type + o.heaptype_cached_keys))
            info.cached_keys = *keys;
    }
    classify(info);
    slot = std::move(info);
    return &*slot;
}

const ObjectReader::TypeInfo* ObjectReader::type_of(Address object) {
    if (!plausible(object)) return nullptr;
    auto type = memory_.read_value<std::uint64_t>(object + target_.layout.off.object_type);
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
    const Layout& layout = target_.layout;
    bool py2 = layout.py2_strings;
    if (type->kind == Kind::py2_int || (py2 && type->kind == Kind::boolean)) {
        auto value = memory_.read_value<std::int64_t>(object + layout.off.int_value);
        if (!value) return std::nullopt;
        return *value;
    }
    if (type->kind != Kind::long_ && type->kind != Kind::boolean) return std::nullopt;
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
    const Layout& layout = target_.layout;
    const LayoutOffsets& o = layout.off;
    std::string out;
    if (layout.py2_strings && type->kind == Kind::unicode) {
        // 2.7 unicode: a length and a pointer to Py_UNICODE units (UCS-2 or UCS-4).
        auto length = memory_.read_value<std::int64_t>(object + o.py2_unicode_length);
        auto buffer = memory_.read_value<std::uint64_t>(object + o.py2_unicode_str);
        unsigned unit = o.py2_unicode_size;
        if (!length || !buffer || *length < 0 || (unit != 2 && unit != 4)) return std::nullopt;
        std::size_t take = std::min(static_cast<std::size_t>(*length), max_chars);
        std::vector<std::uint8_t> data(take * unit);
        if (!data.empty() && !memory_.read(*buffer, data.data(), data.size())) return std::nullopt;
        append_unicode_kind(out, static_cast<int>(unit), data);
        if (take < static_cast<std::size_t>(*length)) out += "...";
        return out;
    }
    if (type->kind != Kind::unicode && type->kind != Kind::py2_str) return std::nullopt;
    if (!read_str(memory_, layout, object, out, 0, max_chars, Overlong::truncate))
        return std::nullopt;
    return out;
}

std::vector<std::string> ObjectReader::tuple_strings(Address tuple, std::size_t max_items) {
    std::vector<std::string> names;
    const LayoutOffsets& o = target_.layout.off;
    const TypeInfo* type = type_of(tuple);
    if (type == nullptr || type->kind != Kind::tuple) return names;
    auto size = memory_.read_value<std::int64_t>(tuple + o.var_size);
    if (!size || *size < 0) return names;
    std::vector<Address> items(std::min(static_cast<std::size_t>(*size), max_items));
    if (!items.empty() &&
        !memory_.read(tuple + o.tuple_items, items.data(), items.size() * sizeof(Address)))
        return names;
    for (Address item : items)
        names.push_back(str_value(item, kMaxNameChars).value_or("?"));
    return names;
}

void ObjectReader::render(Address object, std::string& out, std::size_t limit, int depth) {
    const TypeAddresses& a = target_.types;
    if (object == 0) {
        out += "NULL";
        return;
    }
    if (a.none != 0 && object == a.none) {
        out += "None";
        return;
    }
    if (a.true_ != 0 && object == a.true_) {
        out += "True";
        return;
    }
    if (a.false_ != 0 && object == a.false_) {
        out += "False";
        return;
    }
    const TypeInfo* type = type_of(object);
    if (type == nullptr) {
        out += fmt::format("<unreadable object at 0x{:x}>", object);
        return;
    }
    std::size_t mark = out.size();
    // An instance of a subclass of a builtin shows as Subclass(builtin value).
    bool wrapped = !type->exact && type->kind != Kind::other;
    if (wrapped) out += type->name + "(";
    if (render_value(object, *type, out, limit > 1 ? limit - 1 : 0, depth)) {
        if (wrapped) out += ')';
        return;
    }
    out.resize(mark);
    out += fmt::format("<{} object at 0x{:x}>", type->name, object);
}

bool ObjectReader::render_value(Address object, const TypeInfo& type, std::string& out,
                                std::size_t limit, int depth) {
    const Layout& layout = target_.layout;
    const LayoutOffsets& o = layout.off;
    std::size_t room = limit > out.size() ? limit - out.size() : 1;
    switch (type.kind) {
    case Kind::none:
        out += "None";
        return true;
    case Kind::boolean:
    case Kind::py2_int: {
        auto value = int_value(object);
        if (!value) return false;
        if (type.kind == Kind::boolean)
            out += *value != 0 ? "True" : "False";
        else
            out += std::to_string(*value);
        return true;
    }
    case Kind::long_: {
        auto number = read_long(memory_, layout, object, kMaxLongDigits);
        if (!number) return false;
        if (number->digits.size() != number->count) {
            out += fmt::format("<int of ~{} bits>", number->count * o.long_shift);
            return true;
        }
        std::string text = decimal(number->digits, o.long_shift);
        std::size_t digits = text.size();
        if (number->negative) text.insert(0, "-");
        if (layout.py2_strings) text += 'L';
        if (text.size() > room && room > 24)
            text = text.substr(0, room - 20) + fmt::format("... ({} digits)", digits);
        out += text;
        return true;
    }
    case Kind::float_: {
        auto value = memory_.read_value<double>(object + o.float_value);
        if (!value) return false;
        out += float_repr(*value);
        return true;
    }
    case Kind::unicode:
    case Kind::py2_str:
    case Kind::bytes:
        return render_text(object, type, out, limit);
    case Kind::tuple:
    case Kind::list:
    case Kind::dict:
    case Kind::set:
    case Kind::frozenset:
        return render_items(object, type, out, limit, depth);
    case Kind::module: {
        if (o.module_dict == kAbsent) return false;
        auto dict = memory_.read_value<std::uint64_t>(object + o.module_dict);
        if (!dict) return false;
        auto name = dict_get(*dict, "__name__");
        auto text = name ? str_value(*name, 200) : std::nullopt;
        if (!text) return false;
        out += fmt::format("<module '{}'>", *text);
        return true;
    }
    case Kind::function: {
        std::uint32_t at = o.function_qualname != kAbsent ? o.function_qualname : o.function_name;
        if (at == kAbsent) return false;
        auto name = memory_.read_value<std::uint64_t>(object + at);
        auto text = name ? str_value(*name, 200) : std::nullopt;
        if (!text) return false;
        out += fmt::format("<function {} at 0x{:x}>", *text, object);
        return true;
    }
    case Kind::type: {
        const TypeInfo* self = type_at(object);
        if (self == nullptr) return false;
        bool builtin = layout.py2_strings && (self->flags & kTpflagsHeapType) == 0;
        out += fmt::format("<{} '{}'>", builtin ? "type" : "class", self->name);
        return true;
    }
    case Kind::cell: {
        if (o.cell_ref == kAbsent) return false;
        auto ref = memory_.read_value<std::uint64_t>(object + o.cell_ref);
        if (!ref) return false;
        if (*ref == 0 || depth >= kMaxDepth) {
            out += *ref == 0 ? "<cell: empty>" : "<cell>";
            return true;
        }
        out += "<cell: ";
        render(*ref, out, limit > 1 ? limit - 1 : 0, depth + 1);
        out += '>';
        return true;
    }
    case Kind::exception: {
        if (o.exception_args == kAbsent) return false;
        if (depth >= kMaxDepth) {
            out += type.name + "(...)";
            return true;
        }
        auto args = memory_.read_value<std::uint64_t>(object + o.exception_args);
        const TypeInfo* args_type = args ? type_of(*args) : nullptr;
        if (args_type == nullptr || args_type->kind != Kind::tuple) return false;
        auto count = memory_.read_value<std::int64_t>(*args + o.var_size);
        if (!count || *count < 0) return false;
        std::vector<Address> items(std::min<std::size_t>(static_cast<std::size_t>(*count), 8));
        if (!memory_.read(*args + o.tuple_items, items.data(), items.size() * sizeof(Address)))
            return false;
        out += type.name + "(";
        for (std::size_t i = 0; i < items.size() && out.size() < limit; ++i) {
            if (i > 0) out += ", ";
            render(items[i], out, limit, depth + 1);
        }
        if (items.size() < static_cast<std::size_t>(*count)) out += ", ...";
        out += ')';
        return true;
    }
    case Kind::other:
        break;
    }
    return false;
}

bool ObjectReader::render_text(Address object, const TypeInfo& type, std::string& out,
                               std::size_t limit) {
    const Layout& layout = target_.layout;
    const LayoutOffsets& o = layout.off;
    bool py2 = layout.py2_strings;
    std::uint32_t length_at = type.kind != Kind::unicode ? o.var_size
                              : py2                      ? o.py2_unicode_length
                                                         : o.unicode_length;
    auto length = memory_.read_value<std::int64_t>(object + length_at);
    if (!length || *length < 0) return false;
    auto total = static_cast<std::size_t>(*length);
    std::size_t room = limit > out.size() + 4 ? limit - out.size() - 4 : 1;
    std::size_t take = std::min(total, room);
    std::string text;
    bool escape_high = type.kind != Kind::unicode;
    if (type.kind == Kind::unicode) {
        auto value = str_value(object, take);
        if (!value) return false;
        text = std::move(*value);
        if (take < total && text.size() >= 3) text.resize(text.size() - 3); // str_value's "..."
    } else {
        text.resize(take);
        if (take > 0 && !memory_.read(object + o.bytes_data, text.data(), take)) return false;
    }
    std::size_t mark = out.size();
    auto quote = [&](std::size_t quote_limit) {
        out.resize(mark);
        if (type.kind == Kind::bytes) out += 'b';
        if (type.kind == Kind::unicode && py2) out += 'u';
        return append_quoted(out, text, escape_high, quote_limit);
    };
    if (take == total && quote(limit)) return true;
    // Cut: make room for the marker that tells the full length.
    std::string marker = fmt::format("... ({} {})", total, escape_high ? "bytes" : "chars");
    quote(limit > marker.size() ? limit - marker.size() : 0);
    out += marker;
    return true;
}

bool ObjectReader::render_items(Address object, const TypeInfo& type, std::string& out,
                                std::size_t limit, int depth) {
    const LayoutOffsets& o = target_.layout.off;
    Kind kind = type.kind;
    bool is_set = kind == Kind::set || kind == Kind::frozenset;
    std::uint32_t total_at = kind == Kind::dict ? o.dict_used : is_set ? o.set_used : o.var_size;
    if (total_at == kAbsent) return false;
    auto total = memory_.read_value<std::int64_t>(object + total_at);
    if (!total || *total < 0 || *total > (std::int64_t{1} << 40)) return false;
    auto count = static_cast<std::uint64_t>(*total);
    const char* open = kind == Kind::tuple ? "(" : kind == Kind::list ? "[" : "{";
    const char* close = kind == Kind::tuple ? ")" : kind == Kind::list ? "]" : "}";
    if (is_set && count == 0) {
        out += kind == Kind::set ? "set()" : "frozenset()";
        return true;
    }
    if (kind == Kind::frozenset) out += "frozenset(";
    const char* suffix = kind == Kind::frozenset ? ")" : "";
    if (count == 0 || depth >= kMaxDepth) {
        out += fmt::format("{}{}{}{}", open, count == 0 ? "" : "...", close, suffix);
        if (count != 0) out += fmt::format(" ({} item{})", count, count == 1 ? "" : "s");
        return true;
    }
    out += open;
    std::uint64_t shown = 0;
    // Room for ", ...", the closing brackets and " (N items)" after the last item shown.
    std::size_t reserve = 8 + fmt::formatted_size(" ({} items)", count);
    std::size_t items_limit = limit > reserve ? limit - reserve : 0;
    auto item = [&](Address key, Address value) {
        std::size_t mark = out.size();
        if (mark >= items_limit) return false;
        if (shown > 0) out += ", ";
        render(key, out, items_limit, depth + 1);
        if (kind == Kind::dict) {
            out += ": ";
            render(value, out, items_limit, depth + 1);
        }
        if (out.size() > items_limit && shown > 0) {
            out.resize(mark);
            return false;
        }
        ++shown;
        return true;
    };
    bool readable = true;
    if (kind == Kind::tuple || kind == Kind::list) {
        Address items = object + o.tuple_items;
        if (kind == Kind::list) {
            auto pointer = memory_.read_value<std::uint64_t>(object + o.list_items);
            if (!pointer || !plausible(*pointer)) return false;
            items = *pointer;
        }
        std::vector<Address> pointers(std::min<std::uint64_t>(count, kPreviewItems));
        readable =
            memory_.read(items, pointers.data(), pointers.size() * sizeof(Address)).has_value();
        for (std::size_t i = 0; readable && i < pointers.size(); ++i)
            if (!item(pointers[i], pointers[i])) break;
    } else if (kind == Kind::dict) {
        readable = dict_items(object, item, kPreviewItems);
    } else {
        readable = set_items(object, item, kPreviewItems);
    }
    if (!readable && shown == 0) return false;
    if (shown < count)
        out += shown > 0 ? ", ..." : "...";
    else if (kind == Kind::tuple && count == 1)
        out += ',';
    out += close;
    out += suffix;
    if (shown < count) out += fmt::format(" ({} item{})", count, count == 1 ? "" : "s");
    return true;
}

std::string ObjectReader::repr(Address object, std::size_t max_chars) {
    std::string out;
    render(object, out, max_chars, 0);
    if (out.size() > max_chars) {
        std::size_t cut = max_chars > 3 ? max_chars - 3 : 0;
        while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80)
            --cut;
        out.resize(cut);
        out += "...";
    }
    return out;
}

std::optional<Address> ObjectReader::module(Address interp, std::string_view name) {
    const LayoutOffsets& o = target_.layout.off;
    if (!plausible(interp) || o.interp_modules == kAbsent) return std::nullopt;
    auto modules = memory_.read_value<std::uint64_t>(interp + o.interp_modules);
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
    auto globals = memory_.read_value<std::uint64_t>(*threading + o.module_dict);
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
        if (auto flags = memory_.read_value<std::int32_t>(frame.code + o.code_flags))
            arguments += ((*flags & kCoVarargs) != 0) + ((*flags & kCoVarkeywords) != 0);
    if (o.code_kwonlyargcount != kAbsent)
        if (auto kwonly = memory_.read_value<std::int32_t>(frame.code + o.code_kwonlyargcount);
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
        if (!memory_.read(frame.frame + o.iframe_localsplus, values.data(),
                          values.size() * sizeof(Address)))
            return result;
        for (std::size_t i = 0; i < count; ++i)
            slots.push_back({names[i], values[i] & ~layout.code_tag_mask,
                             (kinds[i] & (kCoFastCell | kCoFastFree)) != 0, i < arguments});
    } else {
        // f_localsplus holds the co_nlocals locals, then the cells, then the free variables.
        auto tuple_at = [&](std::uint32_t offset) {
            if (offset == kAbsent) return std::vector<std::string>{};
            auto tuple = memory_.read_value<std::uint64_t>(frame.code + offset);
            return tuple ? tuple_strings(*tuple, kMaxLocals) : std::vector<std::string>{};
        };
        std::vector<std::string> cells = tuple_at(o.code_cellvars);
        std::vector<std::string> frees = tuple_at(o.code_freevars);
        if (count + cells.size() + frees.size() > kMaxLocals) return result;
        values.resize(count + cells.size() + frees.size());
        if (!memory_.read(frame.frame + o.frame_localsplus, values.data(),
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
                auto ref = memory_.read_value<std::uint64_t>(value + o.cell_ref);
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
