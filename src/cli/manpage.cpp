// spyglass(1), written from the CLI11 definitions of make_app: a section per subcommand whose
// options are exactly the parser's (their names, value names, choices and help text), with the
// prose around them kept here.
#include <algorithm>
#include <cctype>

#include "command_line.hpp"
#include <fmt/format.h>

#include "spyglass/output/formats.hpp"

namespace spyglass::cli {

std::vector<const CLI::App*> visible_subcommands(const CLI::App& app) {
    return app.get_subcommands(
        [](const CLI::App* command) { return !command->get_group().empty(); });
}

std::vector<const CLI::Option*> visible_options(const CLI::App& command) {
    return command.get_options([](const CLI::Option* option) {
        return option->nonpositional() && !option->get_group().empty();
    });
}

std::string value_name(const CLI::Option& option) {
    if (option.get_expected_max() == 0 || option.get_type_size_max() == 0) return {};
    std::string name = option.get_type_name();
    return name.substr(0, name.find(':'));
}

std::vector<std::string> value_choices(const CLI::Option& option) {
    std::string name = option.get_type_name();
    std::size_t open = name.find(":{"), close = name.rfind('}');
    if (open == std::string::npos || close == std::string::npos || close < open) return {};
    std::vector<std::string> words;
    std::string word;
    for (char c : name.substr(open + 2, close - open - 2)) {
        if (c == ',') {
            words.push_back(word);
            word.clear();
        } else {
            word.push_back(c);
        }
    }
    words.push_back(word);
    return words;
}

namespace {

// Prose for roff: backslashes escaped, no line may start with a control character.
std::string roff(std::string_view text) {
    std::string out;
    bool line_start = true;
    for (char c : text) {
        if (line_start && (c == '.' || c == '\'')) out += "\\&";
        if (c == '\\')
            out += "\\e";
        else
            out.push_back(c);
        line_start = c == '\n';
    }
    return out;
}

// An option name or command word: hyphens are real hyphens (\-), bold.
std::string roff_word(std::string_view word) {
    std::string out = "\\fB";
    for (char c : word) {
        if (c == '-')
            out += "\\-";
        else
            out.push_back(c);
    }
    return out + "\\fR";
}

std::string option_heading(const CLI::Option& option) {
    std::string out;
    for (const std::string& name : option.get_snames())
        out += (out.empty() ? "" : ", ") + roff_word("-" + name);
    for (const std::string& name : option.get_lnames())
        out += (out.empty() ? "" : ", ") + roff_word("--" + name);
    if (std::string value = value_name(option); !value.empty()) out += " \\fI" + value + "\\fR";
    return out;
}

void append_options(std::string& out, const CLI::App& command) {
    for (const CLI::Option* option : visible_options(command)) {
        out += ".TP\n" + option_heading(*option) + "\n" + roff(option->get_description());
        std::vector<std::string> choices = value_choices(*option);
        bool described = true;
        for (const std::string& choice : choices)
            described = described && option->get_description().find(choice) != std::string::npos;
        if (!described) {
            out += " (one of:";
            for (const std::string& choice : choices)
                out += " " + roff_word(choice);
            out += ")";
        }
        out += "\n";
    }
}

struct CommandProse {
    std::string_view name;
    std::string_view synopsis;  // roff
    std::string_view details;   // roff, after the options
    bool formats_first = false; // details begin with formats_paragraph()
};

// How record picks its format, from the format table: "... extension: .svg flame graph, ...,
// .trace.json Chrome trace (Perfetto, chrome://tracing). "
std::string formats_paragraph() {
    std::string out = ".PP\nThe format comes from \\fB\\-\\-format\\fR, else from the output's "
                      "extension: ";
    for (const output::FormatInfo& info : output::kFormats) {
        if (info.format != output::kFormats[0].format) out += ", ";
        out += fmt::format("\\fB{}\\fR {}", info.extensions[0], info.description);
        if (!info.viewer.empty()) out += fmt::format(" ({})", info.viewer);
    }
    return out + ". ";
}

constexpr CommandProse kProse[] = {
    {"dump", "\\fBspyglass dump\\fR \\fB\\-\\-pid\\fR \\fIPID\\fR [\\fIoptions\\fR]",
     ".PP\nOne look at every thread: its id, name, whether it was on a CPU (active) or "
     "waiting (idle), whether it held the GIL, and its Python stack, innermost frame first. "
     "Source paths are shortened as in \\fBrecord\\fR unless \\fB\\-\\-full\\-filenames\\fR; the "
     "JSON output always carries full paths. With \\fB\\-\\-subprocesses\\fR each Python "
     "process is dumped once, the target first, then its descendants (with \\fB\\-\\-json\\fR, "
     "one JSON object per line, one per process).\n"},
    {"record",
     "\\fBspyglass record\\fR [\\fIoptions\\fR] \\fB\\-\\-pid\\fR \\fIPID\\fR\n.br\n"
     "\\fBspyglass record\\fR [\\fIoptions\\fR] \\fB\\-\\-\\fR \\fIcommand\\fR [\\fIargs\\fR...]",
     "Without \\fB\\-o\\fR the file is spyglass\\-\\fIdate\\fR\\-\\fItime\\fR with that extension "
     "in "
     "the current directory.\n.PP\nCtrl\\-C or SIGTERM stops the recording and writes what was "
     "collected; a second Ctrl\\-C aborts. A target that exits leaves a complete file too. "
     "When attached on a terminal a progress line shows (a bar with \\fB\\-d\\fR); a launched "
     "command owns the terminal, so then there is none. One summary line ends the recording.\n"
     ".PP\n\\fB\\-\\-raw\\fR \\fIFILE\\fR keeps every sample (beside any other output) for "
     "\\fBspyglass report\\fR; a file cut by SIGKILL or a full disk reads up to its last "
     "block. \\fB\\-\\-window\\fR \\fISECONDS\\fR writes one profile per window, "
     "named by the strftime pattern of \\fB\\-o\\fR from the window's start, each file "
     "written whole (a temporary file renamed); \\fB\\-\\-keep\\fR deletes the window "
     "files this recording wrote once they are older than its duration. SIGUSR1 writes the "
     "current window at once (without \\fB\\-\\-window\\fR: the whole recording so far, "
     "to \\fB\\-o\\fR) and the recording goes on. \\fB\\-\\-push\\fR sends each "
     "window as pprof to a Pyroscope\\-compatible \\fB/ingest\\fR endpoint, named "
     "\\fIAPP\\fR{\\fItags\\fR,hostname=,pid=}, from a bounded queue with retries; what "
     "could not be sent is counted in the summary. At the end spyglass waits for the last "
     "windows one \\fB\\-\\-push\\-timeout\\fR at most; a Ctrl\\-C then gives up on them.\n",
     true},
    {"report",
     "\\fBspyglass report\\fR \\fIFILE\\fR [\\fIoptions\\fR] [\\fB\\-o\\fR \\fIOUTPUT\\fR]",
     ".PP\nAny format \\fBrecord\\fR writes, from the samples of a raw recording that fall "
     "in the slice: \\fB\\-\\-from\\fR (inclusive) and \\fB\\-\\-to\\fR (exclusive) "
     "in seconds from the start or as wall\\-clock times, threads, processes, on\\-CPU or "
     "GIL samples only. A file that was cut short is read up to its last whole block and a "
     "warning says where it ends. A file of a newer format version is refused.\n"
     ".PP\nThe input of \\fBreport\\fR and \\fBdiff\\fR may be a pipe "
     "(\\fB/dev/stdin\\fR); a directory or a device is refused. What is held in memory whole "
     "(a pprof or folded file, a decompressed pprof, anything read from a pipe) stops at 256 "
     "MiB: \\fBSPYGLASS_MAX_INPUT_MB\\fR raises it.\n"},
    {"diff",
     "\\fBspyglass diff\\fR \\fIBASE\\fR \\fINEW\\fR [\\fB\\-o\\fR \\fIdiff.svg\\fR] "
     "[\\fB\\-\\-top\\fR \\fIN\\fR]",
     ".PP\nBoth files may be pprof, raw recordings or folded stacks. Shares are of all the "
     "samples of each file, so recordings of different lengths compare; a frame's self share "
     "is where its thread was (its innermost Python frame), its total share every sample it "
     "is on.\n"},
    {"top", "\\fBspyglass top\\fR [\\fIoptions\\fR] \\fB\\-\\-pid\\fR \\fIPID\\fR",
     ".PP\nOne row per function (or line) with its own and total share of the samples and the "
     "on\\-CPU part of its own time. Keys: \\fB1\\fR...\\fB6\\fR sort, \\fBl\\fR lines or "
     "functions, \\fBi\\fR interval or cumulative, \\fBt\\fR/\\fBT\\fR thread filter, "
     "\\fBc\\fR wall or cpu view, \\fBp\\fR pause, \\fBr\\fR reset, \\fBh\\fR help, "
     "\\fBq\\fR quit. With \\fB\\-\\-once\\fR, or when standard output is not a terminal, it "
     "prints plain tables instead.\n"},
    {"completions", "\\fBspyglass completions\\fR \\fBbash\\fR|\\fBzsh\\fR|\\fBfish\\fR",
     ".PP\nFor the current shell: \\fBsource <(spyglass completions bash)\\fR. Installed "
     "packages put them where each shell looks already.\n"},
    {"manpage", "\\fBspyglass manpage\\fR",
     ".PP\nThis page, for a machine where only the binary was copied: "
     "\\fBspyglass manpage | man \\-l \\-\\fR.\n"},
};

constexpr std::string_view kEnd = R"(.SH PERMISSIONS
Reading another process needs ptrace rights: root, or the process's user with
\fBkernel.yama.ptrace_scope\fR at 0, or the capability CAP_SYS_PTRACE
(\fBsetcap cap_sys_ptrace+ep /usr/bin/spyglass\fR). In a container, start it with
\fB\-\-cap\-add SYS_PTRACE\fR. spyglass says so when it is refused.
.SH EXIT STATUS
0 on success; 1 when the target cannot be read or the output cannot be written; 2 for a
command-line error. In launch mode (\fB\-\-\fR \fIcommand\fR) spyglass exits with the
command's exit status.
.SH EXAMPLES
.nf
spyglass dump \-\-pid 12345
spyglass record \-\-pid 12345 \-d 30 \-o profile.svg
spyglass record \-f raw \-o out.txt \-\- python3 app.py
spyglass record \-\-pid 12345 \-d 300 \-\-raw incident.sgr
spyglass report incident.sgr \-o cpu.svg \-\-mode cpu \-\-from 120 \-\-to 180
spyglass record \-\-pid 12345 \-\-window 60 \-o 'prof\-%Y%m%dT%H%M%S.pb.gz' \-\-keep 24h
spyglass diff base.pb.gz new.pb.gz \-o diff.svg
spyglass top \-\-pid 12345
.fi
.SH "SEE ALSO"
\fBpy\-spy\fR(1), \fBgo tool pprof\fR, \fBflamegraph.pl\fR, https://www.speedscope.app,
https://ui.perfetto.dev. The README's table lists every difference from py\-spy's options.
)";

} // namespace

