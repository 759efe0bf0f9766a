// The command line: CLI11 definitions of every subcommand, parsed into option structs.
#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "spyglass/cli/options.hpp"

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
    dump_cmd->add_option("-p,--pid", dump.pid, "PID of the running Python process")
        ->required()
        ->check(CLI::PositiveNumber);
    dump_cmd->add_flag("-j,--json", dump.json, "Print JSON (one object per thread) for scripts");
    dump_cmd->add_flag("-l,--locals", dump.locals,
                       "Also print each frame's arguments and local variables");
    dump_cmd->add_flag("-b,--blocking", dump.blocking,
                       "Stop the threads while reading them, for a consistent snapshot");

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        app.exit(e);
        return 2;
    }
    setup_logging(verbosity);
    if (dump_cmd->parsed()) return run_dump(dump);
    return 2;
}

} // namespace spyglass::cli
