#include "spyglass/sampling/stack_reader.hpp"

namespace spyglass::sampling {

const char* stack_outcome_name(StackOutcome outcome) noexcept {
    switch (outcome) {
    case StackOutcome::ok:
        return "ok";
    case StackOutcome::truncated:
        return "truncated";
    case StackOutcome::torn:
        return "torn";
    case StackOutcome::gone:
        return "gone";
    }
    return "?";
}

StackReader::StackReader(python::PythonProcess& process, model::FrameTable& frames,
                         StackReadOptions options)
    : capturer_(process, options.retries),
      resolver_(process.shared_memory(), process.target(), frames, options),
      torn_marker_(frames.marker("<unreadable: the stack changed while it was read>")),
      loops_marker_(frames.marker(kLoopsMarker)) {}

StackOutcome StackReader::read(python::ThreadRecord thread, std::vector<model::FrameId>& out,
                               Attempt attempt) {
    return resolve(capturer_.capture(thread, attempt), out);
}

StackOutcome StackReader::resolve(CaptureOutcome captured, std::vector<model::FrameId>& out) {
    out.clear();
    if (captured == CaptureOutcome::gone) return StackOutcome::gone;
    if (captured == CaptureOutcome::torn) {
        out.assign(1, torn_marker_);
        return StackOutcome::torn;
    }
    const python::RawStack& raw = capturer_.raw();
    const bool loops = raw.end == python::StackEnd::cycle;
    model::StackStatus status =
        resolver_.resolve(std::span(raw.frames.data(), raw.depth),
                          captured == CaptureOutcome::truncated && !loops, out);
    if (loops && status == model::StackStatus::ok) {
        out.push_back(loops_marker_);
        status = model::StackStatus::truncated;
    }
    switch (status) {
    case model::StackStatus::ok:
        return StackOutcome::ok;
    case model::StackStatus::truncated:
        return StackOutcome::truncated;
    case model::StackStatus::torn:
        return StackOutcome::torn;
    }
    return StackOutcome::torn;
}

StackReadStats StackReader::stats() const {
    StackReadStats out;
    static_cast<CaptureStats&>(out) = capturer_.stats();
    static_cast<ResolveStats&>(out) = resolver_.stats();
    return out;
}

} // namespace spyglass::sampling
