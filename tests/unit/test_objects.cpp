// ObjectReader over fake memory: dicts, instance attributes, thread names, repr and frame locals,
// laid out with each version's real offsets (the generated Layout tables).
#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "spyglass/process/fake_memory.hpp"
#include "spyglass/python/objects.hpp"

namespace {

using spyglass::process::Address;
using spyglass::process::FakeMemory;
using namespace spyglass::python;

constexpr Address kBase = 0x10000000;
constexpr std::size_t kHeapSize = 4u << 20;
constexpr std::uint64_t kHeapType = 1u << 9, kReady = 1u << 12, kManagedDict = 1u << 4,
                        kInlineValues = 1u << 2, kLongSub = 1u << 24, kTypeSub = 1ull << 31;

// A bump allocator over FakeMemory that builds CPython objects the way `layout` says.
class Heap {
  public:
    explicit Heap(const Layout& layout) : o(layout.off), layout_(layout) {
        memory.map(kBase, kHeapSize);
        target.layout = layout;
        target.version = layout.version;
        TypeAddresses& t = target.types;
        t.type = make_type("type", kTypeSub);
        memory.put(t.type + o.object_type, t.type);
        bool py2 = layout.py2_strings;
        t.unicode = make_type(py2 ? "unicode" : "str", 1u << 28);
        if (py2) t.str = make_type("str", 1u << 27);
        if (!py2) t.bytes = make_type("bytes", 1u << 27);
        t.long_ = make_type(py2 ? "long" : "int", kLongSub);
        if (py2) t.int_ = make_type("int", 1u << 23);
        t.bool_ = make_type("bool", py2 ? 1u << 23 : kLongSub);
        t.float_ = make_type("float", 0);
        t.tuple = make_type("tuple", 1u << 26);
        t.list = make_type("list", 1u << 25);
        t.dict = make_type("dict", 1u << 29);
        t.module = make_type("module", 0, 16, 16);
        set_type = make_type("set", 0);
        function_type = make_type("function", 0);
        cell_type = make_type("cell", 0);
        t.none = object(make_type("NoneType", 0), 16);
        t.true_ = boolean(true);
        t.false_ = boolean(false);
    }

    Address alloc(std::size_t size) {
        next_ += 32; // room for a pre-header (3.11+ managed dicts) in front of every object
        Address at = next_;
        next_ += (size + 15) & ~std::size_t{15};
        EXPECT_LT(next_, kBase + kHeapSize);
        return at;
    }
    Address object(Address type, std::size_t size) {
        Address at = alloc(size);
        memory.put<std::int64_t>(at, 1);
        memory.put(at + o.object_type, type);
        return at;
    }
    Address cstring(std::string_view text) {
        Address at = alloc(text.size() + 1);
        memory.put_bytes(at, text);
        return at;
    }
    Address make_type(std::string_view name, std::uint64_t flags, std::int64_t basicsize = 16,
                      std::int64_t dictoffset = 0, Address cached_keys = 0) {
        Address at = object(target.types.type, 1024);
        memory.put(at + o.type_name, cstring(name));
        memory.put<std::uint64_t>(at + o.type_flags, flags | kReady);
        memory.put(at + o.type_basicsize, basicsize);
        memory.put(at + o.type_dictoffset, dictoffset);
        if (o.heaptype_cached_keys != kAbsent) memory.put(at + o.heaptype_cached_keys, cached_keys);
        return at;
    }

