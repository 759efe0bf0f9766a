// One stack out of a thread's Python frames and its native frames, taken at the same moment.
// The native stack is walked from the innermost frame out; each activation of the eval loop
// gives way to the Python frames of that one C-level call of it (a run: the raw chain's entry
// flags say where one call's frames end).
//
// Which eval frame ran which run is decided by stack address where the chain gives one (3.11+):
// each run's anchor (the C-stack entry frame on 3.12+, the _PyCFrame on 3.11) is a local of the
// eval call that runs it, so it lies in that eval frame's part of the stack, between its stack
// pointer and its caller's. Without anchors (up to 3.10: one eval call per Python frame, no
// link from the frame to the C stack) the eval frames are paired with the runs in order, by
// count. When the two stacks disagree (an anchor outside every eval frame, counts that do not
// add up), the native frames cannot be placed: the stack is the Python frames alone and the
// mismatch is counted and marked, never guessed.
#pragma once

#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "spyglass/model/frame_table.hpp"
#include "spyglass/native/frame_role.hpp"
#include "spyglass/python/stack_walker.hpp"

namespace spyglass::sampling {

struct NativeFrame {
    model::FrameId id{};
    native::FrameRole role = native::FrameRole::shown;
};

// An anchor known to lie above the copy of the stack (3.11: a _PyCFrame beyond it).
inline constexpr std::uint64_t kAnchorBeyond = std::numeric_limits<std::uint64_t>::max();

struct NativePart {
    std::span<const NativeFrame> frames; // innermost first
    // Per frame, its stack pointer: frame i's locals lie in [sp[i], sp[i + 1]). Empty (or a 0)
    // when not known: runs are then placed by count.
    std::span<const std::uint64_t> sp;
    std::uint64_t end = kAnchorBeyond; // where the outermost frame's part ends (the copy's end)
    bool complete = true;              // the unwind reached the outermost frame
};

struct PythonPart {
    std::span<const model::FrameId> frames; // resolved, innermost first
    std::span<const std::uint32_t> call;    // per frame: which eval call it ran in (0 innermost)
    std::uint32_t calls = 0;                // eval calls in the whole chain (some may show no
                                            // frame: not started yet)
    // Per call, its anchor on the C stack (0: not known; kAnchorBeyond: above the copy). Empty:
    // none known (up to 3.10).
    std::span<const std::uint64_t> anchors;
};

enum class MergeOutcome : std::uint8_t {
    merged,
    cut,      // the native stack ends early (its copy did): the outer Python frames follow it
    mismatch, // the eval calls and the Python chain disagree: Python frames only
};

enum class MergeMethod : std::uint8_t {
    address, // runs placed by their anchors' stack addresses
    count,   // runs placed in order, by counting eval frames
};

struct MergeResult {
    MergeOutcome outcome = MergeOutcome::merged;
    MergeMethod method = MergeMethod::count;
};

// `all`: keep plumbing, start-up and the eval frames themselves (--native-all).
MergeResult merge_native(const NativePart& native, const PythonPart& python, bool all,
                         std::vector<model::FrameId>& out);

// The eval call of each frame of a raw chain, from its entry flags (an entry frame is the
// outermost of its call). Returns the number of calls.
std::uint32_t eval_calls(std::span<const python::RawFrame> raw, std::vector<std::uint32_t>& call);

} // namespace spyglass::sampling
