#include "spyglass/capture/stack_capture.hpp"

#include <algorithm>

namespace spyglass::sampling {

StackCapturer::StackCapturer(python::PythonProcess& process, int retries)
    : process_(process), retries_(retries),
      header_size_(python::code_header_size(process.layout())) {}

CaptureOutcome StackCapturer::capture(python::ThreadRecord thread, Attempt how) {
    ++stats_.stacks;
    const int retries = how.retries >= 0 ? how.retries : retries_;
    stopped_read_ = how.thread_stopped;
    CaptureOutcome outcome = CaptureOutcome::torn;
    for (int attempt = 0;; ++attempt) {
        ++stats_.attempts;
        process_.walker().walk(thread, raw_);
        outcome = check(how.thread_stopped);
        if (!raced(outcome)) return outcome;
        ++stats_.torn_attempts;
        if (attempt >= retries) return outcome;
        // The thread moved on: read the pointers the walk starts from again.
        if (auto status = process_.reread_thread(thread); !status)
            return status.error().code == Errc::process_gone ? CaptureOutcome::gone : outcome;
    }
}

void StackCapturer::walk_stopped(python::ThreadRecord thread) {
    stopped_read_ = true;
    ++stats_.stacks;
    ++stats_.attempts;
    process_.walker().walk(thread, raw_);
}

CaptureOutcome StackCapturer::finish_stopped() {
    CaptureOutcome outcome = check(true);
    if (raced(outcome)) ++stats_.torn_attempts;
    return outcome;
}

CaptureOutcome StackCapturer::check(bool thread_stopped) {
    const python::Layout& layout = process_.layout();
    if (raw_.end == python::StackEnd::inconsistent) return torn(stats_.torn_changed);

    // One batched read: the walk's consistency words (not for a stopped thread: nothing of it
    // can have changed) and the header of every code object.
    batch_.clear();
    if (!thread_stopped) process_.walker().add_verification(raw_, batch_);
    unique_codes_.clear();
    code_of_frame_.resize(raw_.depth);
    for (std::uint32_t i = 0; i < raw_.depth; ++i) {
        process::Address code = raw_.frames[i].code;
        auto it = std::find(unique_codes_.begin(), unique_codes_.end(), code);
        code_of_frame_[i] = static_cast<std::uint32_t>(it - unique_codes_.begin());
        if (it == unique_codes_.end()) unique_codes_.push_back(code);
    }
    header_bytes_.resize(unique_codes_.size() * header_size_);
    ops_.clear();
    for (const python::VerifyBatch::Region& region : batch_.regions)
        ops_.push_back({region.address, batch_.bytes.data() + region.offset, region.length});
    for (std::size_t i = 0; i < unique_codes_.size(); ++i)
        ops_.push_back({unique_codes_[i], header_bytes_.data() + i * header_size_, header_size_});
    if (auto status = process_.memory().read_many(ops_); !status)
        return status.error().code == Errc::process_gone ? CaptureOutcome::gone
                                                         : torn(stats_.torn_unreadable);
    if (!thread_stopped && !process_.walker().verify(raw_, batch_))
        return torn(stats_.torn_changed);

    const process::Address code_type = process_.target().types.code;
    headers_.resize(unique_codes_.size());
    for (std::size_t i = 0; i < unique_codes_.size(); ++i) {
        headers_[i] = python::code_header(
            layout,
            std::span<const std::uint8_t>(header_bytes_.data() + i * header_size_, header_size_));
        if (code_type != 0 && headers_[i].fingerprint.type != code_type)
            return torn(stats_.torn_bad_code);
    }
    const bool interpreter_frames = layout.frame_model == python::FrameModel::interpreter_frames;
    std::int64_t outermost_shown = -1;
    for (std::uint32_t i = 0; i < raw_.depth; ++i) {
        python::RawFrame& raw = raw_.frames[i];
        const python::CodeHeader& header = headers_[code_of_frame_[i]];
        raw.code_check = header.hash;
        // 3.11+: the header holds the code's length in code units (<= 3.10: the resolver
        // checks against co_code's length).
        if (interpreter_frames && raw.offset >= header.fingerprint.size)
            return torn(stats_.torn_bad_offset);
        bool generator = raw.flags & python::RawFrame::generator;
        bool started = !interpreter_frames || generator ||
                       (raw.offset >= 0 && raw.offset >= std::max(0, header.first_traceable));
        if (started) outermost_shown = i;
    }

    // A generator or coroutine frame has a caller only while it runs: a chain that ends at one
    // was read across a yield (the generator's frame as suspended, the rest as running). A
    // stopped thread can be in such a state only up to 3.11, where a generator driven from C
    // on a thread with no Python frame has none; from 3.12 the C call pushes an entry frame
    // first, and a stopped thread whose chain still ends so was stopped while its new eval
    // loop's cframe->current_frame was not set yet (it points at a stale frame). Frames
    // outside the outermost one shown (not started yet) do not count as callers.
    const bool entry_frames_on_c_stack = layout.off.owner_cstack != python::kAbsent;
    auto suspended_at = [&](std::int64_t index) {
        if (index < 0) return false;
        const python::RawFrame& raw = raw_.frames[static_cast<std::size_t>(index)];
        return (raw.flags & python::RawFrame::generator) != 0 ||
               (headers_[code_of_frame_[static_cast<std::size_t>(index)]].flags &
                python::kGeneratorCodeFlags) != 0;
    };
    if (!raw_.truncated() && raw_.depth > 0 && (!thread_stopped || entry_frames_on_c_stack) &&
        (suspended_at(raw_.depth - 1) || suspended_at(outermost_shown)))
        return torn(stats_.torn_suspended);
    return raw_.truncated() ? CaptureOutcome::truncated : CaptureOutcome::ok;
}

} // namespace spyglass::sampling
