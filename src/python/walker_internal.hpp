// What the two frame walkers of stack_walker.cpp share (object_frame_walker.cpp for 2.7-3.10,
// interpreter_frame_walker.cpp for 3.11+). Internal to src/python.
#pragma once

#include <array>
#include <cstdint>
#include <memory>

#include "spyglass/process/checked.hpp"
#include "spyglass/process/remote_field.hpp"
#include "spyglass/python/interpreter.hpp"
#include "spyglass/python/stack_walker.hpp"
#include "spyglass/python/struct_view.hpp"

namespace spyglass::python::walker_detail {

using process::checked_add;
using process::checked_sub;
using process::field_address;
using process::range_within;

// What the walkers remember of each thread's previous walk (the addresses of its frames, for
// one batched read of them the next time) is forgotten, all of it, once it holds more thread
// states or more addresses than these: at most 8 MiB of addresses however many threads come
// and go.
constexpr std::size_t kMaxRememberedThreads = 4 * kMaxThreads;
constexpr std::size_t kMaxRememberedFrames = std::size_t{1} << 20;

// A set of frame addresses seen in this walk. Generation stamps make clearing free.
class VisitedSet {
  public:
    void reset() noexcept {
        if (++generation_ == 0) {
            slots_.fill({});
            generation_ = 1;
        }
    }
    // True if `address` was already inserted in this walk.
    bool insert(Address address) noexcept {
        std::size_t i = (address * 0x9E3779B97F4A7C15ull) >> (64 - kBits);
        for (;;) {
            Slot& slot = slots_[i];
            if (slot.generation != generation_) {
                slot = {address, generation_};
                return false;
            }
            if (slot.address == address) return true;
            i = (i + 1) & (kSize - 1);
        }
    }

  private:
    static constexpr unsigned kBits = 13; // 8192 slots for at most 4096 frames
    static constexpr std::size_t kSize = std::size_t{1} << kBits;
    struct Slot {
        Address address = 0;
        std::uint32_t generation = 0;
    };
    std::array<Slot, kSize> slots_{};
    std::uint32_t generation_ = 0;
};

// Region `index` of a verification batch, as the bytes of a struct from its offset `first` on.
inline StructView region_view(const VerifyBatch& batch, std::size_t index, std::uint64_t first) {
    const VerifyBatch::Region& region = batch.regions[index];
    return StructView(batch.bytes.data() + region.offset, region.length, first);
}

// The struct at `address`, which region `index` of a verification batch holds from there on
// (nothing when the region starts after it or ends before it).
inline StructView region_view_at(const VerifyBatch& batch, std::size_t index, Address address) {
    const VerifyBatch::Region& region = batch.regions[index];
    if (address < region.address || address - region.address > region.length) return {};
    auto into = static_cast<std::size_t>(address - region.address);
    return StructView(batch.bytes.data() + region.offset + into, region.length - into);
}

inline void fail(RawStack& out, StackEnd end, ReadError error) {
    out.end = end;
    out.error = error;
}

std::unique_ptr<StackWalker> make_object_frame_walker(process::RemoteMemory& memory,
                                                      const TargetInfo& target);
std::unique_ptr<StackWalker> make_interpreter_frame_walker(process::RemoteMemory& memory,
                                                           const TargetInfo& target);

} // namespace spyglass::python::walker_detail
