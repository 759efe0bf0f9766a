// The calls table (-f calls): each function's calls and their durations, as text or JSON; the
// SVG is in calls_svg.cpp. The text pieces are shared with `spyglass top --calls`.
#include "spyglass/output/calls.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <tuple>

#include <fmt/format.h>

#include "spyglass/output/json_writer.hpp"
#include "spyglass/output/top_model.hpp"
#include "spyglass/output/writer.hpp"
#include "spyglass/terminal_text.hpp"

namespace spyglass::output {

Result<void> write_calls_svg(const model::Profile& profile, const CallsView& view, std::FILE* out);

namespace {

constexpr std::size_t kCountWidth = 5;    // "calls", "short"
constexpr std::size_t kDurationWidth = 7; // "201.3ms"
constexpr std::string_view kGap = "  ";

bool ends_with_nocase(std::string_view text, std::string_view suffix) {
    if (text.size() < suffix.size()) return false;
    text.remove_prefix(text.size() - suffix.size());
    return std::equal(text.begin(), text.end(), suffix.begin(), [](char a, char b) {
        return std::tolower(static_cast<unsigned char>(a)) == b;
    });
}

std::string padded(std::string_view text, std::size_t width, bool right) {
    std::size_t shown = text_width(text);
    std::string pad(width > shown ? width - shown : 0, ' ');
    return right ? pad + std::string(text) : std::string(text) + pad;
}

std::string thread_text(const std::vector<model::ThreadInfo>& threads, std::uint32_t index) {
    if (index == model::kAllThreads || index >= threads.size()) return "-";
    const model::ThreadInfo& thread = threads[index];
    if (thread.name.empty()) return fmt::format("{}", thread.tid);
    return fmt::format("{} {}", thread.tid, thread.name);
}

std::string label_of(const CallRow& row, const CallsTextOptions& options) {
    std::string function = terminal_safe(row.function);
    std::string file =
        row.file.empty()
            ? std::string()
            : terminal_safe(options.full_filenames ? row.file : short_filename(row.file));
    const std::int32_t line = options.line_numbers ? row.stats.first_line : 0;
    return fit_label(function, file, std::max(line, 0),
                     options.width == 0 ? std::numeric_limits<std::size_t>::max() : options.width);
}

bool timed(const model::CallStats& stats) {
    return stats.durations.count() > 0;
}

double ms(std::uint64_t ns) {
    return static_cast<double>(ns) / 1e6;
}

double seconds(std::uint64_t ns) {
    return static_cast<double>(ns) / 1e9;
}

void write_json(const model::Profile& profile, const CallsView& view, std::size_t shown,
                std::string& out) {
    JsonWriter json(out);
    json.begin_object();
    json.field("period_ms", ms(profile.info.period_ns));
    json.field("mode", profile.info.mode == model::SampleMode::cpu ? "cpu" : "wall");
    json.field("known", view.known);
    json.field("per_thread", view.per_thread);
    json.field("samples_without_identity", view.samples_without_identity);
    json.key("functions").begin_array();
    for (std::size_t i = 0; i < shown; ++i) {
        const CallRow& row = view.rows[i];
        const model::CallStats& stats = row.stats;
        json.begin_object();
        json.field("function", row.function);
        json.field("file", row.file);
        json.field("line", stats.first_line);
        if (view.per_thread) {
            json.key("thread");
            if (stats.thread < profile.threads.size()) {
                const model::ThreadInfo& thread = profile.threads[stats.thread];
                json.begin_object();
                json.field("tid", static_cast<std::int64_t>(thread.tid));
                json.field("name", thread.name);
                json.end_object();
            } else {
                json.null();
            }
        }
        json.field("calls", stats.calls);
        json.field("short_calls", stats.short_calls);
        json.field("open_calls", stats.open_calls);
        json.field("back_to_back", stats.back_to_back);
        for (auto [name, q] : {std::pair{"p50_ms", 0.5}, std::pair{"p90_ms", 0.9},
                               std::pair{"p99_ms", 0.99}, std::pair{"max_ms", 1.0}}) {
            json.key(name);
            if (!timed(stats))
                json.null();
            else
                json.value(ms(q >= 1.0 ? stats.durations.max_ns() : stats.durations.quantile(q)));
        }
        json.field("total_s", seconds(stats.total_ns));
        json.field("self_s", seconds(stats.self_ns));
        json.field("cpu_s", seconds(stats.cpu_ns));
        json.field("self_cpu_s", seconds(stats.self_cpu_ns));
        json.key("histogram").begin_array();
        for (const model::DurationHistogram::Bucket& bucket : stats.durations.buckets(4)) {
            json.begin_object();
            json.field("from_ms", ms(bucket.lower_ns));
            json.field("to_ms", ms(bucket.upper_ns));
            json.field("count", bucket.count);
            json.end_object();
        }
        json.end_array();
        json.end_object();
    }
    json.end_array();
    json.end_object();
    out += '\n';
}

void write_text(const model::Profile& profile, const CallsView& view, std::size_t shown,
                std::string& out) {
    if (!view.known) {
        out += calls_unknown_line() + '\n';
        return;
    }
    out += calls_header(profile.info.period_ns, profile.info.mode) + "\n\n";
    CallsTextOptions options;
    options.full_filenames = profile.display.labels.full_filenames;
    options.line_numbers = profile.display.labels.line_numbers;
    for (const std::string& line :
         calls_lines(std::span(view.rows).first(shown), view.per_thread, options))
        out += line + '\n';
    if (view.rows.empty()) out += "(no calls)\n";
    if (shown < view.rows.size())
        out += fmt::format("({} more {})\n", with_commas(view.rows.size() - shown),
                           view.rows.size() - shown == 1 ? "function" : "functions");
    std::vector<std::string> footer = calls_footer(view);
    if (!footer.empty()) out += '\n';
    for (const std::string& line : footer)
        out += line + '\n';
}

class CallsWriter final : public ProfileWriter {
  public:
    Result<void> write(const model::Profile& profile, std::FILE* out) override {
        const CallsView view =
            calls_view(profile.calls, profile.frames->strings(), profile.threads);
        if (profile.display.calls_style == model::CallsStyle::svg)
            return write_calls_svg(profile, view, out);
        const std::size_t top = profile.display.calls_top;
        const std::size_t shown = top == 0 ? view.rows.size() : std::min(top, view.rows.size());
        std::string text;
        if (profile.display.calls_style == model::CallsStyle::json)
            write_json(profile, view, shown, text);
        else
            write_text(profile, view, shown, text);
        if (auto written = write_bytes(out, text); !written) return written;
        return flush_output(out);
    }
};

} // namespace

model::CallsStyle calls_style_for_path(std::string_view path) noexcept {
    if (ends_with_nocase(path, ".json")) return model::CallsStyle::json;
    if (ends_with_nocase(path, ".svg") || ends_with_nocase(path, ".html"))
        return model::CallsStyle::svg;
    return model::CallsStyle::table;
}

CallsView calls_view(const model::CallTable& table, const model::StringTable& strings,
                     const std::vector<model::ThreadInfo>& threads) {
    CallsView view;
    view.known = table.known;
    view.per_thread = table.per_thread;
    view.samples_without_identity = table.samples_without_identity;
    view.rows.reserve(table.functions.size());
    for (const model::CallStats& stats : table.functions) {
        CallRow row;
        row.stats = stats;
        row.function = strings.view(stats.function);
        row.file = strings.view(stats.file);
        if (table.per_thread) row.thread = thread_text(threads, stats.thread);
        view.rows.push_back(std::move(row));
    }
    finish_calls_view(view);
    return view;
}

void finish_calls_view(CallsView& view) {
    view.open_calls = view.back_to_back = 0;
    for (const CallRow& row : view.rows) {
        view.open_calls += row.stats.open_calls;
        view.back_to_back += row.stats.back_to_back;
    }
    auto key = [](const CallRow& row) {
        return std::tie(row.function, row.file, row.stats.first_line, row.stats.thread);
    };
    std::sort(view.rows.begin(), view.rows.end(), [&](const CallRow& a, const CallRow& b) {
        if (a.stats.total_ns != b.stats.total_ns) return a.stats.total_ns > b.stats.total_ns;
        if (a.stats.self_ns != b.stats.self_ns) return a.stats.self_ns > b.stats.self_ns;
        return key(a) < key(b);
    });
}

std::string call_duration(std::uint64_t ns) {
    // The unit changes where 1 decimal would round up to the next one's 1000.0.
    if (ns < 999'950) return fmt::format("{:.1f}\u00b5s", static_cast<double>(ns) / 1e3);
    if (ns < 999'950'000) return fmt::format("{:.1f}ms", static_cast<double>(ns) / 1e6);
    return fmt::format("{:.1f}s", static_cast<double>(ns) / 1e9);
}

std::string calls_header(std::uint64_t period_ns, model::SampleMode mode) {
    // Each end of a call falls within the period between two samples, which is split between
    // the calls on either side (docs/calls.md, "The estimator's error").
    std::string period = call_duration(period_ns), half = call_duration(period_ns / 2);
    if (mode == model::SampleMode::cpu)
        return fmt::format("Sampled every {}, on-CPU samples only (--mode cpu): durations are "
                           "on-CPU time, \u00b1 half a period ({}) at each end",
                           period, half);
    return fmt::format("Sampled every {}: durations are \u00b1 half a period ({}) at each end, "
                       "more after late ticks",
                       period, half);
}

std::vector<std::string> calls_lines(std::span<const CallRow> rows, bool per_thread,
                                     const CallsTextOptions& options) {
    constexpr std::size_t kCounts = 2, kDurations = 7; // calls, short | p50 ... cpu
    constexpr const char* kTitles[kCounts + kDurations] = {"calls", "short", "p50",  "p90", "p99",
                                                           "max",   "total", "self", "cpu"};
    struct Cells {
        std::string cells[kCounts + kDurations];
        std::string thread;
    };
    std::vector<Cells> table(rows.size());
    std::size_t widths[kCounts + kDurations];
    for (std::size_t c = 0; c < kCounts + kDurations; ++c)
        widths[c] = c < kCounts ? kCountWidth : kDurationWidth;
    std::size_t thread_width = per_thread ? std::string_view("thread").size() : 0;
    for (std::size_t r = 0; r < rows.size(); ++r) {
        const model::CallStats& stats = rows[r].stats;
        Cells& cells = table[r];
        cells.cells[0] = std::to_string(stats.calls); // digits only: grep and awk read them
        cells.cells[1] = std::to_string(stats.short_calls);
        const bool has = timed(stats);
        auto timing = [&](std::uint64_t ns) { return has ? call_duration(ns) : std::string("-"); };
        cells.cells[2] = timing(stats.durations.quantile(0.5));
        cells.cells[3] = timing(stats.durations.quantile(0.9));
        cells.cells[4] = timing(stats.durations.quantile(0.99));
        cells.cells[5] = timing(stats.durations.max_ns());
        cells.cells[6] = call_duration(stats.total_ns);
        cells.cells[7] = call_duration(stats.self_ns);
        cells.cells[8] = call_duration(stats.cpu_ns);
        for (std::size_t c = 0; c < kCounts + kDurations; ++c)
            widths[c] = std::max(widths[c], text_width(cells.cells[c]));
        if (per_thread) {
            cells.thread = terminal_safe(rows[r].thread);
            thread_width = std::max(thread_width, text_width(cells.thread));
        }
    }
    auto prefix = [&](const std::string(&cells)[kCounts + kDurations], std::string_view thread) {
        std::string line;
        for (std::size_t c = 0; c < kCounts + kDurations; ++c) {
            if (c > 0) line += kGap;
            line += padded(cells[c], widths[c], c < kCounts);
        }
        line += kGap;
        if (per_thread) line += padded(thread, thread_width, false) + std::string(kGap);
        return line;
    };
    std::vector<std::string> lines;
    lines.reserve(rows.size() + 1);
    std::string titles[kCounts + kDurations];
    for (std::size_t c = 0; c < kCounts + kDurations; ++c)
        titles[c] = kTitles[c];
    lines.push_back(prefix(titles, "thread") + "function");
    for (std::size_t r = 0; r < rows.size(); ++r) {
        std::string line = prefix(table[r].cells, table[r].thread);
        CallsTextOptions fitted = options;
        if (options.width != 0) {
            std::size_t used = text_width(line);
            fitted.width = options.width > used + 1 ? options.width - used : 1;
        }
        line += label_of(rows[r], fitted);
        lines.push_back(std::move(line));
    }
    return lines;
}

std::vector<std::string> calls_footer(const CallsView& view) {
    std::vector<std::string> lines;
    if (!view.known) return lines;
    if (view.open_calls > 0)
        lines.push_back(fmt::format("{} {} running at the start or end of the recording: their "
                                    "time is in total and self, not in the durations",
                                    count_of(view.open_calls, "call"),
                                    view.open_calls == 1 ? "was" : "were"));
    if (view.back_to_back > 0)
        lines.push_back(fmt::format("{} began within one sampling period of the previous call of "
                                    "the same function: calls with nothing in their frames to "
                                    "tell them apart are merged",
                                    count_of(view.back_to_back, "call")));
    if (view.samples_without_identity > 0)
        lines.push_back(fmt::format("{} (torn or cut stacks) could not say which calls were new: "
                                    "their time was given to the calls running",
                                    count_of(view.samples_without_identity, "sample")));
    return lines;
}

std::string calls_unknown_line() {
    return "This recording carries no call identity (a raw recording of format version 4 or "
           "older): it has no calls to show";
}

std::unique_ptr<ProfileWriter> make_calls_writer() {
    return std::make_unique<CallsWriter>();
}

} // namespace spyglass::output
