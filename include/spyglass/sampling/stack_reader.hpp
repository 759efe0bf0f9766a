// Capture and resolution of one stack in one call, on one thread: for `dump` (which reads each
// thread once, and its locals while it is still stopped) and for tests. The sampling session
// splits the two across threads instead (capture.hpp, resolver.hpp).
#pragma once

#include <vector>

#include "spyglass/capture/stack_capture.hpp"
#include "spyglass/model/frame_table.hpp"
#include "spyglass/python/interpreter.hpp"
#include "spyglass/resolve/stack_resolve.hpp"

namespace spyglass::sampling {

enum class StackOutcome : std::uint8_t {
    ok,
    truncated, // the chain could not be read to its end: frames so far + a <truncated> marker
    torn,      // the thread kept changing its stack while it was read, on every attempt
    gone,      // the process or thread exited
};

const char* stack_outcome_name(StackOutcome outcome) noexcept;

struct StackReadStats : CaptureStats, ResolveStats {};

class StackReader {
  public:
    StackReader(python::PythonProcess& process, model::FrameTable& frames,
                StackReadOptions options);

    using Attempt = StackCapturer::Attempt;
    // Reads the stack of `thread` into `out` (innermost first).
    StackOutcome read(python::ThreadRecord thread, std::vector<model::FrameId>& out,
                      Attempt attempt);
    StackOutcome read(python::ThreadRecord thread, std::vector<model::FrameId>& out) {
        return read(thread, out, Attempt{});
    }
    // Resolves what capturer() captured last (after a capture made through capture_stack).
    StackOutcome resolve(CaptureOutcome captured, std::vector<model::FrameId>& out);

    [[nodiscard]] StackCapturer& capturer() noexcept { return capturer_; }
    // The raw frames of the last read, and which of them `out` received: for --locals.
    [[nodiscard]] const python::RawStack& last_raw() const noexcept { return capturer_.raw(); }
    [[nodiscard]] const std::vector<std::uint32_t>& kept_raw_indexes() const noexcept {
        return resolver_.kept();
    }
    [[nodiscard]] const python::CodeInfo* code(process::Address code) const {
        return resolver_.code(code);
    }
    [[nodiscard]] StackReadStats stats() const;

  private:
    StackCapturer capturer_;
    StackResolver resolver_;
    model::FrameId torn_marker_, loops_marker_;
};

} // namespace spyglass::sampling
