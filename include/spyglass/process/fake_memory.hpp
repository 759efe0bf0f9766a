// An address space in local memory, for unit tests and fuzz targets: regions of bytes at chosen
// addresses, with typed writers so tests can lay out real CPython structures.
#pragma once

#include <cstring>
#include <functional>
#include <map>
#include <string_view>
#include <vector>

#include "spyglass/process/memory.hpp"

namespace spyglass::process {

class FakeMemory final : public RemoteMemory {
  public:
    // Maps `size` zeroed bytes at `address`. Regions must not overlap.
    void map(Address address, std::size_t size);
    void unmap(Address address);

    // Writes into mapped memory; aborts the test binary on an unmapped write (a test bug).
    void write(Address address, const void* source, std::size_t length);
    template <class T>
    void put(Address address, const T& value) {
        write(address, &value, sizeof value);
    }
    void put_bytes(Address address, std::string_view bytes) {
        write(address, bytes.data(), bytes.size());
    }

    ReadStatus read(Address address, void* destination, std::size_t length) override;
    std::expected<std::size_t, ReadError> read_prefix(Address address, void* destination,
                                                      std::size_t length) override;
    [[nodiscard]] std::uint64_t read_calls() const noexcept override { return calls_; }

    // Called before every read with the number of reads so far: lets a test change the
    // "target" while a walk is in progress.
    void on_read(std::function<void(std::uint64_t)> hook) { hook_ = std::move(hook); }

  private:
    std::vector<std::byte>* region_for(Address address, Address& base);
    std::map<Address, std::vector<std::byte>> regions_;
    std::uint64_t calls_ = 0;
    std::function<void(std::uint64_t)> hook_;
};

} // namespace spyglass::process
