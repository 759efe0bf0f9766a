#include "spyglass/process/memory.hpp"

namespace spyglass::process {

ReadStatus RemoteMemory::read_many(std::span<const ReadOp> ops) {
    for (const ReadOp& op : ops) {
        if (auto status = read(op.address, op.destination, op.length); !status) return status;
    }
    return {};
}

std::expected<std::size_t, ReadError> RemoteMemory::read_prefix(Address address, void* destination,
                                                                std::size_t length) {
    if (auto status = read(address, destination, length); !status)
        return std::unexpected(status.error());
    return length;
}

} // namespace spyglass::process
