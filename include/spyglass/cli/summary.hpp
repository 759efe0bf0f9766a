// The words of the closing summary lines: counts with their nouns, pauses with their durations.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "spyglass/sampling/paused_read.hpp"

namespace spyglass::cli {

// "1 late tick", "2,345 late ticks": `plural` defaults to `singular` + "s".
std::string count_of(std::uint64_t n, std::string_view singular, std::string_view plural = {});

// "" when nothing was paused; else "; 12 pauses (p50 21 µs, p99 80 µs, max 0.3 ms)".
std::string pause_summary(const sampling::PauseStats& pauses);

// A warning for pauses that were needed and could not be made, or "".
std::string pause_failure_warning(const sampling::PauseStats& pauses);

} // namespace spyglass::cli
