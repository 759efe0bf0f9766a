// Reading Python objects of the target beyond frames and code: dicts, module and instance
// attributes, and short repr-like renderings of values. Used for thread names (threading's
// Thread.name) and `dump --locals`; never on the sampling hot path.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "spyglass/process/memory.hpp"
#include "spyglass/python/code.hpp"
#include "spyglass/python/stack_walker.hpp"
#include "spyglass/python/target.hpp"

namespace spyglass::python {

struct LocalVariable {
    std::string name;
    std::string value; // repr-like, bounded
    bool argument = false;
};

class ObjectReader {
  public:
    ObjectReader(process::RemoteMemory& memory, const TargetInfo& target);

    // threading.Thread names of the threads of `interp`, keyed by thread ident (pthread_t, as in
    // ThreadRecord::thread_id). Empty when threading was never imported or cannot be read.
    std::unordered_map<std::uint64_t, std::string> thread_names(Address interp);

    // A bounded repr-like rendering: 42, 3.5, 'text', b'..', None, True, [...] (3 items),
    // <Foo object at 0x7f...>. Never longer than about max_chars.
    std::string repr(Address object, std::size_t max_chars = 120);

    // The local variables of a frame that have a value (unbound ones are left out).
    std::vector<LocalVariable> locals(const RawFrame& frame, const CodeInfo& code,
                                      std::size_t max_value_chars = 120);

    // Lookups, also used by the tests.
    std::optional<Address> dict_get(Address dict, std::string_view key);
    std::optional<Address> module(Address interp, std::string_view name);
    std::optional<Address> attribute(Address object, std::string_view name);
    std::optional<std::string> type_name(Address object);

  private:
    process::RemoteMemory& memory_;
    const TargetInfo& target_;
};

} // namespace spyglass::python
