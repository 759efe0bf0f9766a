// How the capture of one thread's stack ended: what the sampling thread tells the resolver with
// each capture, and what the dump path reports.
#pragma once

#include <cstdint>

namespace spyglass::sampling {

enum class CaptureOutcome : std::uint8_t {
    ok,
    truncated, // the chain could not be read to its end (or is deeper than the frame limit)
    torn,      // the thread kept changing its stack while it was read, on every attempt
    gone,      // the process or thread exited
};

const char* capture_outcome_name(CaptureOutcome outcome) noexcept;

} // namespace spyglass::sampling
