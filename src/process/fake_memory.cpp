#include "spyglass/process/fake_memory.hpp"

#include <cstdio>
#include <cstdlib>

namespace spyglass::process {

void FakeMemory::map(Address address, std::size_t size) {
    regions_[address] = std::vector<std::byte>(size);
}

void FakeMemory::unmap(Address address) {
    regions_.erase(address);
}

std::vector<std::byte>* FakeMemory::region_for(Address address, Address& base) {
    auto it = regions_.upper_bound(address);
    if (it == regions_.begin()) return nullptr;
    --it;
    if (address >= it->first + it->second.size()) return nullptr;
    base = it->first;
    return &it->second;
}

void FakeMemory::write(Address address, const void* source, std::size_t length) {
    Address base = 0;
    auto* region = region_for(address, base);
    if (region == nullptr || address + length > base + region->size()) {
        std::fprintf(stderr, "FakeMemory: write of %zu bytes at 0x%llx is outside any region\n",
                     length, static_cast<unsigned long long>(address));
        std::abort();
    }
    std::memcpy(region->data() + (address - base), source, length);
}

ReadStatus FakeMemory::read(Address address, void* destination, std::size_t length) {
    auto got = read_prefix(address, destination, length);
    if (!got) return std::unexpected(got.error());
    if (*got != length) return std::unexpected(ReadError{Errc::bad_address, address + *got});
    return {};
}

std::expected<std::size_t, ReadError> FakeMemory::read_prefix(Address address, void* destination,
                                                              std::size_t length) {
    if (hook_) hook_(calls_);
    ++calls_;
    std::size_t done = 0;
    auto* out = static_cast<std::byte*>(destination);
    while (done < length) {
        Address base = 0;
        auto* region = region_for(address + done, base);
        if (region == nullptr) break;
        std::size_t offset = address + done - base;
        std::size_t n = std::min(length - done, region->size() - offset);
        std::memcpy(out + done, region->data() + offset, n);
        done += n;
    }
    return done;
}

} // namespace spyglass::process
