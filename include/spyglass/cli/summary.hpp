// The words of the closing summary lines: counts with their nouns, pauses with their durations.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "spyglass/model/recording.hpp"
#include "spyglass/output/writer.hpp"

namespace spyglass::cli {

// "1 late tick", "2,345 late ticks" (output/writer.hpp: a window file's messages use it too).
using output::count_of;

// The achieved sampling rate: ticks per second of the recording, never more than asked. A
// recording shorter than its ticks' periods (-d 0.0001, or -r 0.05 stopped after 3 s) counts
// each tick as its whole period: one tick in 0.1 ms at 100 Hz is 100 Hz, not 10,000.
double achieved_rate(std::uint64_t ticks, std::uint64_t elapsed_ns, double rate_hz);

// A rate or a length of time for the summary: one decimal ("99.7", "2.0"), but the
// significant digits of small ones ("0.05" Hz, "0.0001" s) rather than "0.0".
std::string rate_text(double hz);
std::string seconds_text(std::uint64_t ns);

// "" when nothing was paused; else "; 12 pauses (p50 21 µs, p99 80 µs, max 0.3 ms)".
std::string pause_summary(const model::PauseSummary& pauses);

// A warning for pauses that were needed and could not be made, or "".
std::string pause_failure_warning(const model::PauseSummary& pauses);

// A warning for captures the resolver could not keep up with, or "".
std::string dropped_warning(const model::RecordingTotals& totals);

// record's closing line, without "spyglass: ": `ending` ("the target exited; " or ""), then
// "1,234 samples in 2.0 s at 99.7 Hz (asked 100), 0 late ticks, 1 sampling error (0.08%)",
// the pauses, and `wrote` ("; wrote folded to p.txt"). `samples` is what the profile kept.
std::string record_summary(const model::RecordingTotals& totals, std::uint64_t samples,
                           double asked_hz, std::string_view ending, std::string_view wrote);

} // namespace spyglass::cli