    Address str(std::string_view text) {
        if (layout_.py2_strings) return bytes_like(target.types.str, text);
        Address at = object(target.types.unicode, o.unicode_compact_data + text.size() + 1);
        memory.put<std::int64_t>(at + o.unicode_length, static_cast<std::int64_t>(text.size()));
        std::uint32_t state = (1u << o.unicode_kind_shift) | (1u << o.unicode_compact_bit) |
                              (1u << o.unicode_ascii_bit);
        memory.put(at + o.unicode_state, state);
        memory.put_bytes(at + o.unicode_ascii_data, text);
        return at;
    }
    // A compact non-ASCII str of the given kind (3.x only).
    Address wide_str(const std::u32string& text, int kind) {
        Address at = object(target.types.unicode, o.unicode_compact_data + 4 * text.size() + 4);
        memory.put<std::int64_t>(at + o.unicode_length, static_cast<std::int64_t>(text.size()));
        memory.put<std::uint32_t>(at + o.unicode_state,
                                  (static_cast<std::uint32_t>(kind) << o.unicode_kind_shift) |
                                      (1u << o.unicode_compact_bit));
        for (std::size_t i = 0; i < text.size(); ++i) {
            Address unit = at + o.unicode_compact_data + i * static_cast<std::size_t>(kind);
            if (kind == 1) memory.put(unit, static_cast<std::uint8_t>(text[i]));
            if (kind == 2) memory.put(unit, static_cast<std::uint16_t>(text[i]));
            if (kind == 4) memory.put(unit, static_cast<std::uint32_t>(text[i]));
        }
        return at;
    }
    Address bytes_like(Address type, std::string_view data) {
        Address at = object(type, o.bytes_data + data.size() + 1);
        memory.put<std::int64_t>(at + o.var_size, static_cast<std::int64_t>(data.size()));
        memory.put_bytes(at + o.bytes_data, data);
        return at;
    }
    Address bytes(std::string_view data) {
        return bytes_like(layout_.py2_strings ? target.types.str : target.types.bytes, data);
    }
    Address long_digits(Address type, const std::vector<std::uint32_t>& digits, bool negative) {
        Address at = object(type, o.long_digits + 4 * digits.size() + 8);
        auto n = static_cast<std::int64_t>(digits.size());
        if (o.long_tag != kAbsent)
            memory.put<std::uint64_t>(at + o.long_tag,
                                      (static_cast<std::uint64_t>(n) << 3) | (n == 0     ? 1
                                                                              : negative ? 2
                                                                                         : 0));
        else
            memory.put<std::int64_t>(at + o.var_size, negative ? -n : n);
        for (std::size_t i = 0; i < digits.size(); ++i)
            memory.put(at + o.long_digits + 4 * i, digits[i]);
        return at;
    }
    Address integer(std::int64_t value) {
        if (layout_.py2_strings) {
            Address at = object(target.types.int_, 24);
            memory.put(at + o.int_value, value);
            return at;
        }
        return long_value(target.types.long_, value);
    }
    Address long_value(Address type, std::int64_t value) {
        std::uint64_t magnitude = value < 0 ? 0 - static_cast<std::uint64_t>(value) : value;
        std::vector<std::uint32_t> digits;
        for (; magnitude != 0; magnitude >>= 30)
            digits.push_back(static_cast<std::uint32_t>(magnitude & ((1u << 30) - 1)));
        return long_digits(type, digits, value < 0);
    }
    Address boolean(bool value) {
        if (!layout_.py2_strings) return long_value(target.types.bool_, value ? 1 : 0);
        Address at = object(target.types.bool_, 24);
        memory.put<std::int64_t>(at + o.int_value, value ? 1 : 0);
        return at;
    }
    Address real(double value) {
        Address at = object(target.types.float_, 24);
        memory.put(at + o.float_value, value);
        return at;
    }
    Address tuple(const std::vector<Address>& items) {
        Address at = object(target.types.tuple, o.tuple_items + 8 * items.size() + 8);
        memory.put<std::int64_t>(at + o.var_size, static_cast<std::int64_t>(items.size()));
        for (std::size_t i = 0; i < items.size(); ++i)
            memory.put(at + o.tuple_items + 8 * i, items[i]);
        return at;
    }
    Address list(const std::vector<Address>& items) {
        Address at = object(target.types.list, 48);
        Address array = alloc(8 * items.size() + 8);
        memory.put<std::int64_t>(at + o.var_size, static_cast<std::int64_t>(items.size()));
        memory.put(at + o.list_items, array);
        for (std::size_t i = 0; i < items.size(); ++i)
            memory.put(array + 8 * i, items[i]);
        return at;
    }

