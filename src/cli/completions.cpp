// `spyglass completions bash|zsh|fish`: completion scripts written from the CLI11 definitions
// of make_app. What an option's value completes to comes from its value name: FILE completes
// file names, PID the PIDs of running Python processes, an IsMember set its words; any other
// value (a number) completes to nothing.
#include "command_line.hpp"
#include <fmt/format.h>

namespace spyglass::cli {

namespace {

enum class ValueKind { none, file, pid, words, other };

ValueKind value_kind(const CLI::Option& option) {
    std::string name = value_name(option);
    if (name.empty()) return ValueKind::none;
    if (!value_choices(option).empty()) return ValueKind::words;
    if (name == "FILE") return ValueKind::file;
    if (name == "PID") return ValueKind::pid;
    return ValueKind::other;
}

std::vector<std::string> option_names(const CLI::Option& option) {
    std::vector<std::string> names;
    for (const std::string& name : option.get_snames())
        names.push_back("-" + name);
    for (const std::string& name : option.get_lnames())
        names.push_back("--" + name);
    return names;
}

std::string joined(const std::vector<std::string>& words, std::string_view separator) {
    std::string out;
    for (const std::string& word : words)
        out += (out.empty() ? "" : std::string(separator)) + word;
    return out;
}

// The choices of the command's positional argument (completions' shell), if it has any.
std::vector<std::string> positional_choices(const CLI::App& command) {
    for (const CLI::Option* option :
         command.get_options([](const CLI::Option* o) { return !o->nonpositional(); }))
        if (auto choices = value_choices(*option); !choices.empty()) return choices;
    return {};
}

bool takes_command(const CLI::App& command) {
    return !command.get_options([](const CLI::Option* o) { return o->get_name() == "command"; })
                .empty();
}

// --- bash ------------------------------------------------------------------------------------

void bash_value_cases(std::string& out, const CLI::App& command) {
    for (const CLI::Option* option : visible_options(command)) {
        ValueKind kind = value_kind(*option);
        if (kind == ValueKind::none) continue;
        out += fmt::format("            {})\n", joined(option_names(*option), "|"));
        if (kind == ValueKind::file)
            out += "                compopt -o filenames\n"
                   "                COMPREPLY=($(compgen -f -- \"$cur\"))\n";
        else if (kind == ValueKind::pid)
            out += "                COMPREPLY=($(compgen -W \"$(_spyglass_python_pids)\" -- "
                   "\"$cur\"))\n";
        else if (kind == ValueKind::words)
            out += fmt::format("                COMPREPLY=($(compgen -W \"{}\" -- \"$cur\"))\n",
                               joined(value_choices(*option), " "));
        out += "                return ;;\n";
    }
}

std::string bash_words(const CLI::App& command, bool with_subcommands) {
    std::vector<std::string> words;
    if (with_subcommands)
        for (const CLI::App* sub : visible_subcommands(command))
            words.push_back(sub->get_name());
    for (const CLI::Option* option : visible_options(command))
        for (const std::string& name : option_names(*option))
            words.push_back(name);
    for (const std::string& choice : positional_choices(command))
        words.push_back(choice);
    return joined(words, " ");
}

std::string bash_script(const CLI::App& app) {
    std::vector<std::string> names;
    for (const CLI::App* command : visible_subcommands(app))
        names.push_back(command->get_name());
    std::string out = R"(# bash completion for spyglass (written by: spyglass completions bash)
_spyglass_python_pids() {
    local dir comm
    for dir in /proc/[0-9]*; do
        read -r comm 2>/dev/null <"$dir/comm" || continue
        [[ $comm == python* ]] && printf '%s\n' "${dir#/proc/}"
    done
}

_spyglass() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
    local command="" i
    for ((i = 1; i < COMP_CWORD; i++)); do
        if [[ ${COMP_WORDS[i]} == -- && -n $command ]]; then
            # The command to launch, then its own arguments.
            if ((i == COMP_CWORD - 1)); then
                COMPREPLY=($(compgen -c -- "$cur"))
            else
                compopt -o filenames
                COMPREPLY=($(compgen -f -- "$cur"))
            fi
            return
        fi
        if [[ -z $command ]]; then
            case ${COMP_WORDS[i]} in
)";
    out += fmt::format("            {}) command=${{COMP_WORDS[i]}} ;;\n", joined(names, "|"));
    out += "            esac\n        fi\n    done\n    local words\n    case $command in\n";
    out += "    \"\")\n        case $prev in\n";
    bash_value_cases(out, app);
    out += fmt::format("        esac\n        words=\"{}\" ;;\n", bash_words(app, true));
    for (const CLI::App* command : visible_subcommands(app)) {
        out += fmt::format("    {})\n        case $prev in\n", command->get_name());
        bash_value_cases(out, *command);
        out += fmt::format("        esac\n        words=\"{}\" ;;\n", bash_words(*command, false));
    }
    out += "    esac\n    COMPREPLY=($(compgen -W \"$words\" -- \"$cur\"))\n}\n"
           "complete -F _spyglass spyglass\n";
    return out;
}

// --- zsh -------------------------------------------------------------------------------------

// Text inside a single-quoted zsh word, with `special` characters backslash-escaped: [ and ]
// in an _arguments [description], : in a _describe entry.
std::string zsh_quoted(std::string_view text, std::string_view special) {
    std::string out;
    for (char c : text) {
        if (c == '\'')
            out += "'\\''";
        else if (c == '\\' || special.find(c) != std::string_view::npos)
            out += std::string("\\") + c;
        else
            out.push_back(c);
    }
    return out;
}

std::string zsh_option_spec(const CLI::Option& option) {
    std::vector<std::string> names = option_names(option);
    // A counted flag (-v -v) may be repeated; any other option is given once.
    bool repeatable = option.get_multi_option_policy() == CLI::MultiOptionPolicy::TakeAll;
    std::string exclusive = repeatable ? "'*'" : "'(" + joined(names, " ") + ")'";
    std::string spec = exclusive + (names.size() > 1 ? "{" + joined(names, ",") + "}" : names[0]);
    spec += "'[" + zsh_quoted(option.get_description(), "[]") + "]";
    switch (value_kind(option)) {
    case ValueKind::none:
        break;
    case ValueKind::file:
        spec += ":file:_files";
        break;
    case ValueKind::pid:
        spec += ":PID:_spyglass_python_pids";
        break;
    case ValueKind::words:
        spec += ":" + value_name(option) + ":(" + joined(value_choices(option), " ") + ")";
        break;
    case ValueKind::other:
        spec += ":" + value_name(option) + ": ";
        break;
    }
    return spec + "'";
}

void zsh_arguments(std::string& out, const CLI::App& command, std::string_view indent,
                   std::string_view tail) {
    out += std::string(indent) + "_arguments -S -s \\\n";
    for (const CLI::Option* option : visible_options(command))
        out += fmt::format("{}  {} \\\n", indent, zsh_option_spec(*option));
    out += fmt::format("{}  {} && ret=0\n", indent, tail);
}

std::string zsh_script(const CLI::App& app) {
    std::string out = R"(#compdef spyglass
# zsh completion for spyglass (written by: spyglass completions zsh)
_spyglass_python_pids() {
  local -a pids
  local dir comm
  for dir in /proc/<->(N); do
    comm=$(<$dir/comm) 2>/dev/null || continue
    [[ $comm == python* ]] && pids+=(${dir:t})
  done
  compadd -a pids
}

_spyglass() {
  local curcontext=$curcontext state line ret=1
  typeset -A opt_args
)";
    zsh_arguments(out, app, "  ", "'1:command:->command' '*::option:->option'");
    out += "  case $state in\n  command)\n    local -a commands=(\n";
    for (const CLI::App* command : visible_subcommands(app))
        out += fmt::format("      '{}:{}'\n", command->get_name(),
                           zsh_quoted(command->get_description(), ":"));
    out += "    )\n    _describe -t commands 'spyglass command' commands && ret=0 ;;\n";
    out += "  option)\n    curcontext=${curcontext%:*}-$words[1]:\n    case $words[1] in\n";
    for (const CLI::App* command : visible_subcommands(app)) {
        out += fmt::format("    {})\n", command->get_name());
        std::string tail = "'*:: :_normal'";
        if (auto choices = positional_choices(*command); !choices.empty())
            tail = "'1:shell:(" + joined(choices, " ") + ")'";
        else if (!takes_command(*command))
            tail = "";
        zsh_arguments(out, *command, "      ", tail);
        out += "      ;;\n";
    }
    out += "    esac ;;\n  esac\n  return ret\n}\n\n_spyglass \"$@\"\n";
    return out;
}

// --- fish ------------------------------------------------------------------------------------

std::string fish_quoted(std::string_view text) {
    std::string out = "'";
    for (char c : text) {
        if (c == '\'' || c == '\\') out.push_back('\\');
        out.push_back(c);
    }
    return out + "'";
}

void fish_options(std::string& out, const CLI::App& command, const std::string& condition) {
    for (const CLI::Option* option : visible_options(command)) {
        std::string line = "complete -c spyglass -n " + fish_quoted(condition);
        for (const std::string& name : option->get_snames())
            line += " -s " + name;
        for (const std::string& name : option->get_lnames())
            line += " -l " + name;
        switch (value_kind(*option)) {
        case ValueKind::none:
            break;
        case ValueKind::file:
            line += " -r -F";
            break;
        case ValueKind::pid:
            line += " -x -a '(__spyglass_python_pids)'";
            break;
        case ValueKind::words:
            line += " -x -a " + fish_quoted(joined(value_choices(*option), " "));
            break;
        case ValueKind::other:
            line += " -x";
            break;
        }
        out += line + " -d " + fish_quoted(option->get_description()) + "\n";
    }
}

std::string fish_script(const CLI::App& app) {
    std::string out = R"(# fish completion for spyglass (written by: spyglass completions fish)
function __spyglass_python_pids
    for dir in /proc/[0-9]*
        read -l comm <$dir/comm 2>/dev/null; or continue
        string match -q 'python*' -- $comm; and string replace /proc/ '' -- $dir
    end
end

complete -c spyglass -f
)";
    fish_options(out, app, "__fish_use_subcommand");
    for (const CLI::App* command : visible_subcommands(app))
        out += fmt::format("complete -c spyglass -n __fish_use_subcommand -a {} -d {}\n",
                           command->get_name(), fish_quoted(command->get_description()));
    for (const CLI::App* command : visible_subcommands(app)) {
        std::string condition = "__fish_seen_subcommand_from " + command->get_name();
        fish_options(out, *command, condition);
        if (auto choices = positional_choices(*command); !choices.empty())
            out += fmt::format("complete -c spyglass -n {} -a {}\n", fish_quoted(condition),
                               fish_quoted(joined(choices, " ")));
    }
    return out;
}

} // namespace

std::string completion_script(const CLI::App& app, std::string_view shell) {
    if (shell == "zsh") return zsh_script(app);
    if (shell == "fish") return fish_script(app);
    return bash_script(app);
}

} // namespace spyglass::cli
