// Dicts, sets and instance attributes of the target: the hash tables of every supported version
// and the places where 3.11+ keeps an object's attributes without a dict.
#include <array>
#include <cstring>

#include "objects_internal.hpp"

#include "spyglass/process/checked.hpp"
#include "spyglass/process/remote_field.hpp"
#include "spyglass/python/objects.hpp"
#include "spyglass/python/strings.hpp"

namespace spyglass::python {

namespace {

constexpr std::uint64_t kMaxTableSlots = 1u << 20;
constexpr std::size_t kChunkEntries = 128;
constexpr std::size_t kMaxEntryBytes = 64; // the layout's entry sizes are 16 to 24 bytes

constexpr std::uint64_t kTpflagsManagedDict = 1u << 4;  // 3.11+
constexpr std::uint64_t kTpflagsInlineValues = 1u << 2; // 3.13+

using objects_detail::plausible;
using process::checked_load;

// A field of a table entry or header; 0 when the layout puts it outside the bytes read.
template <class T>
T field(std::span<const std::uint8_t> bytes, std::uint64_t offset) {
    return checked_load<T>(bytes, offset).value_or(T{});
}

bool power_of_two(std::uint64_t value) {
    return value != 0 && (value & (value - 1)) == 0;
}

// Reads `count` entries of `entry_size` bytes at `entries` in chunks and hands each to `each`
// (which returns false to stop). False when a read fails or the entry size is implausible.
template <class Each>
bool for_each_entry(process::RemoteMemory& memory, Address entries, std::uint64_t count,
                    std::size_t entry_size, Each&& each) {
    if (entry_size == 0 || entry_size > kMaxEntryBytes) return false;
    std::vector<std::uint8_t> chunk(kChunkEntries * entry_size);
    for (std::uint64_t first = 0; first < count; first += kChunkEntries) {
        std::uint64_t n = std::min<std::uint64_t>(kChunkEntries, count - first);
        if (!process::read_field_bytes(memory, entries, first * entry_size, chunk.data(),
                                       n * entry_size))
            return false;
        for (std::uint64_t i = 0; i < n; ++i)
            if (!each(first + i,
                      std::span<const std::uint8_t>(chunk).subspan(i * entry_size, entry_size)))
                return true;
    }
    return true;
}

} // namespace

bool ObjectReader::dict_items(Address dict, const ItemVisitor& visit, std::size_t max_items) {
    const LayoutOffsets& o = target_.layout.off;
    const TypeInfo* type = type_of(dict);
    if (type == nullptr || type->kind != Kind::dict) return false;
    if (o.dict_py2_table != kAbsent) return py2_dict_items(dict, visit, max_items);
    auto keys = process::read_field<std::uint64_t>(memory_, dict, o.dict_keys);
    auto values = process::read_field<std::uint64_t>(memory_, dict, o.dict_values);
    if (!keys || !values) return false;
    if (*values == 0) return keys_items(*keys, 0, 0, visit, max_items);
    if (!plausible(*values)) return false;
    std::size_t capacity = kMaxDictEntries;
    if (o.values_capacity != kAbsent) {
        auto stored = process::read_field<std::uint8_t>(memory_, *values, o.values_capacity);
        if (!stored) return false;
        capacity = *stored;
    }
    auto slots =
        process::field_address(*values, o.values_values != kAbsent ? o.values_values : 0, 0);
    if (!slots) return false;
    return keys_items(*keys, *slots, capacity, visit, max_items);
}

bool ObjectReader::keys_items(Address keys, Address values, std::size_t capacity,
                              const ItemVisitor& visit, std::size_t max_items) {
    const LayoutOffsets& o = target_.layout.off;
    if (!plausible(keys) || o.keys_indices == kAbsent || o.keys_nentries == kAbsent) return false;
    std::array<std::uint8_t, 64> buffer{};
    if (o.keys_indices > buffer.size() || !memory_.read(keys, buffer.data(), o.keys_indices))
        return false;
    std::span<const std::uint8_t> header(buffer.data(), o.keys_indices);
    Address entries = 0;
    std::uint64_t slots = 0;
    std::size_t entry_size = o.keys_entry_size;
    // PyDictKeyEntry is {hash, key, value}; PyDictUnicodeEntry (3.11+) is {key, value}.
    std::size_t key_at = 8, value_at = 16;
    if (o.keys_log2_size != kAbsent) {
        auto log2_size = checked_load<std::uint8_t>(header, o.keys_log2_size);
        auto log2_index_bytes = checked_load<std::uint8_t>(header, o.keys_log2_index_bytes);
        auto kind = checked_load<std::uint8_t>(header, o.keys_kind);
        if (!log2_size || !log2_index_bytes || !kind || *log2_size < 3 || *log2_size > 40 ||
            *log2_index_bytes < *log2_size || *log2_index_bytes > *log2_size + 3)
            return false;
        slots = std::uint64_t{1} << *log2_size;
        auto at = process::field_address(
            keys, std::uint64_t{o.keys_indices} + (std::uint64_t{1} << *log2_index_bytes), 0);
        if (!at) return false;
        entries = *at;
        if (*kind != 0) { // DICT_KEYS_UNICODE or DICT_KEYS_SPLIT
            entry_size = o.keys_unicode_entry_size;
            key_at = 0;
            value_at = 8;
        }
    } else {
        // 3.6 - 3.10: dk_size slots of 1, 2, 4 or 8 byte indices, then the entries.
        slots = field<std::uint64_t>(header, o.keys_size);
        if (!power_of_two(slots) || slots < 8 || slots > (std::uint64_t{1} << 40)) return false;
        std::uint64_t width = slots <= 0xff ? 1 : slots <= 0xffff ? 2 : slots <= 0xffffffff ? 4 : 8;
        auto at = process::field_address(keys, std::uint64_t{o.keys_indices} + slots * width, 0);
        if (!at) return false;
        entries = *at;
    }
    auto stored = checked_load<std::int64_t>(header, o.keys_nentries);
    if (!stored) return false;
    std::int64_t nentries = *stored;
    if (nentries < 0 || static_cast<std::uint64_t>(nentries) > slots ||
        static_cast<std::uint64_t>(nentries) > kMaxDictEntries || entry_size == kAbsent ||
        entry_size < value_at + 8)
        return false;

    std::vector<Address> split_values;
    if (values != 0) {
        split_values.resize(std::min<std::size_t>(static_cast<std::size_t>(nentries), capacity));
        if (!split_values.empty() &&
            !memory_.read(values, split_values.data(), split_values.size() * sizeof(Address)))
            return false;
    }
    std::size_t visited = 0;
    return for_each_entry(memory_, entries, static_cast<std::uint64_t>(nentries), entry_size,
                          [&](std::uint64_t index, std::span<const std::uint8_t> entry) {
                              Address key = field<std::uint64_t>(entry, key_at);
                              Address value = 0;
                              if (values == 0)
                                  value = field<std::uint64_t>(entry, value_at);
                              else if (index < split_values.size())
                                  value = split_values[index];
                              if (key == 0 || value == 0) return true;
                              ++visited;
                              return visit(key, value) && visited < max_items;
                          });
}

bool ObjectReader::py2_dict_items(Address dict, const ItemVisitor& visit, std::size_t max_items) {
    const LayoutOffsets& o = target_.layout.off;
    auto mask = process::read_field<std::uint64_t>(memory_, dict, o.dict_py2_mask);
    auto table = process::read_field<std::uint64_t>(memory_, dict, o.dict_py2_table);
    if (!mask || !table || !plausible(*table)) return false;
    std::uint64_t slots = *mask + 1;
    if (!power_of_two(slots) || slots > kMaxTableSlots || o.dict_py2_entry_size < 24) return false;
    std::size_t visited = 0;
    // PyDictEntry is {hash, key, value}; deleted slots keep a dummy key and a NULL value.
    return for_each_entry(memory_, *table, slots, o.dict_py2_entry_size,
                          [&](std::uint64_t, std::span<const std::uint8_t> entry) {
                              Address key = field<std::uint64_t>(entry, 8);
                              Address value = field<std::uint64_t>(entry, 16);
                              if (key == 0 || value == 0) return true;
                              ++visited;
                              return visit(key, value) && visited < max_items;
                          });
}

bool ObjectReader::set_items(Address set, const ItemVisitor& visit, std::size_t max_items) {
    const LayoutOffsets& o = target_.layout.off;
    if (o.set_table == kAbsent || o.set_entry_size == kAbsent) return false;
    auto mask = process::read_field<std::uint64_t>(memory_, set, o.set_mask);
    auto table = process::read_field<std::uint64_t>(memory_, set, o.set_table);
    if (!mask || !table || !plausible(*table)) return false;
    std::uint64_t slots = *mask + 1;
    if (!power_of_two(slots) || slots > kMaxTableSlots || o.set_entry_size < 16) return false;
    std::size_t hash_at = o.set_entry_key == 0 ? 8 : 0;
    bool py2 = target_.layout.py2_strings;
    std::size_t visited = 0;
    return for_each_entry(memory_, *table, slots, o.set_entry_size,
                          [&](std::uint64_t, std::span<const std::uint8_t> entry) {
                              Address key = field<std::uint64_t>(entry, o.set_entry_key);
                              if (key == 0) return true;
                              // A deleted slot holds the dummy key: on 3.x with hash -1 (no
                              // object hashes to -1), on 2.7 the str "<dummy key>".
                              if (!py2 && field<std::int64_t>(entry, hash_at) == -1) return true;
                              if (py2 && key_equals(key, "<dummy key>")) return true;
                              ++visited;
                              return visit(key, key) && visited < max_items;
                          });
}

bool ObjectReader::key_equals(Address key, std::string_view text) {
    Address expected = target_.types.name_type(target_.layout);
    if (expected == 0) {
        const TypeInfo* type = type_of(key);
        if (type == nullptr || !type->exact ||
            type->kind != (target_.layout.py2_strings ? Kind::py2_str : Kind::unicode))
            return false;
    }
    std::string decoded;
    if (!read_str(memory_, target_.layout, key, decoded, expected, text.size(), Overlong::fail))
        return false;
    return decoded == text;
}

std::optional<Address> ObjectReader::dict_get(Address dict, std::string_view key) {
    std::optional<Address> found;
    dict_items(dict, [&](Address k, Address v) {
        if (!key_equals(k, key)) return true;
        found = v;
        return false;
    });
    return found;
}

std::optional<ObjectReader::InstanceAttributes>
ObjectReader::instance_attributes(Address object, const TypeInfo& type) {
    const Layout& layout = target_.layout;
    const LayoutOffsets& o = layout.off;
    std::size_t values_header = o.values_values != kAbsent ? o.values_values : 0;
    // Addresses from the object's address (and words read near it): no sum or difference may
    // wrap.
    auto word_at = [&](std::optional<Address> at) -> std::optional<std::uint64_t> {
        if (!at) return std::nullopt;
        auto word = memory_.read_value<std::uint64_t>(*at);
        if (!word) return std::nullopt;
        return *word;
    };
    auto after = [](Address base, std::uint64_t offset) {
        return process::field_address(base, offset, 0);
    };
    if (layout.version.at_least(3, 11) && (type.flags & kTpflagsManagedDict) != 0) {
        // The "pre-header" in front of the object (pycore_object.h): the dict pointer is
        // always 3 words before the object.
        std::optional<Address> dict_slot = process::checked_sub(object, 3 * sizeof(Address));
        if (!layout.version.at_least(3, 12)) {
            // 3.11: PyDictValues* 4 words before, the dict 3 words before.
            auto values = word_at(process::checked_sub(object, 4 * sizeof(Address)));
            if (!values) return std::nullopt;
            if (*values != 0) {
                auto slots = after(*values, values_header);
                if (!slots) return std::nullopt;
                return InstanceAttributes{0, type.cached_keys, *slots, kMaxDictEntries};
            }
        } else if (!layout.version.at_least(3, 13)) {
            // 3.12: PyDictOrValues; an odd value is (PyDictValues* - 1).
            auto dorv = word_at(dict_slot);
            if (!dorv) return std::nullopt;
            if ((*dorv & 1) != 0) {
                auto slots = after(*dorv, 1 + values_header);
                if (!slots) return std::nullopt;
                return InstanceAttributes{0, type.cached_keys, *slots, kMaxDictEntries};
            }
            return InstanceAttributes{*dorv, 0, 0, 0};
        } else if ((type.flags & kTpflagsInlineValues) != 0 && o.values_valid != kAbsent) {
            // 3.13: the values follow the object (tp_basicsize), valid until a dict replaced
            // them.
            std::array<std::uint8_t, 8> header{};
            auto values =
                process::field_address(object, static_cast<Address>(type.basicsize), header.size());
            if (!values || !memory_.read(*values, header.data(), header.size()))
                return std::nullopt;
            auto valid = checked_load<std::uint8_t>(header, o.values_valid);
            auto capacity = checked_load<std::uint8_t>(header, o.values_capacity);
            auto slots = after(*values, values_header);
            if (!valid || !capacity || !slots) return std::nullopt;
            if (*valid != 0) return InstanceAttributes{0, type.cached_keys, *slots, *capacity};
        }
        auto dict = word_at(dict_slot);
        if (!dict) return std::nullopt;
        return InstanceAttributes{*dict, 0, 0, 0};
    }
    if (type.dictoffset == 0) return std::nullopt;
    std::int64_t offset = type.dictoffset;
    if (offset < 0) {
        // Variable-size objects keep the dict after the items (_PyObject_VAR_SIZE).
        auto size = process::read_field<std::int64_t>(memory_, object, o.var_size);
        if (!size || *size < -(1LL << 32) || *size > (1LL << 32)) return std::nullopt;
        std::int64_t items = *size < 0 ? -*size : *size;
        std::int64_t end = type.basicsize + items * type.itemsize;
        offset += (end + 7) & ~std::int64_t{7};
        if (offset < 0) return std::nullopt;
    }
    auto dict = word_at(after(object, static_cast<Address>(offset)));
    if (!dict) return std::nullopt;
    return InstanceAttributes{*dict, 0, 0, 0};
}

std::optional<Address> ObjectReader::attribute(Address object, std::string_view name) {
    if (!plausible(object)) return std::nullopt;
    const TypeInfo* type = type_of(object);
    if (type == nullptr) return std::nullopt;
    auto where = instance_attributes(object, *type);
    if (!where) return std::nullopt;
    if (where->values != 0) {
        std::optional<Address> found;
        keys_items(
            where->keys, where->values, where->capacity,
            [&](Address k, Address v) {
                if (!key_equals(k, name)) return true;
                found = v;
                return false;
            },
            kMaxDictEntries);
        return found;
    }
    if (where->dict == 0) return std::nullopt;
    return dict_get(where->dict, name);
}

} // namespace spyglass::python