    using Items = std::vector<std::pair<Address, Address>>;
    // A keys object (3.6+) holding `items`; values are left NULL for a split table. `unicode`
    // selects the 3.11+ {key, value} entries.
    Address keys(const Items& items, bool unicode, bool split) {
        std::uint64_t slots = 8;
        while (slots * 2 / 3 < items.size())
            slots *= 2;
        std::uint64_t width = slots <= 0x80 ? 1 : slots <= 0x8000 ? 2 : 4;
        std::size_t entry = unicode ? o.keys_unicode_entry_size : o.keys_entry_size;
        Address at = alloc(o.keys_indices + slots * width + entry * slots);
        memory.put<std::int64_t>(at, 1);
        if (o.keys_log2_size != kAbsent) {
            unsigned log2 = 0;
            while ((std::uint64_t{1} << log2) < slots)
                ++log2;
            unsigned log2_width = width == 1 ? 0 : width == 2 ? 1 : 2;
            memory.put(at + o.keys_log2_size, static_cast<std::uint8_t>(log2));
            memory.put(at + o.keys_log2_index_bytes, static_cast<std::uint8_t>(log2 + log2_width));
            memory.put(at + o.keys_kind, static_cast<std::uint8_t>(split ? 2 : unicode ? 1 : 0));
        } else {
            memory.put(at + o.keys_size, slots);
        }
        memory.put<std::int64_t>(at + o.keys_nentries, static_cast<std::int64_t>(items.size()));
        Address entries = at + o.keys_indices + slots * width;
        for (std::size_t i = 0; i < items.size(); ++i) {
            Address e = entries + i * entry;
            std::size_t key_at = unicode ? 0 : 8;
            if (!unicode) memory.put<std::int64_t>(e, static_cast<std::int64_t>(i) + 1000);
            memory.put(e + key_at, items[i].first);
            if (!split) memory.put(e + key_at + 8, items[i].second);
        }
        return at;
    }
    Address dict(const Items& items, bool all_str = false) {
        Address at = object(target.types.dict, 256);
        memory.put<std::int64_t>(at + o.dict_used, static_cast<std::int64_t>(items.size()));
        if (o.dict_py2_table != kAbsent) {
            std::uint64_t slots = 8;
            while (slots * 2 / 3 < items.size())
                slots *= 2;
            Address table = alloc(slots * o.dict_py2_entry_size);
            for (std::size_t i = 0; i < items.size(); ++i) {
                // Spread the entries over the table, as hashing would.
                Address e = table + ((i * 5 + 3) % slots) * o.dict_py2_entry_size;
                EXPECT_EQ(memory.read_value<std::uint64_t>(e + 8).value(), 0u);
                memory.put<std::int64_t>(e, 7);
                memory.put(e + 8, items[i].first);
                memory.put(e + 16, items[i].second);
            }
            memory.put(at + o.dict_py2_mask, slots - 1);
            memory.put(at + o.dict_py2_table, table);
            return at;
        }
        bool unicode = all_str && o.keys_log2_size != kAbsent;
        memory.put(at + o.dict_keys, keys(items, unicode, false));
        return at;
    }
    // Values for shared keys: 3.13's PyDictValues header then the slots. Returns the slots.
    Address values(const std::vector<Address>& items, Address at = 0) {
        std::size_t header = o.values_values != kAbsent ? o.values_values : 0;
        if (at == 0) at = alloc(header + 8 * items.size() + 8);
        if (o.values_capacity != kAbsent) {
            memory.put(at + o.values_capacity, static_cast<std::uint8_t>(items.size()));
            memory.put(at + o.values_valid, std::uint8_t{1});
        }
        for (std::size_t i = 0; i < items.size(); ++i)
            memory.put(at + header + 8 * i, items[i]);
        return at;
    }
    Address split_dict(const std::vector<std::string>& names, const std::vector<Address>& vals) {
        Items items;
        for (const auto& name : names)
            items.emplace_back(str(name), 0);
        Address at = object(target.types.dict, 256);
        memory.put<std::int64_t>(at + o.dict_used, std::count_if(vals.begin(), vals.end(),
                                                                 [](Address v) { return v != 0; }));
        memory.put(at + o.dict_keys, keys(items, o.keys_log2_size != kAbsent, true));
        memory.put(at + o.dict_values, values(vals));
        return at;
    }

