// -f calls -o calls.svg: the slowest functions' call durations, one row each, as histograms on
// a shared logarithmic time axis with p50 and p99 marked. Static SVG: no script.
#include <algorithm>
#include <cmath>
#include <limits>
#include <tuple>

#include <fmt/format.h>

#include "spyglass/output/calls.hpp"
#include "spyglass/output/top_model.hpp"
#include "spyglass/output/writer.hpp"

namespace spyglass::output {

namespace {

constexpr double kWidth = 1200;
constexpr double kPad = 10;
constexpr double kLabelWidth = 360; // the function's name and numbers, left of the plot
constexpr double kPlotLeft = kPad + kLabelWidth + 10;
constexpr double kPlotRight = kWidth - 20;
constexpr double kTop = 64; // title and subtitle
constexpr double kRowHeight = 52;
constexpr double kBarTop = 14; // the tallest bar's top below a row's top
constexpr double kAxis = 44;   // the axis and its labels, below the rows
constexpr double kFontSize = 12;
constexpr double kFontWidth = 0.59; // average glyph width, in font sizes
constexpr std::size_t kDefaultRows = 10;

// A time axis of whole decades, from below the shortest bucket to above the longest.
struct Axis {
    double lo = 0, hi = 1; // log10 of ns

    [[nodiscard]] double x(double ns) const {
        double at = (std::log10(std::max(ns, 1.0)) - lo) / (hi - lo);
        return kPlotLeft + std::clamp(at, 0.0, 1.0) * (kPlotRight - kPlotLeft);
    }
};

std::string decade_label(double ns) {
    if (ns < 1e3) return fmt::format("{:g}ns", ns);
    if (ns < 1e6) return fmt::format("{:g}\u00b5s", ns / 1e3);
    if (ns < 1e9) return fmt::format("{:g}ms", ns / 1e6);
    return fmt::format("{:g}s", ns / 1e9);
}

std::string xml(std::string_view text) {
    std::string out;
    append_xml_escaped(out, text);
    return out;
}

std::string label_of(const CallRow& row, const model::Profile& profile, std::size_t chars) {
    std::string file = row.file.empty() || profile.display.labels.full_filenames
                           ? row.file
                           : short_filename(row.file);
    const std::int32_t line =
        profile.display.labels.line_numbers ? std::max(row.stats.first_line, 0) : 0;
    std::string label = fit_label(row.function, file, line, chars);
    if (!row.thread.empty()) label = fmt::format("[{}] {}", row.thread, label);
    return label;
}

} // namespace

Result<void> write_calls_svg(const model::Profile& profile, const CallsView& view, std::FILE* out) {
    // The functions with timed calls, slowest (by p99) first.
    std::vector<const CallRow*> rows;
    for (const CallRow& row : view.rows)
        if (row.stats.durations.count() > 0) rows.push_back(&row);
    std::stable_sort(rows.begin(), rows.end(), [](const CallRow* a, const CallRow* b) {
        return a->stats.durations.quantile(0.99) > b->stats.durations.quantile(0.99);
    });
    const std::size_t limit =
        profile.display.calls_top != 0 ? profile.display.calls_top : kDefaultRows;
    if (rows.size() > limit) rows.resize(limit);

    std::vector<std::vector<model::DurationHistogram::Bucket>> buckets;
    double shortest = 1e300, longest = 0;
    for (const CallRow* row : rows) {
        buckets.push_back(row->stats.durations.buckets(4));
        for (const auto& bucket : buckets.back()) {
            shortest = std::min(shortest, static_cast<double>(std::max<std::uint64_t>(
                                              bucket.lower_ns, row->stats.durations.min_ns())));
            longest = std::max(longest, static_cast<double>(bucket.upper_ns));
        }
    }
    Axis axis;
    if (!rows.empty()) {
        axis.lo = std::floor(std::log10(std::max(shortest, 1.0)));
        axis.hi = std::ceil(std::log10(std::max(longest, 1.0)));
        if (axis.hi - axis.lo < 2) axis.hi = axis.lo + 2;
    }

    const double rows_height = std::max<double>(1, static_cast<double>(rows.size())) * kRowHeight;
    const double height = kTop + rows_height + kAxis;
    std::string svg;
    fmt::format_to(std::back_inserter(svg),
                   "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
                   "<svg version=\"1.1\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
                   "xmlns=\"http://www.w3.org/2000/svg\">\n",
                   kWidth, height);
    svg += "<style>\n"
           "text { font-family: Verdana, 'DejaVu Sans', sans-serif; font-size: 12px; "
           "fill: rgb(0,0,0); }\n"
           "#title { font-size: 17px; text-anchor: middle; }\n"
           "#subtitle { fill: rgb(80,80,80); text-anchor: middle; }\n"
           ".numbers { font-size: 11px; fill: rgb(80,80,80); }\n"
           ".tick { font-size: 11px; fill: rgb(80,80,80); text-anchor: middle; }\n"
           ".grid { stroke: rgb(215,215,215); stroke-width: 1; }\n"
           ".bar { fill: rgb(90,130,200); }\n"
           ".bar:hover { fill: rgb(40,70,150); }\n"
           ".p50 { stroke: rgb(20,140,60); stroke-width: 2; }\n"
           ".p99 { stroke: rgb(210,40,40); stroke-width: 2; }\n"
           ".p50text { font-size: 10px; fill: rgb(20,140,60); }\n"
           ".p99text { font-size: 10px; fill: rgb(210,40,40); }\n"
           "</style>\n";
    fmt::format_to(std::back_inserter(svg),
                   "<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"rgb(250,250,245)\"/>\n",
                   kWidth, height);
    std::string command = profile.info.command.empty() ? std::string("(unknown command)")
                                                       : join_words(profile.info.command);
    if (text_width(command) > 90) command = fit_label(command, "", 0, 90);
    fmt::format_to(std::back_inserter(svg),
                   "<text id=\"title\" x=\"{}\" y=\"24\">spyglass call durations: {}</text>\n",
                   kWidth / 2, xml(command));
    const std::string period = call_duration(profile.info.period_ns);
    std::string subtitle =
        !view.known ? calls_unknown_line()
        : rows.empty()
            ? std::string("No call was seen in two samples or more: no durations to show")
            : fmt::format("{} by p99 \u00b7 {} \u00b7 sampled every {}: durations are \u00b1 "
                          "half a period at each end \u00b7 logarithmic time axis",
                          rows.size() == 1 ? std::string("The slowest function")
                                           : fmt::format("The {} slowest functions", rows.size()),
                          profile.info.mode == model::SampleMode::cpu ? "on-CPU time (--mode cpu)"
                                                                      : "wall time",
                          period);
    fmt::format_to(std::back_inserter(svg), "<text id=\"subtitle\" x=\"{}\" y=\"46\">{}</text>\n",
                   kWidth / 2, xml(subtitle));

    // The grid and the axis: a line and a label per decade.
    const double axis_y = kTop + rows_height;
    if (!rows.empty()) {
        svg += "<g id=\"axis\">\n";
        for (double decade = axis.lo; decade <= axis.hi + 1e-9; decade += 1) {
            const double ns = std::pow(10.0, decade);
            const double x = axis.x(ns);
            fmt::format_to(
                std::back_inserter(svg),
                "<line class=\"grid\" x1=\"{0:.1f}\" y1=\"{1}\" x2=\"{0:.1f}\" "
                "y2=\"{2}\"/>\n<text class=\"tick\" x=\"{0:.1f}\" y=\"{3}\">{4}</text>\n",
                x, kTop, axis_y + 4, axis_y + 18, xml(decade_label(ns)));
        }
        fmt::format_to(
            std::back_inserter(svg),
            "<line x1=\"{0}\" y1=\"{2}\" x2=\"{1}\" y2=\"{2}\" stroke=\"rgb(80,80,80)\"/>\n"
            "<text class=\"tick\" x=\"{3}\" y=\"{4}\">call duration</text>\n</g>\n",
            kPlotLeft, kPlotRight, axis_y, (kPlotLeft + kPlotRight) / 2, axis_y + 34);
    }

    const auto label_chars = static_cast<std::size_t>(kLabelWidth / (kFontSize * kFontWidth));
    svg += "<g id=\"functions\">\n";
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const CallRow& row = *rows[i];
        const model::DurationHistogram& durations = row.stats.durations;
        const double top = kTop + static_cast<double>(i) * kRowHeight;
        const double bottom = top + kRowHeight - 6;
        const std::uint64_t p50 = durations.quantile(0.5), p99 = durations.quantile(0.99);
        const std::string full = label_of(row, profile, std::numeric_limits<std::size_t>::max());
        const std::string numbers =
            fmt::format("{} ({} short) \u00b7 p50 {} \u00b7 p99 {} \u00b7 max {}",
                        count_of(row.stats.calls, "call"), with_commas(row.stats.short_calls),
                        call_duration(p50), call_duration(p99), call_duration(durations.max_ns()));
        fmt::format_to(std::back_inserter(svg), "<g>\n<title>{}\n{}</title>\n", xml(full),
                       xml(numbers));
        if (i % 2 == 1)
            fmt::format_to(std::back_inserter(svg),
                           "<rect x=\"0\" y=\"{}\" width=\"{}\" height=\"{}\" "
                           "fill=\"rgb(240,240,232)\"/>\n",
                           top, kWidth, kRowHeight);
        fmt::format_to(std::back_inserter(svg),
                       "<text x=\"{}\" y=\"{}\">{}</text>\n<text class=\"numbers\" x=\"{}\" "
                       "y=\"{}\">{}</text>\n",
                       kPad, top + 20, xml(label_of(row, profile, label_chars)), kPad, top + 36,
                       xml(numbers));
        std::uint64_t tallest = 1;
        for (const auto& bucket : buckets[i])
            tallest = std::max(tallest, bucket.count);
        for (const auto& bucket : buckets[i]) {
            const double from = std::max<double>(static_cast<double>(bucket.lower_ns),
                                                 static_cast<double>(durations.min_ns()));
            const double x0 = axis.x(from), x1 = axis.x(static_cast<double>(bucket.upper_ns));
            const double h = (bottom - top - kBarTop) * static_cast<double>(bucket.count) /
                             static_cast<double>(tallest);
            fmt::format_to(std::back_inserter(svg),
                           "<rect class=\"bar\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" "
                           "height=\"{:.1f}\"><title>{} to {}: {}</title></rect>\n",
                           x0, bottom - h, std::max(x1 - x0, 1.0), std::max(h, 1.0),
                           xml(call_duration(bucket.lower_ns)), xml(call_duration(bucket.upper_ns)),
                           xml(count_of(bucket.count, "call")));
        }
        // p50's label left of its line, p99's right of it: both stay readable when they meet.
        for (auto [name, ns, after] :
             {std::tuple{"p50", p50, false}, std::tuple{"p99", p99, true}}) {
            const double x = axis.x(static_cast<double>(ns));
            fmt::format_to(std::back_inserter(svg),
                           "<line class=\"{0}\" x1=\"{1:.1f}\" y1=\"{2}\" x2=\"{1:.1f}\" "
                           "y2=\"{3}\"/>\n<text class=\"{0}text\" x=\"{4:.1f}\" y=\"{5}\"{6}>{0}"
                           "</text>\n",
                           name, x, top + kBarTop - 4, bottom, after ? x + 3 : x - 3,
                           top + kBarTop - 2, after ? "" : " text-anchor=\"end\"");
        }
        svg += "</g>\n";
    }
    svg += "</g>\n</svg>\n";
    if (auto written = write_bytes(out, svg); !written) return written;
    return flush_output(out);
}

} // namespace spyglass::output
