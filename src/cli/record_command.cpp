// spyglass record: sample for a while, then write a profile file.
#include <cmath>
#include <cstdio>
#include <ctime>

#include <fmt/format.h>
#include <unistd.h>

#include "spyglass/cli/launcher.hpp"
#include "spyglass/cli/options.hpp"
#include "spyglass/cli/output_file.hpp"
#include "spyglass/cli/signals.hpp"
#include "spyglass/cli/summary.hpp"
#include "spyglass/output/writer.hpp"
#include "spyglass/sampling/aggregator.hpp"

namespace spyglass::cli {

namespace {

std::string default_output_path(output::Format format) {
    std::time_t now = std::time(nullptr);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
    const char* extension = format == output::Format::folded       ? "txt"
                            : format == output::Format::pprof      ? "pb.gz"
                            : format == output::Format::speedscope ? "json"
                                                                   : "svg";
    return fmt::format("spyglass-{}.{}", stamp, extension);
}

class StatusLine {
  public:
    StatusLine(double duration, double rate)
        : duration_(std::isinf(duration) ? 0 : duration), rate_(rate), tty_(::isatty(2) != 0) {}
    void update(const sampling::Progress& p) {
        if (!tty_) return;
        double elapsed = static_cast<double>(p.elapsed_ns) / 1e9;
        std::string when = duration_ > 0 ? fmt::format("{:.1f}s/{:.0f}s", elapsed, duration_)
                                         : fmt::format("{:.1f}s", elapsed);
        std::string text =
            p.waiting ? fmt::format("spyglass: {} waiting for a Python interpreter...", when)
                      : fmt::format("spyglass: {}  {}  {:.1f} Hz (of {:g})  {}  (Ctrl-C to stop)",
                                    when, count_of(p.samples, "sample"),
                                    achieved_rate(p.ticks, p.elapsed_ns, rate_), rate_,
                                    count_of(p.errors, "error"));
        std::fprintf(stderr, "\r\033[K%s", text.c_str());
        shown_ = true;
    }
    void clear() {
        if (shown_) std::fprintf(stderr, "\r\033[K");
        shown_ = false;
    }

  private:
    double duration_, rate_;
    bool tty_;
    bool shown_ = false;
};

} // namespace

int run_record(const RecordOptions& options) {
    ignore_sigpipe();
    output::Format format = output::Format::flamegraph;
    if (!options.format.empty()) {
        auto parsed = output::parse_format(options.format);
        if (!parsed) {
            print_error(fmt::format(
                "unknown format {}: use flamegraph, folded, pprof or speedscope", options.format));
            return 2;
        }
        format = *parsed;
    } else if (!options.output.empty()) {
        format = output::format_for_path(options.output);
    }
    auto writer = output::make_writer(format);
    if (!writer) {
        print_error(fmt::format("the {} format is not available", output::format_name(format)));
        return 1;
    }
    // Found before attaching: an output that cannot be written.
    auto out =
        OutputFile::open(options.output.empty() ? default_output_path(format) : options.output);
    if (!out) {
        print_error(out.error().message);
        return 1;
    }

    const std::atomic<int>& stop = install_stop_handlers();
    sampling::FrameTable frames;
    sampling::StackTable stacks;
    auto started = start_session(options.sampling, frames, stacks);
    if (!started) {
        print_error(started.error().message);
        return started.error().code == Errc::invalid_argument ? 2 : 1;
    }
    sampling::SampleMode mode =
        options.sampling.mode == "cpu" ? sampling::SampleMode::cpu : sampling::SampleMode::wall;
    sampling::Aggregator aggregator(frames, stacks, output::needs_timeline(format), mode,
                                    options.sampling.gil);
    StatusLine status(options.sampling.duration, options.sampling.rate);
    sampling::SessionResult result = started->session->run(
        aggregator, stop, [&](const sampling::Progress& progress) { status.update(progress); });
    status.clear();

    sampling::ProfileInfo info;
    info.command = started->command;
    info.pids = result.pids;
    info.python_version = result.python_version;
    info.mode = mode;
    info.gil_only = options.sampling.gil;
    info.per_thread_roots = options.threads;
    info.per_process_roots = result.pids.size() > 1 || options.sampling.subprocesses;
    info.rate_hz = options.sampling.rate;
    info.period_ns = static_cast<std::uint64_t>(1e9 / options.sampling.rate);
    info.start_unix_ns = result.start_unix_ns;
    info.duration_ns = result.totals.elapsed_ns;
    info.samples = result.totals.samples;
    info.ticks = result.totals.ticks;
    info.late_ticks = result.totals.late_ticks;
    info.errors = result.totals.errors;
    info.labels.full_filenames = options.full_filenames;
    info.labels.line_numbers = !options.sampling.nolineno;
    if (result.pids.empty()) {
        // Launch mode and no interpreter was ever sampled: an empty profile would only hide it.
        int exit_status = finish(*started);
        std::string command = output::join_words(started->command);
        if (result.end != sampling::SessionEnd::targets_exited)
            print_error(fmt::format("`{}` did not start a Python interpreter in {:.1f} s: no "
                                    "profile written",
                                    command, static_cast<double>(result.totals.elapsed_ns) / 1e9));
        else if (result.found_interpreter)
            print_error(fmt::format("`{}` exited before its Python interpreter could be sampled: "
                                    "no profile written",
                                    command));
        else
            print_error(fmt::format("`{}` is not a Python program (it never ran a Python "
                                    "interpreter): no profile written",
                                    command));
        return exit_status != 0 ? exit_status : 1;
    }
    sampling::Profile profile = aggregator.profile(info);

    auto stream = out->begin_write();
    Result<void> written =
        stream ? writer->write(profile, *stream) : std::unexpected(stream.error());
    written = out->finish(std::move(written));
    if (!written) {
        print_error(written.error().message);
        finish(*started);
        return 1;
    }

    double achieved =
        achieved_rate(result.totals.ticks, result.totals.elapsed_ns, options.sampling.rate);
    double error_share = result.totals.samples > 0
                             ? 100.0 * static_cast<double>(result.totals.errors) /
                                   static_cast<double>(result.totals.samples)
                             : 0;
    std::string ending;
    if (result.end == sampling::SessionEnd::targets_exited)
        ending = result.pids.empty() ? "the command exited before its Python interpreter started; "
                 : started->child    ? "the command exited; "
                                     : "the target exited; ";
    if (std::string warning = pause_failure_warning(result.pauses); !warning.empty())
        std::fprintf(stderr, "spyglass: warning: %s\n", warning.c_str());
    std::fprintf(stderr,
                 "spyglass: %s%s in %s s at %s Hz (asked %g), %s, %s (%.2f%%)%s; wrote %s to %s\n",
                 ending.c_str(), count_of(aggregator.kept_samples(), "sample").c_str(),
                 seconds_text(result.totals.elapsed_ns).c_str(), rate_text(achieved).c_str(),
                 options.sampling.rate, count_of(result.totals.late_ticks, "late tick").c_str(),
                 count_of(result.totals.errors, "sampling error").c_str(), error_share,
                 pause_summary(result.pauses).c_str(), output::format_name(format),
                 out->path() == "-" ? "standard output" : out->path().c_str());
    return finish(*started);
}

} // namespace spyglass::cli