    // An instance of a new heap type whose attributes live where this version keeps them.
    Address instance(std::string_view type_name, const std::vector<std::string>& names,
                     const std::vector<Address>& vals) {
        const PythonVersion& v = layout_.version;
        if (!v.at_least(3, 11)) {
            Address type = make_type(type_name, kHeapType, 24, 16);
            Address at = object(type, 24);
            Items items;
            for (std::size_t i = 0; i < names.size(); ++i)
                items.emplace_back(str(names[i]), vals[i]);
            memory.put(at + 16, dict(items, true));
            return at;
        }
        Items items;
        for (const auto& name : names)
            items.emplace_back(str(name), 0);
        Address shared = keys(items, true, true);
        std::uint64_t flags = kHeapType | kManagedDict | (v.at_least(3, 13) ? kInlineValues : 0);
        Address type = make_type(type_name, flags, 16, -1, shared);
        Address at = object(type, 16 + 8 + 8 * vals.size() + 8);
        if (v.at_least(3, 13)) {
            values(vals, at + 16);
        } else if (v.at_least(3, 12)) {
            memory.put<std::uint64_t>(at - 24, values(vals) - 1);
        } else {
            memory.put<std::uint64_t>(at - 32, values(vals));
        }
        return at;
    }
    Address module(std::string_view name, Items globals = {}) {
        Address at = object(target.types.module, 64);
        globals.emplace_back(str("__name__"), str(name));
        memory.put(at + o.module_dict, dict(globals, true));
        return at;
    }
    Address interpreter(Address modules) {
        Address at = alloc(o.interp_modules + 8);
        memory.put(at + o.interp_modules, modules);
        return at;
    }

    FakeMemory memory;
    TargetInfo target;
    Address set_type = 0, function_type = 0, cell_type = 0;
    const LayoutOffsets& o;

