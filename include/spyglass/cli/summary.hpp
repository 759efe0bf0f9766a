// The words of the closing summary lines: counts with their nouns, pauses with their durations.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "spyglass/model/recording.hpp"

namespace spyglass::cli {

// "1 late tick", "2,345 late ticks": `plural` defaults to `singular` + "s".
std::string count_of(std::uint64_t n, std::string_view singular, std::string_view plural = {});

// "" when nothing was paused; else "; 12 pauses (p50 21 µs, p99 80 µs, max 0.3 ms)".
std::string pause_summary(const model::PauseSummary& pauses);

// A warning for pauses that were needed and could not be made, or "".
std::string pause_failure_warning(const model::PauseSummary& pauses);

// A warning for captures the resolver could not keep up with, or "".
std::string dropped_warning(const model::RecordingTotals& totals);

} // namespace spyglass::cli
