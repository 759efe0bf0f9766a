// Reading Python objects of the target beyond frames and code: dicts, module and instance
// attributes, and short repr-like renderings of values. Used for thread names (threading's
// Thread.name) and `dump --locals`; never on the sampling hot path.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "spyglass/process/memory.hpp"
#include "spyglass/python/code.hpp"
#include "spyglass/python/stack_walker.hpp"
#include "spyglass/python/strings.hpp"
#include "spyglass/python/target.hpp"

namespace spyglass::python {

struct LocalVariable {
    std::string name;
    std::string value; // repr-like, bounded
    bool argument = false;
};

// Bounds on what one lookup or rendering may read, so that a corrupt or racing target cannot
// make the reader loop or allocate without limit.
inline constexpr std::size_t kMaxDictEntries = 1u << 20;
inline constexpr std::size_t kMaxLocals = 1u << 16;
inline constexpr std::size_t kMaxThreadNames = 4096;

class ObjectReader {
  public:
    ObjectReader(process::RemoteMemory& memory, const TargetInfo& target);

    // threading.Thread names of the threads of `interp`, keyed by thread ident (pthread_t, as in
    // ThreadRecord::thread_id). Empty when threading was never imported or cannot be read.
    std::unordered_map<std::uint64_t, std::string> thread_names(Address interp);

    // A bounded repr-like rendering: 42, 3.5, 'text', b'..', None, True, [1, 2] or
    // [1, 2, ...] (30 items), <Foo object at 0x7f...>. Never longer than max_chars.
    std::string repr(Address object, std::size_t max_chars = 120);

    // The local variables of a frame that have a value (unbound ones are left out).
    std::vector<LocalVariable> locals(const RawFrame& frame, const CodeInfo& code,
                                      std::size_t max_value_chars = 120);

    // Lookups, also used by the tests.
    std::optional<Address> dict_get(Address dict, std::string_view key);
    std::optional<Address> module(Address interp, std::string_view name);
    std::optional<Address> attribute(Address object, std::string_view name);
    std::optional<std::string> type_name(Address object);

    // Calls visit(key, value) for each item of the dict, in table order, until it returns false
    // or max_items were visited. False when `dict` is not a readable dict.
    using ItemVisitor = std::function<bool(Address key, Address value)>;
    bool dict_items(Address dict, const ItemVisitor& visit,
                    std::size_t max_items = kMaxDictEntries);

    // The value of an int (3.x int, 2.7 int or long) that fits in 64 bits.
    std::optional<std::int64_t> int_value(Address object);
    // The text of a str (2.7: str or unicode) as UTF-8, at most max_chars characters.
    std::optional<std::string> str_value(Address object, std::size_t max_chars = kMaxNameChars);

  private:
    enum class Kind : std::uint8_t {
        other,
        none,
        boolean,
        py2_int,
        long_, // 3.x int, 2.7 long
        float_,
        unicode, // 3.x str, 2.7 unicode
        py2_str,
        bytes,
        tuple,
        list,
        dict,
        set,
        frozenset,
        module,
        function,
        type,
        cell,
        exception, // BaseException and subclasses
    };
    struct TypeInfo {
        Address address = 0;
        std::string name;
        std::uint64_t flags = 0;
        std::int64_t basicsize = 0, itemsize = 0, dictoffset = 0;
        Address cached_keys = 0; // heap types (3.6+): ht_cached_keys
        Kind kind = Kind::other; // the builtin this type is or (when !exact) derives from
        bool exact = false;
    };

    const TypeInfo* type_at(Address type);
    const TypeInfo* type_of(Address object);
    // The value of `object` as the `type` already read from it: reading ob_type a second time
    // races with the target freeing the object (2.7's int free list overwrites ob_type).
    std::optional<std::int64_t> int_value_as(Address object, const TypeInfo& type);
    std::optional<std::string> str_value_as(Address object, const TypeInfo& type,
                                            std::size_t max_chars);
    void classify(TypeInfo& type) const; // sets kind and exact

    // The items of a PyDictKeysObject, with values from `values` (split tables and instance
    // values, 3.6+) when it is non-zero; at most `capacity` values are read from it.
    bool keys_items(Address keys, Address values, std::size_t capacity, const ItemVisitor& visit,
                    std::size_t max_items);
    bool py2_dict_items(Address dict, const ItemVisitor& visit, std::size_t max_items);
    bool set_items(Address set, const ItemVisitor& visit, std::size_t max_items);
    bool key_equals(Address key, std::string_view text);

    // The instance dict or the instance values (3.11+) of `object`.
    struct InstanceAttributes {
        Address dict = 0;
        Address keys = 0, values = 0; // values: address of the first value slot
        std::size_t capacity = 0;
    };
    std::optional<InstanceAttributes> instance_attributes(Address object, const TypeInfo& type);

    std::vector<std::string> tuple_strings(Address tuple, std::size_t max_items);

    // Rendering appends to `out` and keeps it (roughly) within `limit` bytes.
    void render(Address object, std::string& out, std::size_t limit, int depth);
    bool render_value(Address object, const TypeInfo& type, std::string& out, std::size_t limit,
                      int depth);
    bool render_text(Address object, const TypeInfo& type, std::string& out, std::size_t limit);
    bool render_items(Address object, const TypeInfo& type, std::string& out, std::size_t limit,
                      int depth);

    process::RemoteMemory& memory_;
    const TargetInfo& target_;
    std::unordered_map<Address, std::optional<TypeInfo>> types_;
};

} // namespace spyglass::python
