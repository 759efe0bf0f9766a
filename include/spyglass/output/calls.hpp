// The calls table (-f calls, report --calls, top --calls): each function's calls, their
// durations (p50/p90/p99/max), total and self time, as text, JSON or an SVG of the slowest
// functions' duration distributions (docs/output-formats.md, "Calls"). The text pieces are
// shared by the writer and `spyglass top`.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "spyglass/model/calls.hpp"
#include "spyglass/model/profile.hpp"

namespace spyglass::output {

// -o's extension picks how -f calls writes: .json JSON, .svg or .html an SVG, else text.
model::CallsStyle calls_style_for_path(std::string_view path) noexcept;

// One function's calls with the names it is shown by (as the target spells them: not escaped).
struct CallRow {
    model::CallStats stats;
    std::string function;
    std::string file;   // the full path
    std::string thread; // with per-thread tables: "TID NAME" ("TID" without a name); else empty
};

// What a calls table shows: every function's row, sorted by total time (descending), and the
// counts its footer speaks of (over every function, shown or not).
struct CallsView {
    bool known = false;
    bool per_thread = false;
    std::uint64_t samples_without_identity = 0;
    std::uint64_t open_calls = 0;
    std::uint64_t back_to_back = 0;
    std::vector<CallRow> rows;
};

// The rows of `table`, named from `frames`' strings and `threads` (Profile::threads), sorted.
CallsView calls_view(const model::CallTable& table, const model::StringTable& strings,
                     const std::vector<model::ThreadInfo>& threads);
// Sorts by total time, descending (then self, then name, file, line, thread), and sums the
// footer's counts from the rows.
void finish_calls_view(CallsView& view);

// A duration as the table shows it: 1 decimal, in µs, ms or s ("20.1ms", "412.0µs", "13.8s").
// (top's full-screen view, ASCII only, shows "us" and "+-".)
std::string call_duration(std::uint64_t ns);

struct CallsTextOptions {
    bool full_filenames = false;
    bool line_numbers = true;
    std::size_t width = 0; // the function column is fitted to it (0: not shortened)
};

// The header line: the sampling period, that durations are ± half a period at each end, and in
// --mode cpu that they are on-CPU time.
std::string calls_header(std::uint64_t period_ns, model::SampleMode mode);
// The column titles, then one line per row (every text from the target escaped for a
// terminal): calls, short, p50, p90, p99, max, total, self, cpu, [thread,] function.
std::vector<std::string> calls_lines(std::span<const CallRow> rows, bool per_thread,
                                     const CallsTextOptions& options);
// The lines under the table, each only when it applies: calls running at the start or end,
// back-to-back calls, samples that could not say which calls were new.
std::vector<std::string> calls_footer(const CallsView& view);
// The one line a table of a recording without call identity is.
std::string calls_unknown_line();

} // namespace spyglass::output
