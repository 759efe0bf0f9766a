// Placeholder until the object reader lands: knows nothing.
#include "spyglass/python/objects.hpp"

namespace spyglass::python {

ObjectReader::ObjectReader(process::RemoteMemory& memory, const TargetInfo& target)
    : memory_(memory), target_(target) {}

std::unordered_map<std::uint64_t, std::string> ObjectReader::thread_names(Address) {
    return {};
}
std::string ObjectReader::repr(Address, std::size_t) {
    return "?";
}
std::vector<LocalVariable> ObjectReader::locals(const RawFrame&, const CodeInfo&, std::size_t) {
    return {};
}
std::optional<Address> ObjectReader::dict_get(Address, std::string_view) {
    return std::nullopt;
}
std::optional<Address> ObjectReader::module(Address, std::string_view) {
    return std::nullopt;
}
std::optional<Address> ObjectReader::attribute(Address, std::string_view) {
    return std::nullopt;
}
std::optional<std::string> ObjectReader::type_name(Address) {
    return std::nullopt;
}

} // namespace spyglass::python