std::string man_page(const CLI::App& app) {
    std::string out = fmt::format(".TH SPYGLASS 1 \"\" \"{}\" \"User Commands\"\n", version_text());
    out += ".SH NAME\nspyglass \\- a sampling profiler for running Python programs\n";
    out += ".SH SYNOPSIS\n\\fBspyglass\\fR [\\fB\\-v\\fR] \\fIcommand\\fR [\\fIoptions\\fR]\n";
    out += ".br\n\\fBspyglass\\fR \\fB\\-\\-version\\fR | \\fB\\-\\-help\\fR\n";
    out += ".PP\nCommands:";
    for (const CLI::App* command : visible_subcommands(app))
        out += " " + roff_word(command->get_name());
    out += ".\n.SH DESCRIPTION\n" + roff(app.get_description()) + "\n";
    out += ".PP\nIt tags every sample on\\-CPU or waiting from the kernel's view of the thread, "
           "and writes " +
           output::format_descriptions_text("and") +
           " files, a live top view, or one dump of every thread's stack.\n";
    out += ".SH \"GLOBAL OPTIONS\"\n";
    append_options(out, app);
    for (const CLI::App* command : visible_subcommands(app)) {
        std::string name = command->get_name();
        std::transform(name.begin(), name.end(), name.begin(),
                       [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
        out += fmt::format(".SH \"SPYGLASS {}\"\n", name);
        const CommandProse* prose = nullptr;
        for (const CommandProse& entry : kProse)
            if (entry.name == command->get_name()) prose = &entry;
        if (prose != nullptr) out += std::string(prose->synopsis) + "\n.PP\n";
        out += roff(command->get_description()) + ".\n";
        if (!visible_options(*command).empty()) out += ".PP\nOptions:\n";
        append_options(out, *command);
        if (prose != nullptr && prose->formats_first) out += formats_paragraph();
        if (prose != nullptr) out += prose->details;
    }
    out += kEnd;
    return out;
}

} // namespace spyglass::cli
