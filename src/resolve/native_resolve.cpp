#include "spyglass/resolve/native_resolve.hpp"

#include <algorithm>
#include <limits>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "spyglass/process/checked.hpp"

namespace spyglass::sampling {

namespace {

constexpr std::size_t kMaxCachedPcs = 1u << 18;

std::string base_name(std::string_view path) {
    std::size_t slash = path.rfind('/');
    return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

} // namespace

NativeResolver::NativeResolver(const python::TargetInfo& target, model::FrameTable& frames,
                               bool all, native::RefreshPolicy policy)
    : target_(target), frames_(frames), all_(all), unwinder_(target.pid, policy),
      executable_name_(base_name(target.executable)),
      interpreter_name_(base_name(target.python_binary)) {
    // -v: from here on the unwinder knows the target's modules (test_native_modules loads a
    // library after this line to see it found later).
    if (unwinder_.ready()) {
        spdlog::info("process {}: native unwinder ready", target.pid);
        find_eval_parts();
    } else
        spdlog::info("process {}: native unwinder not ready: its modules could not be read",
                     target.pid);
}

void NativeResolver::find_eval_parts() {
    const std::string_view eval = native::eval_function(target_.version.major);
    eval_parts_ = unwinder_.function_parts(interpreter_name_, eval);
    if (eval_parts_.empty() && executable_name_ != interpreter_name_)
        eval_parts_ = unwinder_.function_parts(executable_name_, eval);
    std::sort(eval_parts_.begin(), eval_parts_.end(),
              [](const auto& a, const auto& b) { return a.start < b.start; });
    std::string ranges;
    for (const native::CodeRange& part : eval_parts_)
        ranges += fmt::format(" [{:#x}, {:#x})", part.start, part.end);
    spdlog::debug("process {}: {} is at{}", target_.pid, eval,
                  ranges.empty() ? " no address known (a frame is one by its name alone)" : ranges);
}

bool NativeResolver::in_eval_loop(std::uint64_t pc) const noexcept {
    auto it = std::upper_bound(eval_parts_.begin(), eval_parts_.end(), pc,
                               [](std::uint64_t at, const auto& part) { return at < part.start; });
    return it != eval_parts_.begin() && pc < std::prev(it)->end;
}

const NativeFrame& NativeResolver::frame_at(std::uint64_t pc) {
    auto it = by_pc_.find(pc);
    if (it != by_pc_.end()) return it->second;
    if (by_pc_.size() >= kMaxCachedPcs) by_pc_.clear(); // the interned frames stay
    const native::NativeSymbol& symbol = unwinder_.symbol(pc);
    native::FrameOrigin origin;
    origin.known = symbol.known;
    origin.in_interpreter = !symbol.module.empty() && (symbol.module == executable_name_ ||
                                                       symbol.module == interpreter_name_);
    origin.in_libc = symbol.module.starts_with("libc.so") || symbol.module.starts_with("libc-");
    origin.python_major = target_.version.major;
    origin.in_eval_loop = origin.in_interpreter && in_eval_loop(pc);
    native::FrameRole role = native::frame_role(symbol.function, origin);
    model::Frame frame;
    model::StringTable& strings = frames_.strings();
    // A split-off part of the eval loop that the stripped module does not name is named
    // after its function.
    frame.function = strings.intern(origin.in_eval_loop && !symbol.known
                                        ? native::eval_function(target_.version.major)
                                        : std::string_view(symbol.function));
    frame.file = strings.intern(symbol.module);
    frame.module = strings.intern(symbol.path);
    frame.kind = model::FrameKind::native;
    frame.address = symbol.address;
    // Only for the frames that are always shown (and every frame with --native-all): the
    // first lookup in each compilation unit parses its line program (about 0.2 ms), and a
    // thread running Python code stops at a new pc inside the interpreter's machinery in
    // almost every sample. Those leaves are named without a line.
    if (role == native::FrameRole::shown || all_) {
        const native::SourceLine& source = unwinder_.source_line(pc);
        if (source.line > 0) {
            frame.file = strings.intern(source.file);
            frame.line = source.line;
        }
    }
    if (!symbol.build_id.empty()) frames_.set_build_id(frame.module, symbol.build_id);
    NativeFrame native{frames_.intern(frame), role};
    return by_pc_.emplace(pc, native).first->second;
}

void NativeResolver::find_anchors(std::span<const python::RawFrame> raw, std::uint32_t calls,
                                  const native::ContextView& view) {
    constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();
    anchors_.assign(calls, 0);
    first_of_call_.assign(calls, kNone);
    for (std::size_t i = 0; i < raw.size() && i < raw_call_.size(); ++i) {
        const std::uint32_t call = raw_call_[i];
        if (call >= calls) continue;
        if (first_of_call_[call] == kNone) first_of_call_[call] = i;
        if ((raw[i].flags & python::RawFrame::entry) && raw[i].anchor != 0)
            anchors_[call] = raw[i].anchor;
    }
    // 3.11: the walk knows the innermost run's _PyCFrame only. Each one's `previous` is the
    // next outer run's (all of them locals of their eval calls, so in the copy of the stack up
    // to where it ends), and its `current_frame` is its run's innermost frame: checked, so a
    // chain that is not this stack's is never used.
    const python::LayoutOffsets& o = target_.layout.off;
    if (o.owner_cstack != python::kAbsent || o.cframe_previous == python::kAbsent ||
        o.cframe_current_frame == python::kAbsent || calls == 0 || anchors_[0] == 0)
        return;
    const std::uint64_t base = view.header.regs[native::rsp];
    std::uint64_t cframe = anchors_[0];
    for (std::uint32_t call = 0; call < calls; ++call) {
        auto unknown_from = [&](std::uint64_t value) {
            std::fill(anchors_.begin() + call, anchors_.end(), value);
        };
        if (cframe < base) return unknown_from(0); // below the stack pointer: not a live frame
        const std::uint64_t at = cframe - base;
        if (at >= view.stack.size()) return unknown_from(kAnchorBeyond);
        auto current =
            process::checked_load<std::uint64_t>(view.stack, at + o.cframe_current_frame);
        auto previous = process::checked_load<std::uint64_t>(view.stack, at + o.cframe_previous);
        if (!current || !previous) return unknown_from(kAnchorBeyond); // across the copy's end
        if (first_of_call_[call] == kNone || *current != raw[first_of_call_[call]].frame)
            return unknown_from(0);
        anchors_[call] = cframe;
        cframe = *previous;
    }
}

void NativeResolver::resolve(pid_t tid, std::span<const std::uint8_t> context,
                             std::span<const python::RawFrame> raw,
                             std::span<const model::FrameId> python,
                             std::span<const std::uint32_t> kept,
                             std::vector<model::FrameId>& out) {
    native::ContextView view;
    if (!native::ContextView::parse(context, view) || !view.has(native::rip)) {
        ++stats_.no_context;
        out.assign(python.begin(), python.end());
        return;
    }
    ++stats_.stacks;
    if (!unwinder_.unwind(tid, view, unwound_)) {
        ++stats_.unwind_failed;
        out.assign(python.begin(), python.end());
        return;
    }
    // The modules were reported again: an address may be another module's code now.
    if (unwinder_.generation() != generation_) {
        by_pc_.clear();
        generation_ = unwinder_.generation();
        find_eval_parts();
        stats_.module_reports = generation_;
    }
    native_.clear();
    for (std::uint64_t pc : unwound_.pcs)
        native_.push_back(frame_at(pc));

    // Markers after the Python frames (a cut chain, the frame limit) stay outermost.
    const std::size_t markers = python.size() - std::min(python.size(), kept.size());
    PythonPart part;
    part.calls = eval_calls(raw, raw_call_);
    call_.resize(kept.size());
    for (std::size_t i = 0; i < kept.size(); ++i)
        call_[i] = kept[i] < raw_call_.size() ? raw_call_[kept[i]] : part.calls;
    part.frames = python.first(python.size() - markers);
    part.call = call_;
    find_anchors(raw, part.calls, view);
    part.anchors = anchors_;
    NativePart stack;
    stack.frames = native_;
    stack.sp = unwound_.sps;
    stack.complete = !unwound_.reached_copy_end;
    stack.end = stack.complete
                    ? kAnchorBeyond
                    : process::checked_add(view.header.regs[native::rsp], view.stack.size())
                          .value_or(kAnchorBeyond);
    const MergeResult result = merge_native(stack, part, all_, out);
    out.insert(out.end(), python.end() - static_cast<std::ptrdiff_t>(markers), python.end());
    if (result.outcome != MergeOutcome::mismatch && result.method == MergeMethod::address)
        ++stats_.by_address;
    switch (result.outcome) {
    case MergeOutcome::merged:
        ++stats_.merged;
        break;
    case MergeOutcome::cut:
        ++stats_.cut;
        break;
    case MergeOutcome::mismatch:
        // Kept as the Python stack, and said so: the outermost frame marks it.
        out.push_back(frames_.marker(kMismatchMarker));
        if (++stats_.mismatch <= 300 && spdlog::should_log(spdlog::level::debug)) {
            std::string names;
            for (std::size_t i = 0; i < native_.size(); ++i)
                names += fmt::format(" {}{}@{:x}",
                                     frames_.strings().view(frames_.get(native_[i].id).function),
                                     native_[i].role == native::FrameRole::eval ? "*" : "",
                                     i < unwound_.sps.size() ? unwound_.sps[i] : 0);
            std::string anchors;
            for (std::uint64_t anchor : anchors_)
                anchors += fmt::format(" {:x}", anchor);
            spdlog::debug("thread {}: {} eval calls in the Python chain (anchors:{}; by {}), "
                          "native stack (* eval, @ stack pointer):{}{}",
                          tid, part.calls, anchors,
                          result.method == MergeMethod::address ? "address" : "count", names,
                          stack.complete ? "" : " (cut)");
        }
        break;
    }
}

UnwindSummary summarize_unwind(const NativeResolver& resolver, const NativeResolveStats& before,
                               std::span<const python::RawFrame> raw,
                               std::vector<std::uint32_t>& calls) {
    UnwindSummary summary;
    const NativeResolveStats& after = resolver.stats();
    summary.unwound = after.stacks > before.stacks;
    summary.failed = after.unwind_failed > before.unwind_failed;
    if (!summary.unwound || summary.failed) return summary;
    summary.reached_copy_end = resolver.last_unwind().reached_copy_end;
    for (const NativeFrame& frame : resolver.last_native())
        summary.native_evals += frame.role == native::FrameRole::eval;
    summary.python_calls = eval_calls(raw, calls);
    return summary;
}

} // namespace spyglass::sampling
