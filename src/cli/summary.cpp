#include "spyglass/cli/summary.hpp"

#include <fmt/format.h>

#include "spyglass/output/writer.hpp"

namespace spyglass::cli {

namespace {

std::string duration(std::uint64_t ns) {
    if (ns < 1'000'000) return fmt::format("{} µs", (ns + 500) / 1000);
    return fmt::format("{:.1f} ms", static_cast<double>(ns) / 1e6);
}

} // namespace

std::string count_of(std::uint64_t n, std::string_view singular, std::string_view plural) {
    std::string noun = n == 1
                           ? std::string(singular)
                           : (plural.empty() ? std::string(singular) + "s" : std::string(plural));
    return output::with_commas(n) + " " + noun;
}

std::string pause_summary(const model::PauseSummary& pauses) {
    if (pauses.pauses == 0) return "";
    return fmt::format("; {} (p50 {}, p99 {}, max {})", count_of(pauses.pauses, "pause"),
                       duration(pauses.p50_ns), duration(pauses.p99_ns), duration(pauses.max_ns));
}

std::string dropped_warning(const model::RecordingTotals& totals) {
    if (totals.dropped == 0) return "";
    return fmt::format("{} could not be resolved in time (the resolver fell behind) and are "
                       "missing from the profile",
                       count_of(totals.dropped, "sample"));
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
