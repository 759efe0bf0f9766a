// The one narrow interface for reading another process's memory. The live implementation uses
// process_vm_readv (falling back to /proc/PID/mem); tests use FakeMemory, built in local memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <expected>
#include <span>
#include <type_traits>

#include "spyglass/error.hpp"

namespace spyglass::process {

using Address = std::uint64_t;
using ReadStatus = std::expected<void, ReadError>;

struct ReadOp {
    Address address;
    void* destination;
    std::size_t length;
};

class RemoteMemory {
  public:
    virtual ~RemoteMemory() = default;

    // Copies exactly `length` bytes or fails; a short read is Errc::bad_address.
    virtual ReadStatus read(Address address, void* destination, std::size_t length) = 0;

    // Performs every read of `ops`, in as few system calls as the implementation can. All or
    // nothing: the error names the first op that could not be completed.
    virtual ReadStatus read_many(std::span<const ReadOp> ops);

    // Copies up to `length` bytes, stopping at the first unreadable byte. Returns the count.
    virtual std::expected<std::size_t, ReadError> read_prefix(Address address, void* destination,
                                                              std::size_t length);

    // Number of read calls issued (system calls for the live reader): for benchmarks and tests.
    [[nodiscard]] virtual std::uint64_t read_calls() const noexcept { return 0; }

    template <class T>
    std::expected<T, ReadError> read_value(Address address) {
        static_assert(std::is_trivially_copyable_v<T>);
        T value;
        if (auto status = read(address, &value, sizeof value); !status)
            return std::unexpected(status.error());
        return value;
    }
};

} // namespace spyglass::process
