// --native, on the resolver: a process's native captures unwound (one native::Unwinder per
// process), their frames named and interned once per address, and merged with the Python
// frames resolved from the same capture.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "spyglass/handoff/native_feedback.hpp"
#include "spyglass/model/frame_table.hpp"
#include "spyglass/native/unwinder.hpp"
#include "spyglass/python/stack_walker.hpp"
#include "spyglass/python/target.hpp"
#include "spyglass/resolve/native_merge.hpp"

namespace spyglass::sampling {

struct NativeResolveStats {
    std::uint64_t stacks = 0;     // native captures unwound
    std::uint64_t no_context = 0; // captures without registers (the pause was refused...)
    std::uint64_t unwind_failed = 0;
    std::uint64_t merged = 0;
    std::uint64_t cut = 0;            // the copy of the stack ended before its outermost frame
    std::uint64_t mismatch = 0;       // eval calls and Python frames disagreed: Python frames only,
                                      // marked with kMismatchMarker
    std::uint64_t by_address = 0;     // merged or cut with the runs placed by stack address
    std::uint64_t module_reports = 0; // the target's modules reported again (maps changed)
};

// The outermost frame of a sample whose native frames could not be merged.
inline constexpr std::string_view kMismatchMarker = "<native frames not merged>";

class NativeResolver {
  public:
    NativeResolver(const python::TargetInfo& target, model::FrameTable& frames, bool all,
                   native::RefreshPolicy policy = {});

    // The merged stack of a capture into `out`. `python`: the resolved Python frames;
    // `kept`: the raw frame each of them came from (frames not started yet are left out).
    void resolve(pid_t tid, std::span<const std::uint8_t> context,
                 std::span<const python::RawFrame> raw, std::span<const model::FrameId> python,
                 std::span<const std::uint32_t> kept, std::vector<model::FrameId>& out);

    [[nodiscard]] const NativeResolveStats& stats() const noexcept { return stats_; }
    // What the latest resolve() unwound, innermost first, and whether the walk ended at the end
    // of the stack copy (for the samplers' NativeFeedback). Only meant after a resolve() that
    // counted an unwound stack and no failure: otherwise they are an older capture's.
    [[nodiscard]] std::span<const NativeFrame> last_native() const noexcept { return native_; }
    [[nodiscard]] const native::UnwindResult& last_unwind() const noexcept { return unwound_; }
    // The frame table was emptied: the frame ids cached per address are gone with it.
    void tables_reset() { by_pc_.clear(); }

  private:
    const NativeFrame& frame_at(std::uint64_t pc);
    // The eval loop's code in the interpreter's module: its symbol and the parts a compiler
    // split off it, which a stripped module does not name (native/function_parts.hpp).
    void find_eval_parts();
    [[nodiscard]] bool in_eval_loop(std::uint64_t pc) const noexcept;
    // Each eval call's anchor into anchors_ (PythonPart::anchors), from the raw chain and, on
    // 3.11, the _PyCFrame links in the stack copy.
    void find_anchors(std::span<const python::RawFrame> raw, std::uint32_t calls,
                      const native::ContextView& view);

    const python::TargetInfo& target_;
    model::FrameTable& frames_;
    bool all_;
    native::Unwinder unwinder_;
    std::string executable_name_, interpreter_name_;
    std::unordered_map<std::uint64_t, NativeFrame> by_pc_;
    native::UnwindResult unwound_;
    std::vector<NativeFrame> native_;
    std::vector<std::uint32_t> raw_call_, call_;
    std::vector<std::uint64_t> anchors_;
    std::vector<std::size_t> first_of_call_;
    std::uint64_t generation_ = 0; // the unwinder's, when by_pc_ was filled
    std::vector<native::CodeRange> eval_parts_;
    NativeResolveStats stats_;
};

// The summary of the capture `resolver` just resolved: `before` is its stats() before it, `raw`
// the capture's Python frames (`calls` scratch space).
UnwindSummary summarize_unwind(const NativeResolver& resolver, const NativeResolveStats& before,
                               std::span<const python::RawFrame> raw,
                               std::vector<std::uint32_t>& calls);

} // namespace spyglass::sampling
