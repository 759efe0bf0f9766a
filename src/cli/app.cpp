// The command line: CLI11 definitions of every subcommand, parsed into option structs.
#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "spyglass/cli/options.hpp"
#include "spyglass/cli/validate.hpp"

#ifndef SPYGLASS_VERSION
#define SPYGLASS_VERSION "0.0.0"
#endif

namespace spyglass::cli {

namespace {

void setup_logging(int verbosity) {
    auto logger = spdlog::stderr_color_mt("spyglass");
    logger->set_pattern("spyglass: %l: %v");
    logger->set_level(verbosity >= 2   ? spdlog::level::debug
                      : verbosity == 1 ? spdlog::level::info
                                       : spdlog::level::warn);
    spdlog::set_default_logger(logger);
}

void add_sampling_options(CLI::App* command, SamplingOptions& options) {
    check_pid(command->add_option("-p,--pid", options.pid,
                                  "PID of a running Python process to attach to"));
    check_rate(command->add_option("-r,--rate", options.rate, "Samples per second (default 100)"));
    check_duration(command->add_option(
        "-d,--duration", options.duration,
        "Seconds to sample, or unlimited (default: until Ctrl-C or the target exits)"));
    command
        ->add_option("--mode", options.mode,
                     "wall: every thread every tick, running or waiting (default); cpu: only "
                     "threads that were on a CPU")
        ->check(CLI::IsMember({"wall", "cpu"}));
    command->add_flag("--gil", options.gil, "Only samples of the thread holding the GIL");
    command->add_flag("-s,--subprocesses", options.subprocesses,
                      "Also sample child processes (and theirs) as they appear");
    command->add_flag("-b,--blocking", options.blocking,
                      "Pause each thread whose stack is read, for the length of the read "
                      "(consistent, but slows the target)");
    command->add_flag("--nonblocking", options.nonblocking,
                      "Never pause a thread, not even one whose stack changes faster than it "
                      "can be read (such samples are then counted as errors)");
    command->add_flag("-F,--function", options.function,
                      "Aggregate by function (its first line), not by the line being run");
    command->add_flag("--nolineno", options.nolineno, "Do not record line numbers");
    command->add_flag("--jitter", options.jitter,
                      "Randomize each tick within +-25% of the period, against aliasing with "
                      "periodic work");
    command->add_option("command", options.command,
                        "Command to launch and profile, after --, e.g. -- python3 app.py");
}

} // namespace

void print_error(const std::string& message) {
    std::fprintf(stderr, "spyglass: error: %s\n", message.c_str());
}

int run_cli(int argc, char** argv) {
    CLI::App app{"spyglass: a sampling profiler for running Python programs.\n"
                 "Attaches to a live process (or launches one) and reads its Python stacks from "
                 "outside, without stopping it.",
                 "spyglass"};
    app.set_version_flag("-V,--version", "spyglass " SPYGLASS_VERSION);
    app.require_subcommand(1);
    int verbosity = 0;
    app.add_flag("-v,--verbose", verbosity, "More diagnostics on stderr (repeat for debug output)");

    DumpOptions dump;
    CLI::App* dump_cmd = app.add_subcommand(
        "dump", "Print the Python stack of every thread of a running process, once");
    check_pid(dump_cmd->add_option("-p,--pid", dump.pid, "PID of the running Python process")
                  ->required());
    dump_cmd->add_flag("-j,--json", dump.json, "Print JSON (one object per thread) for scripts");
    dump_cmd->add_flag("-l,--locals", dump.locals,
                       "Also print each frame's arguments and local variables");
    dump_cmd->add_flag("-b,--blocking", dump.blocking,
                       "Pause each thread while its stack (and --locals) is read");
    dump_cmd->add_flag("--nonblocking", dump.nonblocking,
                       "Never pause a thread, not even one whose stack cannot be read running");

    RecordOptions record;
    CLI::App* record_cmd = app.add_subcommand(
        "record", "Sample a running process (or a command) and write a profile: flame graph, "
                  "folded stacks, pprof or speedscope");
    add_sampling_options(record_cmd, record.sampling);
    record_cmd->add_option("-o,--output", record.output,
                           "Output file; its extension picks the format (.svg, .txt, .pb.gz, "
                           ".json); - for standard output");
    record_cmd
        ->add_option("-f,--format", record.format,
                     "flamegraph, folded, pprof or speedscope (default: from the output's "
                     "extension, else flamegraph)")
        ->check(CLI::IsMember({"flamegraph", "folded", "pprof", "speedscope"}));
    record_cmd->add_flag("-t,--threads", record.threads, "A root frame per thread (id and name)");
    record_cmd->add_flag("--full-filenames", record.full_filenames,
                         "Show full source paths instead of shortened ones");

    TopOptions top;
    CLI::App* top_cmd = app.add_subcommand(
        "top", "Live view of the functions a running process (or a command) spends its time in");
    add_sampling_options(top_cmd, top.sampling);
    check_delay(top_cmd->add_option("--delay", top.delay, "Seconds between refreshes (default 1)"));
    top_cmd->add_flag("--once", top.once,
                      "No terminal UI: sample for --duration seconds (default 5), print the "
                      "table and exit");
    top_cmd->add_flag("--lines", top.lines, "Start with one row per line instead of per function");
    top_cmd->add_flag("--full-filenames", top.full_filenames,
                      "Show full source paths instead of shortened ones");

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        return report_parse_error(app, e);
    }
    setup_logging(verbosity);
    if (dump_cmd->parsed()) return run_dump(dump);
    if (record_cmd->parsed()) return run_record(record);
    if (top_cmd->parsed()) return run_top(top);
    return 2;
}

} // namespace spyglass::cli
