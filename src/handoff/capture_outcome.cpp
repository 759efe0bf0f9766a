#include "spyglass/handoff/capture_outcome.hpp"

namespace spyglass::sampling {

const char* capture_outcome_name(CaptureOutcome outcome) noexcept {
    switch (outcome) {
    case CaptureOutcome::ok:
        return "ok";
    case CaptureOutcome::truncated:
        return "truncated";
    case CaptureOutcome::torn:
        return "torn";
    case CaptureOutcome::gone:
        return "gone";
    }
    return "?";
}

} // namespace spyglass::sampling
