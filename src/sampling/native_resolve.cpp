#include "spyglass/sampling/native_resolve.hpp"

#include <algorithm>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

namespace spyglass::sampling {

namespace {

constexpr std::size_t kMaxCachedPcs = 1u << 18;

std::string base_name(std::string_view path) {
    std::size_t slash = path.rfind('/');
    return std::string(slash == std::string_view::npos ? path : path.substr(slash + 1));
}

} // namespace

NativeResolver::NativeResolver(const python::TargetInfo& target, model::FrameTable& frames,
                               bool all)
    : target_(target), frames_(frames), all_(all), unwinder_(target.pid),
      executable_name_(base_name(target.executable)),
      interpreter_name_(base_name(target.python_binary)) {}

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
    native::FrameRole role = native::frame_role(symbol.function, origin);
    model::Frame frame;
    model::StringTable& strings = frames_.strings();
    frame.function = strings.intern(symbol.function);
    frame.file = strings.intern(symbol.module);
    frame.module = strings.intern(symbol.path);
    frame.kind = model::FrameKind::native;
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
    MergeOutcome outcome = merge_native(native_, !unwound_.reached_copy_end, part, all_, out);
    out.insert(out.end(), python.end() - static_cast<std::ptrdiff_t>(markers), python.end());
    switch (outcome) {
    case MergeOutcome::merged:
        ++stats_.merged;
        break;
    case MergeOutcome::cut:
        ++stats_.cut;
        break;
    case MergeOutcome::mismatch:
        if (++stats_.mismatch <= 3 && spdlog::should_log(spdlog::level::debug)) {
            std::string names;
            for (const NativeFrame& frame : native_)
                names +=
                    fmt::format(" {}{}", frames_.strings().view(frames_.get(frame.id).function),
                                frame.role == native::FrameRole::eval ? "*" : "");
            spdlog::debug("thread {}: {} eval calls in the Python chain, native stack (* eval):{}",
                          tid, part.calls, names);
        }
        break;
    }
}

} // namespace spyglass::sampling
