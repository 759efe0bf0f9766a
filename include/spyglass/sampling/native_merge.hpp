// One stack out of a thread's Python frames and its native frames, taken at the same moment.
// The native stack is walked from the innermost frame out; each activation of the eval loop
// gives way to the Python frames of that one C-level call of it (the raw chain's entry flags
// say where one call's frames end). When the counts disagree (a frame pushed but its eval call
// not begun, a chain read at a different moment), the native frames cannot be placed: the
// stack is the Python frames alone and the mismatch is counted, never guessed.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "spyglass/model/frame_table.hpp"
#include "spyglass/native/frame_role.hpp"
#include "spyglass/python/stack_walker.hpp"

namespace spyglass::sampling {

struct NativeFrame {
    model::FrameId id = 0;
    native::FrameRole role = native::FrameRole::shown;
};

struct PythonPart {
    std::span<const model::FrameId> frames; // resolved, innermost first
    std::span<const std::uint32_t> call;    // per frame: which eval call it ran in (0 innermost)
    std::uint32_t calls = 0;                // eval calls in the whole chain (some may show no
                                            // frame: not started yet)
};

enum class MergeOutcome : std::uint8_t {
    merged,
    cut,      // the native stack ends early (its copy did): the outer Python frames follow it
    mismatch, // the eval calls and the Python chain disagree: Python frames only
};

// `native`: innermost first. `native_complete`: the unwind reached the outermost frame.
// `all`: keep plumbing, start-up and the eval frames themselves (--native-all).
MergeOutcome merge_native(std::span<const NativeFrame> native, bool native_complete,
                          const PythonPart& python, bool all, std::vector<model::FrameId>& out);

// The eval call of each frame of a raw chain, from its entry flags (an entry frame is the
// outermost of its call). Returns the number of calls.
std::uint32_t eval_calls(std::span<const python::RawFrame> raw, std::vector<std::uint32_t>& call);

} // namespace spyglass::sampling
