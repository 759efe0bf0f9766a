// spyglass report: a raw recording rendered in any format, any slice; or summarised.
#include <algorithm>
#include <cmath>
#include <ctime>
#include <map>

#include <fmt/format.h>

#include "spyglass/cli/options.hpp"
#include "spyglass/cli/summary.hpp"
#include "spyglass/cli/validate.hpp"
#include "spyglass/delivery/atomic_file.hpp"
#include "spyglass/input/profile_input.hpp"
#include "spyglass/input/raw_reader.hpp"
#include "spyglass/model/aggregator.hpp"
#include "spyglass/model/projector.hpp"
#include "spyglass/model/select.hpp"
#include "spyglass/output/calls.hpp"
#include "spyglass/output/writer.hpp"

namespace spyglass::cli {

namespace {

constexpr std::uint64_t kSecond = 1'000'000'000ull;
constexpr std::size_t kListedProcesses = 20; // by --summary

// The recording's name with the extension of the format asked for (of the default one).
std::string default_report_path(const std::string& input, output::Format format) {
    std::string base =
        input.substr(input.rfind('/') == std::string::npos ? 0 : input.rfind('/') + 1);
    std::size_t dot = base.rfind('.');
    if (dot != std::string::npos && dot != 0) base.resize(dot);
    return fmt::format("{}.{}", base, output::default_extension(format));
}

std::string local_time(std::uint64_t unix_ns) {
    auto seconds = static_cast<std::time_t>(unix_ns / kSecond);
    std::tm tm{};
    ::localtime_r(&seconds, &tm);
    char text[64];
    std::strftime(text, sizeof text, "%Y-%m-%d %H:%M:%S %Z", &tm);
    return text;
}

void print_summary(const std::string& input, const output::RawReader& reader,
                   const output::RawReadStatus& status, const model::Profile& profile) {
    const model::RecordingInfo& info = profile.info;
    const model::RecordingTotals& totals = profile.totals;
    std::string text = fmt::format("{}: spyglass raw recording (format {}), written by spyglass "
                                   "{} on {}\n",
                                   input, reader.header().format_version,
                                   reader.header().spyglass_version, reader.header().host);
    text += fmt::format("command:  {}\n", output::join_words(info.command));
    text += fmt::format("started:  {}\n", local_time(info.start_unix_ns));
    text += fmt::format("duration: {:.1f} s at {} Hz, {} mode{}{}\n",
                        static_cast<double>(totals.elapsed_ns) / 1e9, info.rate_hz,
                        info.mode == model::SampleMode::cpu ? "cpu" : "wall",
                        info.gil_only ? ", GIL holders only" : "",
                        totals.python_version.empty() ? "" : ", Python " + totals.python_version);
    // Each process with its interpreter (format 3 records them as they start being sampled:
    // a cut file has them too).
    if (!profile.processes.empty())
        text += fmt::format("processes: {}\n", profile.processes.size());
    for (std::size_t i = 0; i < profile.processes.size() && i < kListedProcesses; ++i) {
        const model::ProcessInfo& process = profile.processes[i];
        text += fmt::format("  {:>8}  Python {:<8}  {}\n", process.pid, process.python_version,
                            process.interpreter);
    }
    if (profile.processes.size() > kListedProcesses)
        text += fmt::format("  ... and {} more\n", profile.processes.size() - kListedProcesses);
    std::uint64_t samples = 0, weight = 0;
    std::map<std::uint32_t, std::pair<std::uint64_t, std::uint64_t>> by_thread; // all, on-CPU
    std::map<std::string, std::uint64_t> self;
    for (const model::AggregatedSample& sample : profile.samples) {
        samples += sample.count;
        weight += sample.weight_ns;
        auto& thread = by_thread[sample.key.thread];
        thread.first += sample.weight_ns;
        if (sample.key.on_cpu) thread.second += sample.weight_ns;
        std::span<const model::FrameId> frames = profile.stacks->get(sample.key.stack);
        std::string label(output::kNoFramesFrame);
        if (!frames.empty()) {
            const model::Frame& leaf = profile.frames->get(frames.front());
            const model::StringTable& strings = profile.frames->strings();
            label = std::string(strings.view(leaf.function));
            if (leaf.kind != model::FrameKind::marker && leaf.file.value != 0)
                label += " (" + output::short_filename(strings.view(leaf.file)) + ")";
        }
        self[label] += sample.weight_ns;
    }
    text += fmt::format("samples:  {}{}\n", output::with_commas(samples),
                        status.complete ? "" : " (the file was cut: see the warning)");
    auto share = [&](std::uint64_t part) {
        return weight == 0 ? 0.0 : 100.0 * static_cast<double>(part) / static_cast<double>(weight);
    };
    text += fmt::format("threads:  {}\n", by_thread.size());
    std::vector<std::pair<std::uint32_t, std::pair<std::uint64_t, std::uint64_t>>> threads(
        by_thread.begin(), by_thread.end());
    std::sort(threads.begin(), threads.end(),
              [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
    for (const auto& [index, time] : threads) {
        const model::ThreadInfo* t =
            index < profile.threads.size() ? &profile.threads[index] : nullptr;
        text += fmt::format("  {:>6.1f}%  {:>8}  {:<20} on-CPU {:.1f}%\n", share(time.first),
                            t != nullptr ? t->tid : 0, t != nullptr ? t->name : "?",
                            time.first == 0 ? 0.0
                                            : 100.0 * static_cast<double>(time.second) /
                                                  static_cast<double>(time.first));
    }
    std::vector<std::pair<std::string, std::uint64_t>> top(self.begin(), self.end());
    std::sort(top.begin(), top.end(),
              [](const auto& a, const auto& b) { return a.second > b.second; });
    text += "top functions (own time):\n";
    for (std::size_t i = 0; i < top.size() && i < 15; ++i)
        text += fmt::format("  {:>6.1f}%  {}\n", share(top[i].second), top[i].first);
    std::fputs(text.c_str(), stdout);
}

} // namespace

int run_report(const ReportOptions& options) {
    output::Format format = output::kDefaultFormat;
    if (!options.format.empty()) {
        auto parsed = output::parse_format(options.format);
        if (!parsed) {
            print_error(output::unknown_format_message(options.format));
            return 2;
        }
        format = *parsed;
    }
    if (options.calls) {
        if (!options.format.empty() && !output::needs_calls(format)) {
            print_error(fmt::format("--calls writes the calls table, -f {} another format: give "
                                    "one of them",
                                    options.format));
            return 2;
        }
        format = output::Format::calls;
    }
    // --calls prints its table; the other formats go beside the input unless -o says where.
    std::string path = !options.output.empty() ? options.output
                       : options.calls         ? std::string("-")
                                               : default_report_path(options.input, format);
    if (options.format.empty() && !options.calls) format = output::format_for_path(path);
    if (options.summary && output::needs_calls(format)) {
        print_error("--summary prints a summary, --calls (-f calls) the calls table: give one of "
                    "them");
        return 2;
    }
    if (options.top != 0 && !output::needs_calls(format)) {
        print_error("--top N limits the calls table: it goes with --calls or -f calls");
        return 2;
    }
    auto limit = input_limit();
    if (!limit) {
        print_error(limit.error().message);
        return 2;
    }
    auto opened = output::RawReader::open(options.input, *limit);
    if (!opened) {
        print_error(opened.error().message);
        return 1;
    }
    output::RawReader& reader = **opened;
    const std::uint64_t start = reader.info().start_unix_ns;
    model::Selection selection;
    for (auto [text, into] :
         {std::pair{&options.from, &selection.from_ns}, std::pair{&options.to, &selection.to_ns}}) {
        if (text->empty()) continue;
        auto at = parse_time_ns(into == &selection.from_ns ? "--from" : "--to", *text, start);
        if (!at) {
            print_error(at.error().message);
            return 2;
        }
        *into = *at;
    }
    if (selection.from_ns && selection.to_ns && *selection.to_ns <= *selection.from_ns) {
        print_error(fmt::format("--to {} is not after --from {}", options.to, options.from));
        return 2;
    }
    selection.threads = options.threads;
    selection.pids = options.pids;
    selection.cpu_only = options.mode == "cpu";
    selection.gil_only = options.gil;
    auto where = parse_labels("--where", options.where);
    if (!where) {
        print_error(where.error().message);
        return 2;
    }
    selection.labels = std::move(*where);

    std::vector<std::vector<std::string>> names;
    if (!selection.threads.empty()) {
        names = reader.thread_names();
        bool any = false;
        for (const std::string& wanted : selection.threads)
            for (std::size_t i = 0; i < names.size() && !any; ++i)
                any = std::find(names[i].begin(), names[i].end(), wanted) != names[i].end();
        // (A TID is matched by the selection itself; a name must exist.)
        bool numeric = std::all_of(
            selection.threads.begin(), selection.threads.end(), [](const std::string& t) {
                return !t.empty() && t.find_first_not_of("0123456789") == std::string::npos;
            });
        if (!any && !numeric) {
            std::string known;
            for (const auto& list : names)
                for (const std::string& name : list)
                    if (!name.empty() && known.find(name) == std::string::npos)
                        known += (known.empty() ? "" : ", ") + name;
            print_error(fmt::format("--thread {} matches no thread of {} (its threads: {})",
                                    output::join_words(selection.threads), options.input,
                                    known.empty() ? "none" : known));
            return 1;
        }
    }
    model::DisplayOptions display;
    display.per_thread_roots = options.per_thread;
    display.labels.full_filenames = options.full_filenames;
    display.labels.line_numbers = !options.nolineno;
    display.calls_style = output::calls_style_for_path(path);
    display.calls_top = options.top;
    model::FrameTransform transform{options.function, options.nolineno};
    output::SelectedProfile selected(reader, std::move(selection), std::move(names), transform,
                                     output::needs_timeline(format));
    if (output::needs_calls(format)) selected.track_calls(options.per_thread);
    output::RawReadStatus status = selected.replay();
    if (!status.complete)
        std::fprintf(stderr,
                     "spyglass: warning: %s was cut short: %s; read %s up to %.1f s (%s of %s "
                     "bytes)\n",
                     options.input.c_str(), status.problem.c_str(),
                     count_of(status.samples, "sample").c_str(),
                     static_cast<double>(status.last_time_ns) / 1e9,
                     output::with_commas(status.good_bytes).c_str(),
                     output::with_commas(status.file_bytes).c_str());
    else if (!status.problem.empty())
        std::fprintf(stderr, "spyglass: warning: %s: %s\n", options.input.c_str(),
                     status.problem.c_str());
    model::Profile profile = selected.profile(display);
    if (options.summary) {
        print_summary(options.input, reader, status, profile);
        return std::fflush(stdout) == 0 ? 0 : 1;
    }
    auto writer = output::make_writer(format);
    auto written = delivery::write_file_atomically(
        path, [&](std::FILE* out) { return writer->write(profile, out); });
    if (!written) {
        print_error(written.error().message);
        return 1;
    }
    std::fprintf(stderr, "spyglass: report: %s of %s%s; wrote %s to %s\n",
                 count_of(selected.kept(), "sample").c_str(),
                 count_of(status.samples, "sample").c_str(), status.complete ? "" : " (cut)",
                 output::format_name(format), path == "-" ? "standard output" : path.c_str());
    return 0;
}

} // namespace spyglass::cli
