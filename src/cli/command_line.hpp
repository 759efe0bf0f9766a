// The command line's definitions (CLI11), shared by the parser, the man page and the shell
// completions, so that none of them can describe an option the others do not know.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include <CLI/CLI.hpp>
#include <spdlog/formatter.h>

#include "spyglass/cli/options.hpp"

namespace spyglass::cli {

// Where the parsed values go.
struct CommandLine {
    int verbosity = 0;
    DumpOptions dump;
    RecordOptions record;
    TopOptions top;
    ReportOptions report;
    DiffOptions diff;
    std::string completions_shell; // bash | zsh | fish
};

// The whole command line: global options and the subcommands dump, record, top, completions.
// Option value names tell the completions what to offer: FILE (file names), PID (Python
// processes), and an IsMember set (its words).
std::unique_ptr<CLI::App> make_app(CommandLine& parsed);

// "spyglass: LEVEL: message", the message made terminal-safe (it quotes the target's names).
std::unique_ptr<spdlog::formatter> make_log_formatter();

// "spyglass 0.1.0 (commit 1a2b3c4)": the version and the commit it was built from.
std::string version_text();

// spyglass(1) in roff: one section per subcommand, options as the parser defines them.
std::string man_page(const CLI::App& app);

// The completion script for `shell` (bash, zsh or fish), from the same definitions.
std::string completion_script(const CLI::App& app, std::string_view shell);

// The subcommands and options the man page and completions describe: not hidden (a group).
std::vector<const CLI::App*> visible_subcommands(const CLI::App& app);
std::vector<const CLI::Option*> visible_options(const CLI::App& command);
// The value name without its validators' descriptions ("FILE" of "FILE:{a,b}"), empty for a
// flag; and the words of an IsMember set, if the option has one.
std::string value_name(const CLI::Option& option);
std::vector<std::string> value_choices(const CLI::Option& option);

} // namespace spyglass::cli
