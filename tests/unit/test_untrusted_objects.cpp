// ObjectReader over hostile objects (and hostile layouts): sizes and counts that would wrap,
// header fields beyond the bytes read, shifts past the width of the type.
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "spyglass/process/fake_memory.hpp"
#include "spyglass/python/objects.hpp"

namespace {

using spyglass::process::Address;
using spyglass::process::FakeMemory;
using namespace spyglass::python;

constexpr Address kBase = 0x20000000;
constexpr std::uint64_t kReady = 1u << 12, kHeapType = 1u << 9, kManagedDict = 1u << 4,
                        kInlineValues = 1u << 2;

class Heap {
  public:
    explicit Heap(const Layout& layout) : layout_(layout), o(layout_.off) {
        memory.map(kBase, 1u << 20);
        target.layout = layout_;
        target.version = layout_.version;
        target.types.type = type("type", 1ull << 31);
        target.types.unicode = type("str", 1u << 28);
        target.types.long_ = type("int", 1u << 24);
        target.types.dict = type("dict", 1u << 29);
    }
    Address alloc(std::size_t size) {
        next_ += 32;
        Address at = next_;
        next_ += (size + 15) & ~std::size_t{15};
        return at;
    }
    Address object(Address of_type, std::size_t size) {
        Address at = alloc(size);
        memory.put<std::int64_t>(at, 1);
        memory.put(at + o.object_type, of_type);
        return at;
    }
    Address type(std::string_view name, std::uint64_t flags, std::int64_t basicsize = 16) {
        Address at = object(target.types.type, 1024);
        Address text = alloc(name.size() + 1);
        memory.put_bytes(text, name);
        memory.put(at + o.type_name, text);
        memory.put<std::uint64_t>(at + o.type_flags, flags | kReady);
        memory.put(at + o.type_basicsize, basicsize);
        return at;
    }
    Address str(std::string_view text) {
        Address at = object(target.types.unicode, o.unicode_compact_data + text.size() + 1);
        memory.put<std::int64_t>(at + o.unicode_length, static_cast<std::int64_t>(text.size()));
        memory.put<std::uint32_t>(at + o.unicode_state, (1u << o.unicode_kind_shift) |
                                                            (1u << o.unicode_compact_bit) |
                                                            (1u << o.unicode_ascii_bit));
        memory.put_bytes(at + o.unicode_ascii_data, text);
        return at;
    }
    // An int of one digit whose header claims `count` digits.
    Address int_claiming(std::uint64_t count) {
        Address at = object(target.types.long_, o.long_digits + 16);
        if (o.long_tag != kAbsent)
            memory.put<std::uint64_t>(at + o.long_tag, count << 3);
        else
            memory.put<std::uint64_t>(at + o.var_size, count);
        memory.put<std::uint32_t>(at + o.long_digits, 7);
        return at;
    }
    // A 3.11+ dict with one str -> value item in a unicode keys object.
    Address dict(Address key, Address value, std::uint8_t log2_size = 3) {
        Address keys = alloc(o.keys_indices + 8 + 16 * 8);
        memory.put(keys + o.keys_log2_size, log2_size);
        memory.put(keys + o.keys_log2_index_bytes, log2_size);
        memory.put(keys + o.keys_kind, std::uint8_t{1});
        memory.put<std::int64_t>(keys + o.keys_nentries, 1);
        Address entries = keys + o.keys_indices + 8;
        memory.put(entries, key);
        memory.put(entries + 8, value);
        Address at = object(target.types.dict, 64);
        memory.put<std::int64_t>(at + o.dict_used, 1);
        memory.put(at + o.dict_keys, keys);
        return at;
    }

    FakeMemory memory;
    TargetInfo target;

  private:
    Layout layout_;

  public:
    const LayoutOffsets& o;

  private:
    Address next_ = kBase;
};

// 2^61 - 1 digits of 30 bits: count * 30 wrapped and the repr told a made-up bit count.
TEST(UntrustedObjects, AnIntOfImpossiblyManyDigitsIsNotRendered) {
    for (auto version : {std::pair{3, 13}, std::pair{3, 11}}) {
        Heap heap(*layout_for(version.first, version.second));
        ObjectReader reader(heap.memory, heap.target);
        std::uint64_t count = (std::uint64_t{1} << 61) - 1;
        if (heap.o.long_tag == kAbsent) count = std::uint64_t{1} << 63; // ob_size = INT64_MIN
        Address number = heap.int_claiming(count);
        EXPECT_EQ(reader.repr(number), fmt::format("<int object at 0x{:x}>", number));
        EXPECT_FALSE(reader.int_value(number));
        // A big but possible int still says its size.
        Address big = heap.int_claiming(100000);
        EXPECT_EQ(reader.repr(big), "<int of ~3000000 bits>");
    }
}

TEST(UntrustedObjects, AShiftAsWideAsTheDigitIsRefused) {
    Layout layout = *layout_for(3, 13);
    layout.off.long_shift = 64;
    Heap heap(layout);
    ObjectReader reader(heap.memory, heap.target);
    Address number = heap.int_claiming(1);
    EXPECT_FALSE(reader.int_value(number));
    EXPECT_EQ(reader.repr(number), fmt::format("<int object at 0x{:x}>", number));
}

TEST(UntrustedObjects, ADictWithAnImpossibleTableSizeIsUnreadable) {
    Heap heap(*layout_for(3, 13));
    ObjectReader reader(heap.memory, heap.target);
    Address value = heap.str("v");
    EXPECT_EQ(reader.dict_get(heap.dict(heap.str("k"), value), "k"), value);
    for (std::uint8_t log2 : {std::uint8_t{200}, std::uint8_t{255}, std::uint8_t{0}})
        EXPECT_FALSE(reader.dict_get(heap.dict(heap.str("k"), value, log2), "k"));
}

// Keys-object fields of the layout beyond the header that was read.
TEST(UntrustedObjects, KeysFieldsBeyondTheHeaderRead) {
    Layout base = *layout_for(3, 13);
    for (auto field : {&LayoutOffsets::keys_nentries, &LayoutOffsets::keys_kind,
                       &LayoutOffsets::keys_log2_index_bytes}) {
        Heap heap(base);
        Address value = heap.str("v");
        Address dict = heap.dict(heap.str("k"), value);
        Layout layout = base;
        layout.off.*field = field == &LayoutOffsets::keys_nentries ? 60 : kAbsent;
        TargetInfo target = heap.target;
        target.layout = layout;
        ObjectReader reader(heap.memory, target);
        EXPECT_FALSE(reader.dict_get(dict, "k"));
    }
}

// 3.13 inline values: the layout's valid/capacity bytes beyond the 8 bytes read.
TEST(UntrustedObjects, InlineValuesFlagsBeyondTheHeaderRead) {
    Layout layout = *layout_for(3, 13);
    layout.off.values_valid = 12;
    Heap heap(layout);
    ObjectReader reader(heap.memory, heap.target);
    Address klass = heap.type("C", kHeapType | kManagedDict | kInlineValues, 16);
    Address instance = heap.object(klass, 64);
    heap.memory.put<std::uint64_t>(instance - 24, 0); // no dict either
    EXPECT_FALSE(reader.attribute(instance, "x"));
}

} // namespace
