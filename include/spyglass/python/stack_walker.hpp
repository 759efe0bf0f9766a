// Walking one thread's chain of Python frames into raw (code object, instruction offset) pairs.
// The walker is chosen once per target (by frame model) and never branches on the version per
// frame. It only collects addresses; names and lines are resolved later, through caches.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <vector>

#include "spyglass/process/memory.hpp"
#include "spyglass/python/target.hpp"

namespace spyglass::python {

inline constexpr std::uint32_t kMaxFrames = 4096;

struct RawFrame {
    enum Flags : std::uint8_t {
        entry = 1,     // the outermost frame of one C-level call of the eval loop
        generator = 2, // lives in a generator or coroutine object
    };
    Address code = 0;
    Address frame = 0;       // the frame's own address (for --locals and consistency checks)
    std::int32_t offset = 0; // bytes (up to 3.10) or code units (3.11+); -1 = not started
    std::uint8_t flags = 0;
};

enum class StackEnd : std::uint8_t {
    complete,    // reached the end of the chain
    read_failed, // a read failed mid-chain (the frames before it are good)
    cycle,       // a frame pointed back into the chain
    too_deep,    // more than kMaxFrames frames
    corrupt,     // a frame failed validation (wrong type, outside its stack chunk)
};

const char* stack_end_name(StackEnd end) noexcept;

struct ThreadRecord;

struct RawStack {
    std::array<RawFrame, kMaxFrames> frames; // innermost first
    std::uint32_t depth = 0;
    StackEnd end = StackEnd::complete;
    ReadError error{Errc::bad_address, 0};
    // Where the chain's head was read from and what it was, to see after the walk whether the
    // thread moved on meanwhile (the sample would then mix two states).
    Address head_slot = 0;
    Address head = 0;
    Address cframe_slot = 0; // 3.11/3.12: tstate->cframe, read before head_slot
    Address cframe = 0;

    void clear() noexcept {
        depth = 0;
        end = StackEnd::complete;
        head_slot = head = cframe_slot = cframe = 0;
    }
    [[nodiscard]] bool truncated() const noexcept { return end != StackEnd::complete; }
};

// Reads done after a walk, in one batch with the resolver's own validation reads.
struct VerifyBatch {
    struct Check {
        Address address;
        std::uint64_t expected;
    };
    std::vector<Check> checks;
    std::vector<std::uint64_t> words; // what the batch read at each check's address
    void clear() noexcept {
        checks.clear();
        words.clear();
    }
};

class StackWalker {
  public:
    virtual ~StackWalker() = default;
    // Walks the thread's frame chain into `out` (cleared first). Never fails as a whole: a read
    // error mid-chain ends the stack with StackEnd::read_failed and keeps the frames so far.
    virtual void walk(const ThreadRecord& thread, RawStack& out) = 0;
    // Adds the reads that tell whether `stack` is still the thread's stack (words to compare).
    virtual void add_verification(const RawStack& stack, VerifyBatch& batch) const = 0;
};

// The walker for the target's frame model.
std::unique_ptr<StackWalker> make_stack_walker(process::RemoteMemory& memory,
                                               const TargetInfo& target);

// After the words were read: do they match what the walk saw?
bool verification_holds(const VerifyBatch& batch) noexcept;

} // namespace spyglass::python
