#include "spyglass/resolve/native_merge.hpp"

namespace spyglass::sampling {

using native::FrameRole;

namespace {

constexpr std::int64_t kNoRun = -1; // an eval frame that ran no run the chain shows
constexpr std::int64_t kFail = -2;  // the two stacks disagree

// Runs by stack address: the eval frame whose part of the stack holds a run's anchor ran it.
class ByAddress {
  public:
    ByAddress(const NativePart& native, const PythonPart& python)
        : native_(native), python_(python) {}

    // Anchors for every run and a stack pointer for every frame, in order.
    [[nodiscard]] bool usable() const noexcept {
        if (python_.calls == 0 || python_.anchors.size() != python_.calls ||
            native_.sp.size() != native_.frames.size())
            return false;
        for (std::uint64_t anchor : python_.anchors)
            if (anchor == 0) return false;
        for (std::size_t i = 0; i < native_.sp.size(); ++i)
            if (native_.sp[i] == 0 || (i > 0 && native_.sp[i] < native_.sp[i - 1])) return false;
        return true;
    }

    std::int64_t operator()(std::size_t i) {
        const std::size_t n = native_.frames.size();
        const std::uint64_t low = native_.sp[i];
        const std::uint64_t high = i + 1 < n ? native_.sp[i + 1] : native_.end;
        const bool left = next_ < python_.calls;
        // An anchor below this frame was in none of the inner eval frames: it lay in a frame
        // that is not an eval call, or below the stack pointer (a dead frame).
        if (left && python_.anchors[next_] < low) return kFail;
        const bool holds = left && python_.anchors[next_] < high;
        if (native_.frames[i].role != FrameRole::eval) return holds ? kFail : kNoRun;
        const bool innermost = !seen_eval_;
        seen_eval_ = true;
        if (holds) return static_cast<std::int64_t>(next_++);
        // An eval call without a run of its own: the innermost one, in its prologue or
        // epilogue (its frame not linked yet or any more), or the last one unwound when the copy
        // ended inside it (its anchor above the copy).
        return innermost || (i + 1 == n && !native_.complete) ? kNoRun : kFail;
    }

    // After the walk: the runs left lie above the unwound part, which the copy's end cut.
    [[nodiscard]] bool rest_beyond() const noexcept {
        return next_ == python_.calls ||
               (!native_.complete && python_.anchors[next_] >= native_.end);
    }

  private:
    const NativePart& native_;
    const PythonPart& python_;
    std::uint32_t next_ = 0;
    bool seen_eval_ = false;
};

// Runs by count: the eval frames take the runs in order.
class ByCount {
  public:
    ByCount(const NativePart& native, const PythonPart& python) {
        std::size_t evals = 0;
        for (const NativeFrame& frame : native.frames)
            if (frame.role == FrameRole::eval) ++evals;
        // One eval call more than the chain has: the innermost one is in its prologue or
        // epilogue, its frame not linked yet or any more (the chain links and unlinks last in,
        // first out), and it ran no Python frame the chain could show.
        unlinked_ = evals == python.calls + 1;
        agree_ = !((evals > python.calls && !unlinked_) ||
                   (native.complete && evals != python.calls && !unlinked_));
        next_ = unlinked_ ? -1 : 0;
    }
    [[nodiscard]] bool agree() const noexcept { return agree_; }

    std::int64_t operator()(std::size_t) { return next_++; } // (called for eval frames only)

  private:
    bool unlinked_ = false, agree_ = true;
    std::int64_t next_ = 0;
};

// Walks the native frames, each eval frame giving way to the run `assign` gives it. False when
// `assign` says the stacks disagree (`out` is then garbage).
template <typename Assign>
bool emit(const NativePart& native, const PythonPart& python, bool all, Assign& assign,
          bool every_frame, std::vector<model::FrameId>& out, std::size_t& next_python) {
    out.clear();
    next_python = 0;
    std::size_t evals = 0, outermost_eval = 0;
    for (std::size_t i = 0; i < native.frames.size(); ++i)
        if (native.frames[i].role == FrameRole::eval) {
            ++evals;
            outermost_eval = i;
        }
    bool leaf = true; // still in the innermost run of frames, above any shown or eval frame
    for (std::size_t i = 0; i < native.frames.size(); ++i) {
        const NativeFrame& frame = native.frames[i];
        const bool outside = evals == 0 || i > outermost_eval;
        std::int64_t run = kNoRun;
        if (every_frame || frame.role == FrameRole::eval) run = assign(i);
        if (run == kFail) return false;
        switch (frame.role) {
        case FrameRole::eval:
            // Runs are given out in order, each once: this eval frame's are the next frames.
            if (run >= 0)
                while (next_python < python.frames.size() &&
                       python.call[next_python] <= static_cast<std::uint64_t>(run))
                    out.push_back(python.frames[next_python++]);
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
    return true;
}

} // namespace

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

MergeResult merge_native(const NativePart& native, const PythonPart& python, bool all,
                         std::vector<model::FrameId>& out) {
    MergeResult result;
    std::size_t next_python = 0;
    bool placed = false;
    if (ByAddress by_address(native, python); by_address.usable()) {
        result.method = MergeMethod::address;
        placed = emit(native, python, all, by_address, true, out, next_python) &&
                 by_address.rest_beyond();
    } else {
        ByCount by_count(native, python);
        placed = by_count.agree() && emit(native, python, all, by_count, false, out, next_python);
    }
    if (!placed) {
        out.assign(python.frames.begin(), python.frames.end());
        result.outcome = MergeOutcome::mismatch;
        return result;
    }
    if (next_python < python.frames.size()) {
        // The copy of the stack ended before its outer eval calls: their Python frames are
        // still known, only the native frames between them are not.
        out.insert(out.end(), python.frames.begin() + static_cast<std::ptrdiff_t>(next_python),
                   python.frames.end());
        result.outcome = MergeOutcome::cut;
        return result;
    }
    // Every run placed: the native frames outside the outermost eval call may still be
    // missing (a cut copy), which a profile does not need.
    std::size_t evals = 0;
    for (const NativeFrame& frame : native.frames)
        if (frame.role == FrameRole::eval) ++evals;
    result.outcome =
        native.complete || evals >= python.calls ? MergeOutcome::merged : MergeOutcome::cut;
    return result;
}

} // namespace spyglass::sampling
