// Repr-like rendering of target objects: numbers, strings, containers, bounded.
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>

#include "objects_internal.hpp"
#include <fmt/format.h>

#include "spyglass/process/remote_field.hpp"
#include "spyglass/python/objects.hpp"
#include "spyglass/python/strings.hpp"

namespace spyglass::python {

using namespace objects_detail;

namespace {

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
        auto value = int_value_as(object, type);
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
        auto value = process::read_field<double>(memory_, object, o.float_value);
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
        auto dict = process::read_field<std::uint64_t>(memory_, object, o.module_dict);
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
        auto name = process::read_field<std::uint64_t>(memory_, object, at);
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
        auto ref = process::read_field<std::uint64_t>(memory_, object, o.cell_ref);
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
        auto args = process::read_field<std::uint64_t>(memory_, object, o.exception_args);
        const TypeInfo* args_type = args ? type_of(*args) : nullptr;
        if (args_type == nullptr || args_type->kind != Kind::tuple) return false;
        auto count = process::read_field<std::int64_t>(memory_, *args, o.var_size);
        if (!count || *count < 0) return false;
        std::vector<Address> items(std::min<std::size_t>(static_cast<std::size_t>(*count), 8));
        if (!process::read_field_bytes(memory_, *args, o.tuple_items, items.data(),
                                       items.size() * sizeof(Address)))
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
    auto length = process::read_field<std::int64_t>(memory_, object, length_at);
    if (!length || *length < 0) return false;
    auto total = static_cast<std::size_t>(*length);
    std::size_t room = limit > out.size() + 4 ? limit - out.size() - 4 : 1;
    std::size_t take = std::min(total, room);
    std::string text;
    bool escape_high = type.kind != Kind::unicode;
    if (type.kind == Kind::unicode) {
        auto value = str_value_as(object, type, take);
        if (!value) return false;
        text = std::move(*value);
        if (take < total && text.size() >= 3) text.resize(text.size() - 3); // str_value's "..."
    } else {
        text.resize(take);
        if (take > 0 &&
            !process::read_field_bytes(memory_, object, o.bytes_data, text.data(), take))
            return false;
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
    auto total = process::read_field<std::int64_t>(memory_, object, total_at);
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
        Address items = process::field_address(object, o.tuple_items, 0).value_or(0);
        if (kind == Kind::list) {
            auto pointer = process::read_field<std::uint64_t>(memory_, object, o.list_items);
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

} // namespace spyglass::python