  private:
    const Layout& layout_;
    Address next_ = kBase;
};

class Objects : public ::testing::TestWithParam<std::pair<int, int>> {
  protected:
    Objects()
        : layout_(*layout_for(GetParam().first, GetParam().second)), heap_(layout_),
          reader_(heap_.memory, heap_.target) {}
    [[nodiscard]] bool py2() const { return layout_.py2_strings; }
    const Layout& layout_;
    Heap heap_;
    ObjectReader reader_;
};

std::string version_name(const ::testing::TestParamInfo<std::pair<int, int>>& info) {
    return "Py" + std::to_string(info.param.first) + "_" + std::to_string(info.param.second);
}

TEST_P(Objects, DictLookupWithStrAndIntKeys) {
    Address one = heap_.integer(1), two = heap_.integer(2), seven = heap_.str("seven");
    Address d = heap_.dict(
        {{heap_.str("alpha"), one}, {heap_.str("beta"), two}, {heap_.integer(7), seven}});
    EXPECT_EQ(reader_.dict_get(d, "beta"), two);
    EXPECT_EQ(reader_.dict_get(d, "alpha"), one);
    EXPECT_FALSE(reader_.dict_get(d, "gamma"));
    EXPECT_FALSE(reader_.dict_get(d, "alph"));
    std::optional<Address> by_int;
    EXPECT_TRUE(reader_.dict_items(d, [&](Address key, Address value) {
        if (reader_.int_value(key) == 7) by_int = value;
        return true;
    }));
    EXPECT_EQ(by_int, seven);
    EXPECT_EQ(reader_.str_value(seven), "seven");
}

TEST_P(Objects, LargeDictUsesWiderIndices) {
    Heap::Items items;
    for (int i = 0; i < 300; ++i)
        items.emplace_back(heap_.str("key" + std::to_string(i)), heap_.integer(i));
    Address d = heap_.dict(items, true);
    auto found = reader_.dict_get(d, "key299");
    ASSERT_TRUE(found);
    EXPECT_EQ(reader_.int_value(*found), 299);
}

// Split tables (3.3+) and managed dicts (3.11+) only exist in some versions.
class SplitTables : public Objects {};
class ManagedDicts : public Objects {};

TEST_P(SplitTables, SplitTableDict) {
    Address x = heap_.integer(10), y = heap_.integer(20);
    Address d = heap_.split_dict({"x", "y", "unset"}, {x, y, 0});
    EXPECT_EQ(reader_.dict_get(d, "y"), y);
    EXPECT_FALSE(reader_.dict_get(d, "unset"));
    EXPECT_EQ(reader_.repr(d), "{'x': 10, 'y': 20}");
}

TEST_P(Objects, InstanceAttributes) {
    Address name = heap_.str("worker");
    Address obj = heap_.instance("Thread", {"_target", "_name"}, {heap_.integer(5), name});
    EXPECT_EQ(reader_.attribute(obj, "_name"), name);
    EXPECT_FALSE(reader_.attribute(obj, "_missing"));
    EXPECT_EQ(reader_.type_name(obj), "Thread");
}

TEST_P(ManagedDicts, InstanceDictReplacedTheValues) {
    const PythonVersion& v = layout_.version;
    Address name = heap_.str("materialized");
    Address obj = heap_.instance("Thread", {"_name"}, {heap_.str("stale")});
    Address dict = heap_.dict({{heap_.str("_name"), name}}, true);
    if (v.at_least(3, 13)) {
        Address type = heap_.memory.read_value<std::uint64_t>(obj + heap_.o.object_type).value();
        std::int64_t basicsize =
            heap_.memory.read_value<std::int64_t>(type + heap_.o.type_basicsize).value();
        heap_.memory.put(obj + static_cast<Address>(basicsize) + heap_.o.values_valid,
                         std::uint8_t{0});
    } else if (!v.at_least(3, 12)) {
        heap_.memory.put<std::uint64_t>(obj - 32, 0);
    }
    heap_.memory.put(obj - 24, dict);
    EXPECT_EQ(reader_.attribute(obj, "_name"), name);
}

TEST_P(Objects, ThreadNames) {
    std::string attr = py2() ? "_Thread__name" : "_name";
    Address main_thread = heap_.instance("_MainThread", {attr}, {heap_.str("MainThread")});
    Address worker =
        heap_.instance("Thread", {"_ident", attr}, {heap_.integer(1), heap_.str("worker")});
    std::int64_t main_ident = 0x7f0011223340, worker_ident = 0x7f0011aabb00;
    Address active = heap_.dict(
        {{heap_.integer(main_ident), main_thread}, {heap_.integer(worker_ident), worker}});
    Address threading = heap_.module(
        "threading", {{heap_.str("_limbo"), heap_.dict({})}, {heap_.str("_active"), active}});
    Address modules = heap_.dict(
        {{heap_.str("sys"), heap_.module("sys")}, {heap_.str("threading"), threading}}, true);
    Address interp = heap_.interpreter(modules);
    EXPECT_EQ(reader_.module(interp, "threading"), threading);
    auto names = reader_.thread_names(interp);
    ASSERT_EQ(names.size(), 2u);
    EXPECT_EQ(names[static_cast<std::uint64_t>(main_ident)], "MainThread");
    EXPECT_EQ(names[static_cast<std::uint64_t>(worker_ident)], "worker");
}

TEST_P(Objects, ThreadNamesWithoutThreading) {
    Address interp = heap_.interpreter(heap_.dict({{heap_.str("sys"), heap_.module("sys")}}, true));
    EXPECT_TRUE(reader_.thread_names(interp).empty());
    EXPECT_TRUE(reader_.thread_names(0).empty());
}

TEST_P(Objects, ReprOfBasicTypes) {
    const TypeAddresses& t = heap_.target.types;
    std::string L = py2() ? "L" : "";
    EXPECT_EQ(reader_.repr(t.none), "None");
    EXPECT_EQ(reader_.repr(t.true_), "True");
    EXPECT_EQ(reader_.repr(heap_.boolean(false)), "False");
    EXPECT_EQ(reader_.repr(heap_.integer(42)), "42");
    EXPECT_EQ(reader_.repr(heap_.integer(-7)), "-7");
    EXPECT_EQ(reader_.repr(heap_.long_value(t.long_, 0)), "0" + L);
    // 2**100 and -(2**62 + 1)
    EXPECT_EQ(reader_.repr(heap_.long_digits(t.long_, {0, 0, 0, 1u << 10}, false)),
              "1267650600228229401496703205376" + L);
    EXPECT_EQ(reader_.repr(heap_.long_digits(t.long_, {1, 0, 1u << 2}, true)),
              "-4611686018427387905" + L);
    EXPECT_EQ(reader_.repr(heap_.real(3.5)), "3.5");
    EXPECT_EQ(reader_.repr(heap_.real(1e16)), "1e+16");
    EXPECT_EQ(reader_.repr(heap_.real(1e15)), "1000000000000000.0");
    EXPECT_EQ(reader_.repr(heap_.real(-0.0)), "-0.0");
    EXPECT_EQ(reader_.repr(heap_.real(1e-5)), "1e-05");
    EXPECT_EQ(reader_.repr(heap_.real(0.1)), "0.1");
    EXPECT_EQ(reader_.repr(heap_.str("text")), "'text'");
    EXPECT_EQ(reader_.repr(heap_.str("it's")), "\"it's\"");
    EXPECT_EQ(reader_.repr(heap_.str("a\nb\\")), "'a\\nb\\\\'");
    EXPECT_EQ(reader_.repr(heap_.bytes(std::string("\x00\x01"
                                                   "ab\xff",
                                                   5))),
              std::string(py2() ? "" : "b") + "'\\x00\\x01ab\\xff'");
    if (!py2()) {
        EXPECT_EQ(reader_.repr(heap_.wide_str(U"caf\u00e9", 1)), "'café'");
        EXPECT_EQ(reader_.repr(heap_.wide_str(U"\u51fd\u6570", 2)), "'函数'");
        EXPECT_EQ(reader_.repr(heap_.wide_str(U"\U00020000", 4)), "'𠀀'");
    }
    Address one = heap_.integer(1);
    EXPECT_EQ(reader_.repr(heap_.tuple({one})), "(1,)");
    EXPECT_EQ(reader_.repr(heap_.tuple({})), "()");
    EXPECT_EQ(reader_.repr(heap_.list({one, heap_.str("two"), t.none})), "[1, 'two', None]");
    // The 2.7 fake table puts the second entry in an earlier slot than the first.
    EXPECT_EQ(reader_.repr(heap_.dict({{heap_.str("a"), one}, {heap_.integer(2), heap_.str("b")}})),
              py2() ? "{2: 'b', 'a': 1}" : "{'a': 1, 2: 'b'}");
    EXPECT_EQ(reader_.repr(heap_.module("os")), "<module 'os'>");
    EXPECT_EQ(reader_.repr(t.dict), py2() ? "<type 'dict'>" : "<class 'dict'>");
    Address function = heap_.object(heap_.function_type, 128);
    std::uint32_t name_at =
        heap_.o.function_qualname != kAbsent ? heap_.o.function_qualname : heap_.o.function_name;
    heap_.memory.put(function + name_at, heap_.str("outer.<locals>.inner"));
    EXPECT_EQ(reader_.repr(function),
              fmt::format("<function outer.<locals>.inner at 0x{:x}>", function));
    Address foo = heap_.object(heap_.make_type("Foo", kHeapType), 16);
    EXPECT_EQ(reader_.repr(foo), fmt::format("<Foo object at 0x{:x}>", foo));
}

TEST_P(Objects, ReprIsBounded) {
    std::string text(500, 'x');
    std::string shown = reader_.repr(heap_.str(text), 60);
    EXPECT_LE(shown.size(), 60u);
    EXPECT_EQ(shown.substr(0, 4), "'xxx");
    EXPECT_NE(shown.find(py2() ? "(500 bytes)" : "(500 chars)"), std::string::npos) << shown;

    std::vector<Address> many;
    for (int i = 0; i < 100; ++i)
        many.push_back(heap_.integer(1000 + i));
    std::string list = reader_.repr(heap_.list(many), 80);
    EXPECT_LE(list.size(), 80u);
    EXPECT_EQ(list.substr(0, 6), "[1000,");
    EXPECT_NE(list.find(", ...] (100 items)"), std::string::npos) << list;

    // A list that contains itself: depth-bounded, not an endless recursion.
    Address self = heap_.list({0, 0});
    Address array = heap_.memory.read_value<std::uint64_t>(self + heap_.o.list_items).value();
    heap_.memory.put(array, self);
    heap_.memory.put(array + 8, self);
    std::string nested = reader_.repr(self, 200);
    EXPECT_LE(nested.size(), 200u);
    EXPECT_NE(nested.find("[...] (2 items)"), std::string::npos) << nested;
}

TEST_P(Objects, ExceptionsAndCells) {
    Address type = heap_.make_type("ValueError", 1u << 30);
    Address error = heap_.object(type, 64);
    heap_.memory.put(error + heap_.o.exception_args, heap_.tuple({heap_.str("bad")}));
    EXPECT_EQ(reader_.repr(error), "ValueError('bad')");
    // An exception that is its own argument, inside a cell: depth-bounded.
    Address cell = heap_.object(heap_.cell_type, 24);
    heap_.memory.put(cell + heap_.o.cell_ref, error);
    heap_.memory.put(error + heap_.o.exception_args, heap_.tuple({error, cell}));
    std::string shown = reader_.repr(cell, 1000);
    EXPECT_EQ(shown.substr(0, 19), "<cell: ValueError(V");
    EXPECT_NE(shown.find("ValueError(...)"), std::string::npos) << shown;
}

TEST_P(Objects, CorruptObjectsFailCleanly) {
    EXPECT_EQ(reader_.repr(0x5000), "<unreadable object at 0x5000>");
    Address d = heap_.dict({{heap_.str("a"), heap_.integer(1)}});
    if (!py2()) {
        // An absurd entry count in the keys object.
        Address keys = heap_.memory.read_value<std::uint64_t>(d + heap_.o.dict_keys).value();
        heap_.memory.put<std::int64_t>(keys + heap_.o.keys_nentries, std::int64_t{1} << 40);
    } else {
        heap_.memory.put<std::uint64_t>(d + heap_.o.dict_py2_mask, (std::uint64_t{1} << 40) - 1);
    }
    EXPECT_FALSE(reader_.dict_get(d, "a"));
    EXPECT_EQ(reader_.repr(d), fmt::format("<dict object at 0x{:x}>", d));
    // A "dict" whose type is not a dict is not read as one.
    EXPECT_FALSE(reader_.dict_get(heap_.list({}), "a"));
    // A type without Py_TPFLAGS_READY is not trusted.
    Address type = heap_.make_type("Bogus", 0);
    heap_.memory.put<std::uint64_t>(type + heap_.o.type_flags, 0);
    EXPECT_FALSE(reader_.type_name(heap_.object(type, 16)));
}

// The target frees an object between spyglass's read of its type and of its value: 2.7's int
// free list then points ob_type at the next free int. The value read must use the type read once.
TEST_P(Objects, ObjectFreedAfterItsTypeWasRead) {
    for (bool text : {false, true}) {
        Address object = text ? heap_.str("freed") : heap_.integer(42);
        Address next_free = heap_.integer(7);
        ASSERT_EQ(reader_.repr(object), text ? "'freed'" : "42"); // the type is now cached
        std::uint64_t start = heap_.memory.read_calls();
        heap_.memory.on_read([&](std::uint64_t done) {
            if (done == start + 1) heap_.memory.put(object + heap_.o.object_type, next_free);
        });
        EXPECT_EQ(reader_.repr(object), text ? "'freed'" : "42");
        heap_.memory.on_read(nullptr);
    }
}

TEST_P(Objects, TypesFoundByNameWithoutSymbols) {
    Address one = heap_.integer(1), list = heap_.list({one, heap_.str("s")});
    heap_.target.types = TypeAddresses{};
    ObjectReader reader(heap_.memory, heap_.target);
    EXPECT_EQ(reader.repr(list), "[1, 's']");
}

TEST_P(Objects, Locals) {
    Address code = heap_.alloc(1024);
    CodeInfo info;
    info.argcount = 1;
    info.nlocals = 4;
    std::vector<std::string> names = {"arg", "local", "unbound", "captured"};
    std::vector<Address> name_objects;
    for (const auto& name : names)
        name_objects.push_back(heap_.str(name));
    info.local_names = heap_.tuple(name_objects);
    Address cell = heap_.object(heap_.cell_type, 24);
    heap_.memory.put(cell + heap_.o.cell_ref, heap_.str("in a cell"));
    std::vector<Address> slots = {heap_.integer(3), heap_.list({}), 0, cell};
    RawFrame frame;
    frame.code = code;
    if (layout_.frame_model == FrameModel::interpreter_frames) {
        info.local_kinds = heap_.bytes(std::string("\x20\x20\x20\x40", 4));
        frame.frame = heap_.alloc(layout_.off.iframe_localsplus + 8 * slots.size());
        for (std::size_t i = 0; i < slots.size(); ++i)
            heap_.memory.put(frame.frame + layout_.off.iframe_localsplus + 8 * i, slots[i]);
    } else {
        // Up to 3.10 the cell variable is named in co_cellvars and follows the locals.
        info.nlocals = 3;
        heap_.memory.put(code + layout_.off.code_cellvars, heap_.tuple({name_objects[3]}));
        heap_.memory.put(code + layout_.off.code_freevars, heap_.tuple({}));
        frame.frame = heap_.alloc(layout_.off.frame_localsplus + 8 * slots.size());
        for (std::size_t i = 0; i < slots.size(); ++i)
            heap_.memory.put(frame.frame + layout_.off.frame_localsplus + 8 * i, slots[i]);
    }
    auto locals = reader_.locals(frame, info);
    ASSERT_EQ(locals.size(), 3u);
    EXPECT_EQ(locals[0].name, "arg");
    EXPECT_EQ(locals[0].value, "3");
    EXPECT_TRUE(locals[0].argument);
    EXPECT_EQ(locals[1].name, "local");
    EXPECT_EQ(locals[1].value, "[]");
    EXPECT_FALSE(locals[1].argument);
    EXPECT_EQ(locals[2].name, "captured");
    EXPECT_EQ(locals[2].value, "'in a cell'");
}

TEST_P(Objects, GarbageIsReadWithoutCrashingOrLooping) {
    // Words that are either pointers into the region or arbitrary values, with a few valid
    // objects in between: whatever the reader follows must stay bounded.
    constexpr Address kGarbage = 0x40000000;
    constexpr std::size_t kWords = 8192;
    heap_.memory.map(kGarbage, kWords * 8);
    std::uint64_t state = 0x9e3779b97f4a7c15ull;
    auto next = [&] {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        return state;
    };
    std::vector<Address> real = {heap_.integer(5), heap_.str("s"), heap_.target.types.dict,
                                 heap_.target.types.list, heap_.dict({})};
    for (std::size_t i = 0; i < kWords; ++i) {
        std::uint64_t r = next();
        std::uint64_t word = r % 4 == 0   ? kGarbage + (next() % kWords) * 8
                             : r % 4 == 1 ? real[next() % real.size()]
                             : r % 4 == 2 ? next() % 64
                                          : next();
        heap_.memory.put(kGarbage + i * 8, word);
    }
    for (std::size_t i = 0; i < kWords; i += 3) {
        Address at = kGarbage + i * 8;
        EXPECT_LE(reader_.repr(at, 100).size(), 100u);
        reader_.dict_get(at, "x");
        reader_.attribute(at, "_name");
        reader_.thread_names(at);
        CodeInfo info;
        info.nlocals = static_cast<std::int32_t>(next() % 64);
        info.argcount = 2;
        info.local_names = kGarbage + (next() % kWords) * 8;
        info.local_kinds = kGarbage + (next() % kWords) * 8;
        RawFrame frame;
        frame.frame = at;
        frame.code = kGarbage + (next() % kWords) * 8;
        for (const auto& local : reader_.locals(frame, info, 50))
            EXPECT_LE(local.value.size(), 50u);
    }
}

INSTANTIATE_TEST_SUITE_P(Versions, Objects,
                         ::testing::Values(std::pair{2, 7}, std::pair{3, 6}, std::pair{3, 10},
                                           std::pair{3, 11}, std::pair{3, 12}, std::pair{3, 13}),
                         version_name);
INSTANTIATE_TEST_SUITE_P(Versions, SplitTables,
                         ::testing::Values(std::pair{3, 6}, std::pair{3, 10}, std::pair{3, 11},
                                           std::pair{3, 12}, std::pair{3, 13}),
                         version_name);
INSTANTIATE_TEST_SUITE_P(Versions, ManagedDicts,
                         ::testing::Values(std::pair{3, 11}, std::pair{3, 12}, std::pair{3, 13}),
                         version_name);

} // namespace
