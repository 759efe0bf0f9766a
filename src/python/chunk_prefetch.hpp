// The data-stack chunks a walker has read with the next thread list (StackWalker::add_prefetch):
// for a thread walked at one pass, its chunk as it was then, read again in the same system call
// as its thread state at the next, instead of in a call of the walk's own.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "spyglass/process/memory.hpp"

namespace spyglass::python::walker_detail {

class ChunkPrefetch {
  public:
    // Only the threads walked most recently: a pass over many busy threads reads the others
    // as before, and the batch stays small.
    static constexpr std::size_t kMaxThreads = 8;

    struct Slot {
        process::Address tstate = 0;
        process::Address chunk = 0;
        std::size_t length = 0;                // bytes of the chunk read
        std::vector<process::Address> outside; // frames outside the chunks, read with it
        std::vector<std::uint8_t> chunk_bytes;
        std::vector<std::uint8_t> outside_bytes; // frame_size bytes per frame of `outside`
        bool read = false;
    };

    // The walk of `tstate` copied `length` bytes of `chunk`.
    void walked(process::Address tstate, process::Address chunk, std::size_t length) {
        for (Walked& known : walked_)
            if (known.tstate == tstate) {
                known = {tstate, chunk, length};
                return;
            }
        if (walked_.size() < kMaxThreads) walked_.push_back({tstate, chunk, length});
    }

    // A slot and its reads for each thread walked since the previous call whose state is in
    // `tstates`; `outside_of(tstate)` gives the frames its last walk met outside its chunks.
    template <class OutsideOf>
    void add(std::span<const process::Address> tstates, std::vector<process::ReadOp>& ops,
             std::size_t frame_size, OutsideOf&& outside_of) {
        count_ = 0;
        for (const Walked& walked : walked_) {
            if (std::find(tstates.begin(), tstates.end(), walked.tstate) == tstates.end()) continue;
            Slot& slot = slots_[count_++];
            slot.tstate = walked.tstate;
            slot.chunk = walked.chunk;
            slot.length = walked.length;
            slot.read = false;
            const std::vector<process::Address>& outside = outside_of(walked.tstate);
            slot.outside.assign(outside.begin(), outside.end());
            slot.chunk_bytes.resize(walked.length);
            slot.outside_bytes.resize(outside.size() * frame_size);
            ops.push_back({slot.chunk, slot.chunk_bytes.data(), slot.length});
            for (std::size_t i = 0; i < outside.size(); ++i)
                ops.push_back({outside[i], slot.outside_bytes.data() + i * frame_size, frame_size});
        }
        walked_.clear();
    }

    void done(bool read) {
        if (!read) count_ = 0;
        for (std::size_t i = 0; i < count_; ++i)
            slots_[i].read = true;
    }

    // The state of `tstate` was read again after the batch: its slot no longer matches it (the
    // other threads' still do).
    void forget(process::Address tstate) {
        for (std::size_t i = 0; i < count_; ++i)
            if (slots_[i].tstate == tstate) slots_[i].read = false;
    }

    // The read slot of `tstate` if it holds `chunk` and at least `used` bytes of it; taken: it
    // serves one walk, the first after the read.
    Slot* take(process::Address tstate, process::Address chunk, std::size_t used) {
        for (std::size_t i = 0; i < count_; ++i) {
            Slot& slot = slots_[i];
            if (!slot.read || slot.tstate != tstate) continue;
            slot.read = false;
            return slot.chunk == chunk && used <= slot.length ? &slot : nullptr;
        }
        return nullptr;
    }

  private:
    struct Walked {
        process::Address tstate;
        process::Address chunk;
        std::size_t length;
    };
    std::vector<Walked> walked_;
    std::array<Slot, kMaxThreads> slots_;
    std::size_t count_ = 0;
};

} // namespace spyglass::python::walker_detail
