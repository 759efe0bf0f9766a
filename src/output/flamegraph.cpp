// The flame graph: one self-contained interactive SVG (hover details, click to zoom, search),
// on-CPU frames warm, off-CPU frames blue (docs/output-formats.md). The script that makes it
// interactive is in flamegraph_script.cpp.
#include <algorithm>
#include <cmath>
#include <span>
#include <unordered_map>

#include <fmt/format.h>

#include "spyglass/output/diff_flamegraph.hpp"
#include "spyglass/output/writer.hpp"

namespace spyglass::output {

std::string_view flamegraph_script() noexcept;

namespace {

// Layout, in SVG pixels; the script reads them from the root element's sg: attributes.
constexpr double kWidth = 1200;
constexpr double kXPad = 10;
constexpr double kFrameHeight = 16;
constexpr double kFontSize = 12;
constexpr double kTitleFontSize = 17;
constexpr double kFontWidth = 0.59; // average glyph width, in font sizes
constexpr double kTop = 84;         // title, subtitle, buttons, legend
constexpr double kButtons = 190;    // the title keeps clear of the buttons on either side
constexpr double kBottom = 36;      // the details line
constexpr double kMinWidth = 0.5;   // narrower frames (and all above them) are left out
constexpr double kTextDy = 11.5;    // a frame label's baseline below the frame's top
constexpr double kLegendY = 66;     // the legend's baseline
constexpr double kSwatch = 11;      // a legend entry's colour square

// A frame to draw: samples [offset, offset + total) of the sorted stacks, at a depth.
struct Box {
    DisplayFrames::Id frame = 0;
    std::uint64_t offset = 0;
    std::uint64_t total = 0;
    std::uint64_t on_cpu = 0;
    std::uint32_t depth = 0; // 0: the root ("all")
    std::uint64_t path = 0;  // a hash of the labels from the root to it (for a diff)
};

std::uint64_t path_step(std::uint64_t parent, std::uint64_t label) {
    std::uint64_t h = (parent ^ label) * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 31);
}

std::uint64_t label_hash(std::string_view label) {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (char c : label)
        h = (h ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
    return h;
}

// The base of a differential flame graph: every call path's weight, by path hash.
struct Differential {
    std::unordered_map<std::uint64_t, std::uint64_t> paths;
    std::uint64_t total = 0;
    std::string title;
};

std::string group_digits(std::uint64_t n) {
    std::string digits = fmt::format("{}", n), out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i != 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
        out.push_back(digits[i]);
    }
    return out;
}

double percent(std::uint64_t part, std::uint64_t whole) {
    return whole == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(whole);
}

// As much of `text` as fits in `width` pixels (counting UTF-8 code points of an average
// width), ".." appended when cut; empty when not even 3 characters fit.
std::string fit_text(std::string_view text, double width, double font_size = kFontSize) {
    auto chars = static_cast<std::size_t>(std::max(0.0, (width - 6) / (font_size * kFontWidth)));
    if (chars < 3) return {};
    std::size_t count = 0, cut = std::string_view::npos;
    for (std::size_t i = 0; i < text.size(); ++i) {
        if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;
        if (count == chars - 2) cut = i;
        if (++count > chars) return std::string(text.substr(0, cut)) + "..";
    }
    return std::string(text);
}

std::uint32_t fnv1a(std::string_view text) {
    std::uint32_t h = 2166136261u;
    for (char c : text)
        h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
    return h;
}

enum class Hue : std::uint8_t { running, native, waiting, wait_reason };

// Warm (red-orange-yellow) on CPU, khaki for native code on CPU (--native), blue when waiting,
// green-teal for what a thread waited for (the [wait ...] frames); the shade comes from the name,
// so one function has one colour everywhere and across recordings.
std::string colour(std::string_view function, Hue hue) {
    std::uint32_t h = fnv1a(function);
    double v1 = (h & 0xff) / 255.0, v2 = ((h >> 8) & 0xff) / 255.0, v3 = ((h >> 16) & 0xff) / 255.0;
    auto c = [](double base, double range, double v) { return static_cast<int>(base + range * v); };
    if (hue == Hue::wait_reason)
        return fmt::format("rgb({},{},{})", c(40, 60, v1), c(165, 50, v2), c(120, 50, v3));
    if (hue == Hue::waiting)
        return fmt::format("rgb({},{},{})", c(60, 60, v1), c(110, 70, v2), c(200, 55, v3));
    if (hue == Hue::native)
        return fmt::format("rgb({},{},{})", c(180, 40, v1), c(170, 40, v2), c(80, 50, v3));
    return fmt::format("rgb({},{},{})", c(205, 50, v1), c(70, 160, v2), c(20, 50, v3));
}

// A differential frame: red as its share of all samples grew, blue as it shrank, white when
// it stayed; `scale` is the largest change of the graph (the full colour).
std::string diff_colour(double change, double scale) {
    double t = scale > 0 ? std::min(1.0, std::fabs(change) / scale) : 0.0;
    int fade = static_cast<int>(235 - 175 * t);
    return change >= 0 ? fmt::format("rgb(245,{},{})", fade, fade)
                       : fmt::format("rgb({},{},245)", fade, fade);
}

// The middle of each colour range, for the legend.
constexpr std::string_view kRunningSwatch = "rgb(230,150,45)";
constexpr std::string_view kWaitingSwatch = "rgb(90,145,227)";
constexpr std::string_view kReasonSwatch = "rgb(70,190,145)";
constexpr std::string_view kMatchSwatch = "rgb(230,0,230)";
constexpr std::string_view kNativeSwatch = "rgb(200,190,105)";

// What the colours and the brackets mean, centred under the subtitle (the script centres it
// again when the width follows the window). Frame kinds to come (native) add entries here.
void append_legend(std::string& svg, bool differential, bool native) {
    struct Entry {
        std::string_view swatch; // empty: text only
        std::string_view text;
    };
    constexpr Entry normal[] = {
        {kRunningSwatch, "running (on-CPU)"},
        {kWaitingSwatch, "waiting (off-CPU)"},
        {kReasonSwatch, "[wait ...]: what it waited for"},
        {kMatchSwatch, "search match"},
        {"", "[name]: added by spyglass, not in the program"},
    };
    constexpr Entry diff[] = {
        {"rgb(245,60,60)", "share of all samples grew"},
        {"rgb(60,60,245)", "share shrank"},
        {"rgb(245,235,235)", "about the same"},
        {kMatchSwatch, "search match"},
    };
    constexpr Entry with_native[] = {
        {kRunningSwatch, "running (on-CPU)"},
        {kNativeSwatch, "native code running"},
        {kWaitingSwatch, "waiting (off-CPU)"},
        {kReasonSwatch, "[wait ...]: what it waited for"},
        {kMatchSwatch, "search match"},
        {"", "[name]: added by spyglass, not in the program"},
    };
    std::span<const Entry> entries = differential ? std::span<const Entry>(diff)
                                     : native     ? std::span<const Entry>(with_native)
                                                  : std::span<const Entry>(normal);
    constexpr double gap = 22, swatch_gap = 5;
    double width = 0;
    for (const Entry& entry : entries)
        width += (entry.swatch.empty() ? 0 : kSwatch + swatch_gap) +
                 static_cast<double>(entry.text.size()) * kFontSize * kFontWidth + gap;
    width -= gap;
    fmt::format_to(std::back_inserter(svg),
                   "<g id=\"legend\" transform=\"translate({:.1f},0)\" sg:gap=\"{}\" "
                   "sg:swatchgap=\"{}\">",
                   (kWidth - width) / 2, gap, swatch_gap);
    double x = 0;
    for (const Entry& entry : entries) {
        if (!entry.swatch.empty()) {
            fmt::format_to(std::back_inserter(svg),
                           "<rect x=\"{:.1f}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\" "
                           "rx=\"2\"/>",
                           x, kLegendY - kSwatch + 1, kSwatch, kSwatch, entry.swatch);
            x += kSwatch + swatch_gap;
        }
        fmt::format_to(std::back_inserter(svg), "<text x=\"{:.1f}\" y=\"{}\">", x, kLegendY);
        append_xml_escaped(svg, entry.text);
        svg += "</text>";
        x += static_cast<double>(entry.text.size()) * kFontSize * kFontWidth + gap;
    }
    svg += "</g>\n";
}

// What to draw, the way flamegraph.pl does it: the stacks sorted by their frames' labels, so
// that a frame's samples are adjacent, then one pass that opens and closes frames as
// consecutive stacks share less or more of their roots. Memory is the stacks plus the frames
// wide enough to draw, however many distinct call paths there are.
class Layout {
  public:
    explicit Layout(const model::Profile& profile) : display_(profile) {
        struct Stack {
            std::size_t begin, end; // in pool
            std::uint64_t count, on_cpu;
        };
        std::vector<DisplayFrames::Id> pool, ids;
        std::vector<Stack> stacks;
        for (const model::AggregatedSample& sample : profile.samples) {
            if (sample.count == 0) continue;
            display_.stack(sample.key.thread, sample.key.stack, sample.key.on_cpu, sample.key.wait,
                           ids);
            // Samples weighed by the time they stand for, in sampling periods.
            const std::uint64_t periods = profile.periods(sample.weight_ns, sample.count);
            stacks.push_back(
                {pool.size(), pool.size() + ids.size(), periods, sample.key.on_cpu ? periods : 0});
            pool.insert(pool.end(), ids.begin(), ids.end());
            total_ += periods;
            on_cpu_ += stacks.back().on_cpu;
        }
        // Compare stacks by label through each frame's rank in label order.
        std::vector<DisplayFrames::Id> by_rank(display_.size());
        for (std::size_t i = 0; i < by_rank.size(); ++i)
            by_rank[i] = static_cast<DisplayFrames::Id>(i);
        std::sort(by_rank.begin(), by_rank.end(),
                  [&](auto a, auto b) { return display_[a].label < display_[b].label; });
        std::vector<std::uint32_t> rank(display_.size());
        for (std::size_t i = 0; i < by_rank.size(); ++i)
            rank[by_rank[i]] = static_cast<std::uint32_t>(i);
        for (DisplayFrames::Id& id : pool)
            id = rank[id];
        std::sort(stacks.begin(), stacks.end(), [&](const Stack& a, const Stack& b) {
            return std::lexicographical_compare(pool.begin() + a.begin, pool.begin() + a.end,
                                                pool.begin() + b.begin, pool.begin() + b.end);
        });

        scale_ = total_ == 0 ? 0 : (kWidth - 2 * kXPad) / static_cast<double>(total_);
        if (total_ == 0) return;
        std::vector<std::uint64_t> hashes(by_rank.size());
        for (std::size_t r = 0; r < by_rank.size(); ++r)
            hashes[r] = label_hash(display_[by_rank[r]].label);
        boxes_.push_back({0, 0, total_, on_cpu_, 0, 0});
        std::vector<Box> open; // the current stack's frames, root first, ranks as frames
        std::uint64_t offset = 0;
        for (const Stack& stack : stacks) {
            std::size_t length = stack.end - stack.begin, common = 0;
            while (common < open.size() && common < length &&
                   open[common].frame == pool[stack.begin + common])
                ++common;
            while (open.size() > common) {
                close(open.back(), by_rank);
                open.pop_back();
            }
            for (std::size_t i = common; i < length; ++i) {
                std::uint64_t parent = open.empty() ? 0 : open.back().path;
                DisplayFrames::Id frame_rank = pool[stack.begin + i];
                open.push_back({frame_rank, offset, 0, 0, static_cast<std::uint32_t>(i + 1),
                                path_step(parent, hashes[frame_rank])});
            }
            for (Box& box : open) {
                box.total += stack.count;
                box.on_cpu += stack.on_cpu;
            }
            offset += stack.count;
        }
        while (!open.empty()) {
            close(open.back(), by_rank);
            open.pop_back();
        }
        // Parents before children, left to right.
        std::sort(boxes_.begin(), boxes_.end(), [](const Box& a, const Box& b) {
            return a.offset != b.offset ? a.offset < b.offset : a.depth < b.depth;
        });
    }

