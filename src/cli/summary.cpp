#include "spyglass/cli/summary.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "spyglass/output/writer.hpp"

namespace spyglass::cli {

namespace {

std::string duration(std::uint64_t ns) {
    if (ns < 1'000'000) return fmt::format("{} µs", (ns + 500) / 1000);
    return fmt::format("{:.1f} ms", static_cast<double>(ns) / 1e6);
}

} // namespace

double achieved_rate(std::uint64_t ticks, std::uint64_t elapsed_ns, double rate_hz) {
    if (ticks == 0 || !(rate_hz > 0)) return 0;
    double seconds = static_cast<double>(elapsed_ns) / 1e9;
    double covered = static_cast<double>(ticks) / rate_hz; // the ticks' whole periods
    return static_cast<double>(ticks) / std::max(seconds, covered);
}

std::string rate_text(double hz) {
    if (!(hz > 0) || hz >= 0.95) return fmt::format("{:.1f}", hz);
    // Two significant digits, in fixed notation, without trailing zeros: 0.05, 0.0001.
    int decimals = std::min(9, static_cast<int>(std::floor(-std::log10(hz))) + 2);
    std::string text = fmt::format("{:.{}f}", hz, decimals);
    while (text.back() == '0')
        text.pop_back();
    if (text.back() == '.') text.pop_back();
    return text;
}

std::string seconds_text(std::uint64_t ns) {
    return rate_text(static_cast<double>(ns) / 1e9);
}

std::string pause_summary(const model::PauseSummary& pauses) {
    if (pauses.pauses == 0) return "";
    return fmt::format("; {} (p50 {}, p99 {}, max {})", count_of(pauses.pauses, "pause"),
                       duration(pauses.p50_ns), duration(pauses.p99_ns), duration(pauses.max_ns));
}

std::string dropped_warning(const model::RecordingTotals& totals) {
    if (totals.dropped == 0) return "";
    return fmt::format("{} could not be resolved in time (the resolver fell behind) and {} "
                       "missing from the profile",
                       count_of(totals.dropped, "sample"), totals.dropped == 1 ? "is" : "are");
}

std::string record_summary(const model::RecordingTotals& totals, std::uint64_t samples,
                           double asked_hz, std::string_view ending, std::string_view wrote) {
    double achieved = achieved_rate(totals.ticks, totals.elapsed_ns, asked_hz);
    double error_share = totals.samples > 0 ? 100.0 * static_cast<double>(totals.errors) /
                                                  static_cast<double>(totals.samples)
                                            : 0;
    std::string left_out;
    if (totals.threads_without_descriptors != 0)
        left_out = fmt::format(", {} not sampled (out of file descriptors)",
                               count_of(totals.threads_without_descriptors, "thread"));
    return fmt::format("{}{} in {} s at {} Hz (asked {:g}), {}, {} ({:.2f}%){}{}{}", ending,
                       count_of(samples, "sample"), seconds_text(totals.elapsed_ns),
                       rate_text(achieved), asked_hz, count_of(totals.late_ticks, "late tick"),
                       count_of(totals.errors, "sampling error"), error_share, left_out,
                       pause_summary(totals.pauses), wrote);
}

std::string pause_failure_warning(const model::PauseSummary& pauses) {
    if (pauses.failed == 0) return "";
    std::string why = !pauses.refusal.empty() ? pauses.refusal
                      : pauses.timed_out > 0  ? "threads did not stop in time"
                                              : "the threads could not be paused";
    return fmt::format("{} could not pause a thread whose stack changed faster than it could be "
                       "read ({}); those samples are counted as errors",
                       count_of(pauses.failed, "time"), why);
}

} // namespace spyglass::cli
