#include "spyglass/sampling/native_merge.hpp"

#include <limits>

namespace spyglass::sampling {

using native::FrameRole;

std::uint32_t eval_calls(std::span<const python::RawFrame> raw, std::vector<std::uint32_t>& call) {
    call.resize(raw.size());
    std::uint32_t current = 0;
    for (std::size_t i = 0; i < raw.size(); ++i) {
        call[i] = current;
        if (raw[i].flags & python::RawFrame::entry) ++current;
    }
    // A chain whose outermost frame is not marked (cut short) still ran in one more call.
    return raw.empty() || (raw.back().flags & python::RawFrame::entry) ? current : current + 1;
}

MergeOutcome merge_native(std::span<const NativeFrame> native, bool native_complete,
                          const PythonPart& python, bool all, std::vector<model::FrameId>& out) {
    out.clear();
    auto python_only = [&] {
        out.assign(python.frames.begin(), python.frames.end());
        return MergeOutcome::mismatch;
    };
    std::size_t evals = 0;
    std::size_t outermost_eval = 0;
    for (std::size_t i = 0; i < native.size(); ++i)
        if (native[i].role == FrameRole::eval) {
            ++evals;
            outermost_eval = i;
        }
    // One eval call more than the chain has: the innermost one is in its prologue or epilogue,
    // its frame not linked yet or any more (the chain links and unlinks last in, first out),
    // and it ran no Python frame the chain could show.
    const bool unlinked = evals == python.calls + 1;
    if ((evals > python.calls && !unlinked) ||
        (native_complete && evals != python.calls && !unlinked))
        return python_only();

    std::size_t next_python = 0;
    std::uint32_t next_call = unlinked ? std::numeric_limits<std::uint32_t>::max() : 0;
    bool leaf = true; // still in the innermost run of frames, above any shown or eval frame
    for (std::size_t i = 0; i < native.size(); ++i) {
        const NativeFrame& frame = native[i];
        const bool outside = evals == 0 || i > outermost_eval;
        switch (frame.role) {
        case FrameRole::eval:
            while (next_python < python.frames.size() && python.call[next_python] == next_call)
                out.push_back(python.frames[next_python++]);
            ++next_call; // (the unlinked call's "max" wraps to the chain's first)
            if (all) out.push_back(frame.id);
            leaf = false;
            continue;
        case FrameRole::plumbing:
            // The interpreter's own work at the top of the stack (an allocation, a dict
            // lookup) is where the time goes; between Python frames it is only calling.
            if (all || (leaf && !outside)) out.push_back(frame.id);
            continue;
        case FrameRole::startup:
            if (all || !outside) out.push_back(frame.id);
            continue;
        case FrameRole::shown:
            out.push_back(frame.id);
            leaf = false;
            continue;
        }
    }
    if (next_python < python.frames.size()) {
        // The copy of the stack ended before its outer eval calls: their Python frames are
        // still known, only the native frames between them are not.
        out.insert(out.end(), python.frames.begin() + static_cast<std::ptrdiff_t>(next_python),
                   python.frames.end());
        return MergeOutcome::cut;
    }
    return native_complete || evals >= python.calls ? MergeOutcome::merged : MergeOutcome::cut;
}

} // namespace spyglass::sampling