    [[nodiscard]] const std::vector<Box>& boxes() const { return boxes_; }
    [[nodiscard]] std::uint64_t total() const { return total_; }
    [[nodiscard]] std::uint64_t on_cpu() const { return on_cpu_; }
    [[nodiscard]] std::uint64_t hidden() const { return hidden_; }
    [[nodiscard]] double scale() const { return scale_; }
    [[nodiscard]] const DisplayFrames::Entry& frame(const Box& box) const {
        return display_[box.frame];
    }

  private:
    void close(Box box, const std::vector<DisplayFrames::Id>& by_rank) {
        if (static_cast<double>(box.total) * scale_ < kMinWidth) {
            ++hidden_;
            return;
        }
        box.frame = by_rank[box.frame];
        boxes_.push_back(box);
    }

    DisplayFrames display_;
    std::vector<Box> boxes_; // [0] (before sorting): the root
    std::uint64_t total_ = 0, on_cpu_ = 0, hidden_ = 0;
    double scale_ = 0;
};

std::string subtitle(const model::Profile& profile, std::uint64_t total, std::uint64_t on_cpu,
                     std::uint64_t hidden) {
    const model::RecordingInfo& info = profile.info;
    const model::RecordingTotals& totals = profile.totals;
    std::string text =
        fmt::format("{} {} \u00b7 {:.2f} s at {} Hz \u00b7 {:.1f}% on-CPU \u00b7 {} mode{}",
                    group_digits(total), total == 1 ? "sample" : "samples",
                    static_cast<double>(totals.elapsed_ns) / 1e9, info.rate_hz,
                    percent(on_cpu, total), info.mode == model::SampleMode::cpu ? "cpu" : "wall",
                    info.gil_only ? " (GIL holders only)" : "");
    if (!totals.python_version.empty()) text += " \u00b7 Python " + totals.python_version;
    if (totals.pids.size() == 1) text += fmt::format(" \u00b7 pid {}", totals.pids[0]);
    if (totals.pids.size() > 1) text += fmt::format(" \u00b7 {} processes", totals.pids.size());
    auto count = [&](std::uint64_t n, std::string_view one, std::string_view many) {
        if (n != 0) text += fmt::format(" \u00b7 {} {}", group_digits(n), n == 1 ? one : many);
    };
    count(totals.errors, "incomplete sample", "incomplete samples");
    count(totals.late_ticks, "late tick", "late ticks");
    count(hidden, "frame too small to draw", "frames too small to draw");
    return text;
}

// The hover text: label, where, how much, on-CPU vs waiting (and for a diff, its share in
// the base).
void append_title(std::string& out, const DisplayFrames::Entry& frame, const Box& node,
                  std::uint64_t total, const Differential* base) {
    append_xml_escaped(out, frame.label);
    if (!frame.file.empty()) {
        out += "\nfile: ";
        append_xml_escaped(out, frame.file);
        if (frame.line > 0) fmt::format_to(std::back_inserter(out), ":{}", frame.line);
    }
    std::uint64_t off = node.total - node.on_cpu;
    fmt::format_to(std::back_inserter(out),
                   "\n{} {}, {:.2f}% of total\non-CPU {} ({:.1f}%), waiting {} ({:.1f}%)",
                   group_digits(node.total), node.total == 1 ? "sample" : "samples",
                   percent(node.total, total), group_digits(node.on_cpu),
                   percent(node.on_cpu, node.total), group_digits(off), percent(off, node.total));
    if (base != nullptr) {
        auto found = base->paths.find(node.path);
        double before = percent(found == base->paths.end() ? 0 : found->second, base->total);
        double now = percent(node.total, total);
        fmt::format_to(std::back_inserter(out), "\nbase {:.2f}% \u2192 {:.2f}% ({:+.2f} points)",
                       before, now, now - before);
    }
}

Result<void> write_flamegraph(const model::Profile& profile, std::FILE* out,
                              const Differential* base) {
    {
        Layout layout(profile);
        std::uint32_t depth = 0;
        for (const Box& box : layout.boxes())
            depth = std::max(depth, box.depth);
        const std::uint64_t total = layout.total();
        const double height = kTop + (depth + 1) * kFrameHeight + kBottom;
        const double bottom = height - kBottom; // the root frame's lower edge

        std::string svg;
        fmt::format_to(
            std::back_inserter(svg),
            "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
            "<svg version=\"1.1\" width=\"{0}\" height=\"{1}\" viewBox=\"0 0 {0} {1}\" "
            "xmlns=\"http://www.w3.org/2000/svg\" xmlns:sg=\"urn:spyglass:flamegraph\" "
            "sg:total=\"{2}\" sg:xpad=\"{3}\" sg:frameheight=\"{4}\" sg:fontsize=\"{5}\" "
            "sg:fontwidth=\"{6}\" sg:minwidth=\"{7}\" sg:top=\"{8}\" sg:depth=\"{9}\" "
            "sg:textdy=\"{10}\" sg:titlesize=\"{11}\">\n",
            kWidth, height, total, kXPad, kFrameHeight, kFontSize, kFontWidth, kMinWidth, kTop,
            depth, kTextDy, kTitleFontSize);
        svg += "<style>\n"
               "text { font-family: Verdana, 'DejaVu Sans', sans-serif; font-size: 12px; "
               "fill: rgb(0,0,0); }\n"
               "#title { font-size: 17px; text-anchor: middle; }\n"
               "#subtitle { fill: rgb(80,80,80); text-anchor: middle; }\n"
               ".button { cursor: pointer; fill: rgb(40,40,160); }\n"
               ".button:hover { text-decoration: underline; }\n"
               ".hide { display: none; }\n"
               "#frames g { cursor: pointer; }\n"
               "#frames g:hover rect { stroke: rgb(0,0,0); stroke-width: 0.5; }\n"
               "#frames text { font-size: 12px; pointer-events: none; }\n"
               "#frames g.parent { opacity: 0.5; }\n"
               "</style>\n<script type=\"text/ecmascript\"><![CDATA[\n";
        svg += flamegraph_script();
        svg += "]]></script>\n";
        fmt::format_to(std::back_inserter(svg),
                       "<rect id=\"background\" x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" "
                       "fill=\"rgb(250,250,245)\"/>\n",
                       kWidth, height);
        std::string command = profile.info.command.empty() ? std::string("(unknown command)")
                                                           : join_words(profile.info.command);
        // The whole texts go in sg:text, for the script to fit them to the window's width.
        std::string title = base != nullptr
                                ? "spyglass diff: " + fit_text(base->title, 6000, kTitleFontSize)
                                : "spyglass: " + fit_text(command, 6000, kTitleFontSize);
        std::string sub = subtitle(profile, total, layout.on_cpu(), layout.hidden());
        if (base != nullptr)
            sub = fmt::format("the new recording's shape, coloured by the change of each frame's "
                              "share of all samples \u00b7 base {} samples, new {} samples",
                              group_digits(base->total), group_digits(total));
        // The largest change in the graph is the full colour.
        double scale = 0;
        auto change = [&](const Box& node) {
            auto found = base->paths.find(node.path);
            double before =
                base->total == 0 || found == base->paths.end()
                    ? 0.0
                    : static_cast<double>(found->second) / static_cast<double>(base->total);
            return (total == 0 ? 0.0
                               : static_cast<double>(node.total) / static_cast<double>(total)) -
                   before;
        };
        if (base != nullptr)
            for (const Box& node : layout.boxes())
                if (node.depth != 0) scale = std::max(scale, std::fabs(change(node)));
        fmt::format_to(std::back_inserter(svg),
                       "<text id=\"title\" class=\"center\" x=\"{}\" y=\"24\" sg:text=\"",
                       kWidth / 2);
        append_xml_escaped(svg, title);
        svg += "\">";
        append_xml_escaped(svg, fit_text(title, kWidth - 2 * kButtons, kTitleFontSize));
        fmt::format_to(std::back_inserter(svg),
                       "</text>\n<text id=\"subtitle\" class=\"center\" x=\"{}\" y=\"44\" "
                       "sg:text=\"",
                       kWidth / 2);
        append_xml_escaped(svg, sub);
        svg += "\">";
        append_xml_escaped(svg, fit_text(sub, kWidth - 2 * kXPad));
        svg += "</text>\n";
        fmt::format_to(
            std::back_inserter(svg),
            "<text id=\"flip\" class=\"button\" x=\"{0}\" y=\"24\">Icicle view</text>\n"
            "<text id=\"unzoom\" class=\"button hide\" x=\"{3}\" y=\"24\">Reset zoom</text>\n"
            "<text id=\"search\" class=\"button right\" x=\"{1}\" y=\"24\" "
            "text-anchor=\"end\">Search</text>\n"
            "<text id=\"details\" x=\"{0}\" y=\"{2}\"> </text>\n"
            "<text id=\"matched\" class=\"right\" x=\"{1}\" y=\"{2}\" "
            "text-anchor=\"end\"> </text>\n",
            kXPad, kWidth - kXPad, height - 14, kXPad + 100);
        bool native = false;
        for (std::size_t id = 0; id < profile.frames->size() && !native; ++id)
            native = profile.frames->get(static_cast<model::FrameId>(id)).kind ==
                     model::FrameKind::native;
        append_legend(svg, base != nullptr, native);
        if (total == 0)
            fmt::format_to(std::back_inserter(svg),
                           "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">No samples were "
                           "recorded.</text>\n",
                           kWidth / 2, bottom - kFrameHeight);

        DisplayFrames::Entry root;
        root.label = root.function = "all";
        svg += "<g id=\"frames\">\n";
        for (const Box& node : layout.boxes()) {
            const DisplayFrames::Entry& frame = node.depth == 0 ? root : layout.frame(node);
            double x = kXPad + static_cast<double>(node.offset) * layout.scale();
            double w = static_cast<double>(node.total) * layout.scale();
            double y = bottom - (node.depth + 1) * kFrameHeight;
            Hue hue = frame.wait.value != 0 ? Hue::wait_reason
                      : frame.off_cpu || (node.total - node.on_cpu) * 2 > node.total ? Hue::waiting
                      : frame.native                                                 ? Hue::native
                                                                                     : Hue::running;
            svg += "<g><title>";
            append_title(svg, frame, node, total, base);
            fmt::format_to(std::back_inserter(svg),
                           "</title><rect x=\"{:.2f}\" y=\"{}\" width=\"{:.2f}\" height=\"{}\" "
                           "fill=\"{}\" rx=\"2\" sg:x=\"{}\" sg:w=\"{}\" sg:d=\"{}\"/>",
                           x, y, w, kFrameHeight - 1,
                           base != nullptr
                               ? diff_colour(node.depth == 0 ? 0.0 : change(node), scale)
                               : colour(frame.function, hue),
                           node.offset, node.total, node.depth);
            // Most frames of a big profile are too narrow for a label: no empty text for them
            // (the script adds one when a zoom makes room).
            if (std::string label = fit_text(frame.label, w); !label.empty()) {
                fmt::format_to(std::back_inserter(svg), "<text x=\"{:.2f}\" y=\"{}\">", x + 3,
                               y + kTextDy);
                append_xml_escaped(svg, label);
                svg += "</text>";
            }
            svg += "</g>\n";
            if (svg.size() >= 1 << 16) {
                if (auto written = write_bytes(out, svg); !written) return written;
                svg.clear();
            }
        }
        svg += "</g>\n</svg>\n";
        if (auto written = write_bytes(out, svg); !written) return written;
        return flush_output(out);
    }
}

class FlamegraphWriter final : public ProfileWriter {
  public:
    Result<void> write(const model::Profile& profile, std::FILE* out) override {
        return write_flamegraph(profile, out, nullptr);
    }
};

} // namespace

Result<void> write_diff_flamegraph(const model::Profile& base, const model::Profile& current,
                                   std::string_view title, std::FILE* out) {
    // Every call path of the base, by the same hash the layout gives the new one's frames.
    Differential differential;
    differential.title = std::string(title);
    DisplayFrames display(base);
    std::vector<DisplayFrames::Id> ids;
    for (const model::AggregatedSample& sample : base.samples) {
        if (sample.count == 0) continue;
        const std::uint64_t periods = base.periods(sample.weight_ns, sample.count);
        differential.total += periods;
        display.stack(sample.key.thread, sample.key.stack, sample.key.on_cpu, sample.key.wait, ids);
        std::uint64_t path = 0;
        for (DisplayFrames::Id id : ids) {
            path = path_step(path, label_hash(display[id].label));
            differential.paths[path] += periods;
        }
    }
    return write_flamegraph(current, out, &differential);
}

std::unique_ptr<ProfileWriter> make_flamegraph_writer() {
    return std::make_unique<FlamegraphWriter>();
}

} // namespace spyglass::output
