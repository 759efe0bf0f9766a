// spyglass record: sample for a while, then write a profile file.
#include <cstdio>
#include <ctime>

#include <fmt/format.h>

#include "spyglass/cli/launcher.hpp"
#include "spyglass/cli/options.hpp"
#include "spyglass/cli/output_file.hpp"
#include "spyglass/cli/signals.hpp"
#include "spyglass/cli/status_line.hpp"
#include "spyglass/output/writer.hpp"
#include "spyglass/sampling/aggregator.hpp"

namespace spyglass::cli {

namespace {

std::string default_output_path(output::Format format) {
    std::time_t now = std::time(nullptr);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
    const char* extension = format == output::Format::folded        ? "txt"
                            : format == output::Format::pprof       ? "pb.gz"
                            : format == output::Format::speedscope  ? "json"
                            : format == output::Format::chrometrace ? "trace.json"
                                                                    : "svg";
    return fmt::format("spyglass-{}.{}", stamp, extension);
}

} // namespace

int run_record(const RecordOptions& options) {
    ignore_sigpipe();
    output::Format format = output::Format::flamegraph;
    if (!options.format.empty()) {
        auto parsed = output::parse_format(options.format);
        if (!parsed) {
            print_error(fmt::format(
                "unknown format {}: use flamegraph, folded, pprof, speedscope or chrometrace",
                options.format));
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
    // A launched command writes to the same terminal: no line for its output to land on.
    StatusLine status(options.sampling.duration, options.sampling.rate,
                      !options.hide_progress && !started->child);
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
    sampling::Profile profile = aggregator.profile(info);

    auto stream = out->begin_write();
    Result<void> written =
        stream ? writer->write(profile, *stream) : std::unexpected(stream.error());
    if (written) written = out->commit();
    if (!written) {
        print_error(written.error().message);
        finish(*started);
        return 1;
    }

    double seconds = static_cast<double>(result.totals.elapsed_ns) / 1e9;
    double achieved = seconds > 0 ? static_cast<double>(result.totals.ticks) / seconds : 0;
    double error_share = result.totals.samples > 0
                             ? 100.0 * static_cast<double>(result.totals.errors) /
                                   static_cast<double>(result.totals.samples)
                             : 0;
    std::string ending;
    if (result.end == sampling::SessionEnd::targets_exited)
        ending = result.pids.empty() ? "the command exited before its Python interpreter started; "
                 : started->child    ? "the command exited; "
                                     : "the target exited; ";
    std::fprintf(
        stderr,
        "spyglass: %s%s samples in %.1f s at %.1f Hz (asked %g), %s late ticks, %s "
        "sampling errors (%.2f%%); wrote %s to %s\n",
        ending.c_str(), output::with_commas(aggregator.kept_samples()).c_str(), seconds, achieved,
        options.sampling.rate, output::with_commas(result.totals.late_ticks).c_str(),
        output::with_commas(result.totals.errors).c_str(), error_share, output::format_name(format),
        out->path() == "-" ? "standard output" : out->path().c_str());
    return finish(*started);
}

} // namespace spyglass::cli
