// spyglass record: sample for a while, then write a profile file.
#include <cmath>
#include <cstdio>
#include <ctime>
#include <optional>

#include <fmt/format.h>

#include "spyglass/cli/launcher.hpp"
#include "spyglass/cli/options.hpp"
#include "spyglass/cli/status_line.hpp"
#include "spyglass/cli/summary.hpp"
#include "spyglass/cli/validate.hpp"
#include "spyglass/delivery/atomic_file.hpp"
#include "spyglass/delivery/continuous.hpp"
#include "spyglass/delivery/output_file.hpp"
#include "spyglass/model/aggregator.hpp"
#include "spyglass/output/calls.hpp"
#include "spyglass/output/writer.hpp"
#include "spyglass/signals.hpp"

namespace spyglass::cli {

namespace {

std::string default_output_path(output::Format format) {
    std::time_t now = std::time(nullptr);
    char stamp[32];
    std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", std::localtime(&now));
    return fmt::format("spyglass-{}.{}", stamp, output::default_extension(format));
}

// --window without -o: one file per window, named by its start.
std::string default_window_pattern(output::Format format) {
    std::string single = default_output_path(format);
    return "spyglass-%Y%m%d-%H%M%S" + single.substr(single.find('.'));
}

// The display choices of record's command line.
model::DisplayOptions record_display(const RecordOptions& options) {
    model::DisplayOptions display;
    display.per_thread_roots = options.threads;
    display.labels.full_filenames = options.full_filenames;
    display.labels.line_numbers = !options.sampling.nolineno;
    display.calls_style = output::calls_style_for_path(options.output);
    return display;
}

// What the delivery layer is asked for; --keep was checked as the command line was parsed.
Result<delivery::RecordDeliveryOptions> delivery_options(const RecordOptions& options) {
    delivery::RecordDeliveryOptions delivered;
    delivered.raw = options.raw;
    delivered.window = options.window;
    delivered.keep = options.keep;
    if (!options.keep.empty()) {
        auto keep = parse_span_ns(options.keep);
        if (!keep) return fail(Errc::invalid_argument, "--keep {}", keep.error().message);
        delivered.keep_ns = *keep;
    }
    delivered.push = options.push;
    delivered.app = options.app;
    delivered.tags = options.tags;
    // What every sample is labelled with is also what the pushed profiles are tagged with.
    if (!options.push.empty())
        delivered.tags.insert(delivered.tags.end(), options.sampling.labels.begin(),
                              options.sampling.labels.end());
    delivered.push_headers = options.push_headers;
    delivered.push_timeout = options.push_timeout;
    delivered.pid = options.sampling.pid;
    delivered.rate = options.sampling.rate;
    delivered.function = options.sampling.function;
    delivered.nolineno = options.sampling.nolineno;
    delivered.display = record_display(options);
    return delivered;
}

// The sampling options the session starts with, as the deliveries need them.
SamplingOptions session_sampling(const SamplingOptions& asked,
                                 const delivery::RecordExtras& extras) {
    SamplingOptions out = asked;
    if (extras.keeps_every_line()) {
        out.function = false;
        out.nolineno = false;
    }
    if (std::size_t limit = extras.table_limit(); limit != 0) out.table_limit = limit;
    return out;
}

} // namespace

int run_record(const RecordOptions& options) {
    ignore_sigpipe();
    output::Format format = output::kDefaultFormat;
    if (!options.format.empty()) {
        auto parsed = output::parse_format(options.format);
        if (!parsed) {
            print_error(output::unknown_format_message(options.format));
            return 2;
        }
        format = *parsed;
    } else if (!options.output.empty()) {
        format = output::format_for_path(options.output);
    }
    if (output::needs_calls(format) && options.window > 0) {
        print_error("-f calls makes one table of the whole recording, not one per --window: "
                    "record with --raw FILE and run spyglass report FILE -f calls --from/--to "
                    "for a slice");
        return 2;
    }
    auto writer = output::make_writer(format);
    if (!writer) {
        print_error(fmt::format("the {} format is not available", output::format_name(format)));
        return 1;
    }
    // Found before attaching: an output that cannot be written. With --window -o is a pattern
    // for the window files (none with --push alone).
    const bool windowed = options.window > 0;
    std::string path = !options.output.empty() ? options.output
                       : !windowed             ? default_output_path(format)
                       : options.push.empty()  ? default_window_pattern(format)
                                               : std::string();
    std::optional<delivery::OutputFile> out;
    if (!windowed) {
        auto opened = delivery::OutputFile::open(path);
        if (!opened) {
            print_error(opened.error().message);
            return 1;
        }
        out.emplace(std::move(*opened));
    }
    model::FrameTable frames;
    model::StackTable stacks;
    auto delivered = delivery_options(options);
    if (!delivered) {
        print_error(delivered.error().message);
        return 2;
    }
    auto extras = delivery::RecordExtras::open(*delivered, format, path, frames, stacks);
    if (!extras) {
        print_error(extras.error().message);
        return extras.error().code == Errc::invalid_argument ? 2 : 1;
    }

    const std::atomic<int>& stop = install_stop_handlers();
    auto started = start_session(session_sampling(options.sampling, **extras), frames, stacks);
    if (!started) {
        print_error(started.error().message);
        return started.error().code == Errc::invalid_argument ? 2 : 1;
    }
    (*extras)->set_target(started->child ? started->child->pid() : options.sampling.pid);
    model::Aggregator aggregator((*extras)->whole_frames(), (*extras)->whole_stacks(),
                                 output::needs_timeline(format));
    if (output::needs_calls(format)) aggregator.track_calls(options.threads);
    // A launched command writes to the same terminal: no line for its output to land on.
    StatusLine status(options.sampling.duration, options.sampling.rate,
                      !options.hide_progress && !started->child);
    sampling::SessionResult session =
        started->session->run((*extras)->sink(aggregator), stop,
                              [&](const sampling::Progress& progress) { status.update(progress); });
    status.clear();
    const model::RecordingTotals& result = session.totals;

    model::DisplayOptions display = record_display(options);
    const bool extras_ok = (*extras)->finish(static_cast<double>(result.elapsed_ns) / 1e9);
    if (result.pids.empty()) {
        // Launch mode and no interpreter was ever sampled: an empty profile would only hide it.
        int exit_status = finish(*started);
        std::string command = output::join_words(started->command);
        if (result.end != model::RecordingEnd::targets_exited)
            print_error(fmt::format("`{}` did not start a Python interpreter in {:.1f} s: no "
                                    "profile written",
                                    command, static_cast<double>(result.elapsed_ns) / 1e9));
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
    model::Profile profile = aggregator.profile(display);

    Result<void> written;
    if (windowed) {
        // The windows were the output (RecordExtras told where).
    } else {
        // Also after a SIGUSR1 wrote the recording so far: the temporary file is renamed over
        // that one.
        auto stream = out->begin_write();
        written = stream ? writer->write(profile, *stream) : std::unexpected(stream.error());
        written = out->finish(std::move(written));
    }
    if (!written) {
        print_error(written.error().message);
        finish(*started);
        return 1;
    }

    std::string ending;
    if (result.end == model::RecordingEnd::targets_exited)
        ending = result.pids.empty() ? "the command exited before its Python interpreter started; "
                 : started->child    ? "the command exited; "
                                     : "the target exited; ";
    for (const std::string& warning :
         {pause_failure_warning(result.pauses), dropped_warning(result)})
        if (!warning.empty()) std::fprintf(stderr, "spyglass: warning: %s\n", warning.c_str());
    std::string wrote = windowed
                            ? std::string()
                            : fmt::format("; wrote {} to {}", output::format_name(format),
                                          out->path() == "-" ? "standard output" : out->path());
    std::fprintf(stderr, "spyglass: %s\n",
                 record_summary(result, windowed ? result.samples : aggregator.kept_samples(),
                                options.sampling.rate, ending, wrote)
                     .c_str());
    int exit_status = finish(*started);
    return exit_status == 0 && !extras_ok ? 1 : exit_status;
}

} // namespace spyglass::cli
