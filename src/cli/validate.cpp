#include "spyglass/cli/validate.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>

#include <CLI/CLI.hpp>

namespace spyglass::cli {

namespace {

// The value as the user typed it, quoted, for the message (cut if it is long).
std::string quoted(std::string_view text) {
    constexpr std::size_t kMax = 40;
    std::string shown(text.substr(0, kMax));
    if (text.size() > kMax) shown += "...";
    return "'" + shown + "'";
}

// A finite decimal number, all of `text` ("+" allowed in front); nothing else.
std::optional<double> parse_number(std::string_view text) {
    if (!text.empty() && text.front() == '+') text.remove_prefix(1);
    if (text.empty()) return std::nullopt;
    double value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size() || !std::isfinite(value))
        return std::nullopt;
    return value;
}

bool equals_nocase(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (std::tolower(static_cast<unsigned char>(a[i])) != b[i]) return false;
    return true;
}

// A CLI11 transform that runs `parse` on the value and replaces it by `normalize(value)`.
// The value's name is the option's type name: a validator's description would be appended
// to it ("INT:PID"), and the completions and the man page read the first part.
template <class Parse, class Normalize>
void transform(CLI::Option* option, Parse parse, Normalize normalize, std::string value_name) {
    option
        ->transform(CLI::Validator(
            [parse, normalize](std::string& text) -> std::string {
                auto value = parse(text);
                if (!value) return value.error().message;
                text = normalize(*value);
                return {};
            },
            ""))
        ->type_name(std::move(value_name));
}

std::string number_text(double value) {
    if (std::isinf(value)) return "inf";
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "%.17g", value);
    return buffer;
}

} // namespace

Result<pid_t> parse_pid(std::string_view text) {
    std::string_view digits = text;
    if (!digits.empty() && digits.front() == '+') digits.remove_prefix(1);
    long long value = 0;
    auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || value < 1 ||
        value > std::numeric_limits<std::int32_t>::max())
        return fail(Errc::invalid_argument,
                    "--pid must be a process id (a positive integer), not {}", quoted(text));
    return static_cast<pid_t>(value);
}

Result<double> parse_duration(std::string_view text) {
    if (equals_nocase(text, "unlimited")) return std::numeric_limits<double>::infinity();
    auto value = parse_number(text);
    if (value && *value > kMaxDuration)
        return fail(Errc::invalid_argument,
                    "--duration {} is too long: at most {:.0f} seconds (31 years), or 'unlimited'",
                    quoted(text), kMaxDuration);
    if (!value || !(*value > 0))
        return fail(Errc::invalid_argument,
                    "--duration must be a number of seconds > 0, or 'unlimited', not {}",
                    quoted(text));
    return *value;
}

Result<double> parse_rate(std::string_view text) {
    auto value = parse_number(text);
    if (!value || *value < kMinRate || *value > kMaxRate)
        return fail(Errc::invalid_argument,
                    "--rate must be a number of samples per second from {:g} to {:g}, not {}",
                    kMinRate, kMaxRate, quoted(text));
    return *value;
}

Result<double> parse_delay(std::string_view text) {
    auto value = parse_number(text);
    if (!value || *value < kMinDelay || *value > kMaxDelay)
        return fail(Errc::invalid_argument,
                    "--delay must be a number of seconds from {:g} to {:g}, not {}", kMinDelay,
                    kMaxDelay, quoted(text));
    return *value;
}

void check_pid(CLI::Option* option) {
    transform(
        option, parse_pid, [](pid_t pid) { return std::to_string(pid); }, "PID");
}

void check_duration(CLI::Option* option) {
    transform(option, parse_duration, number_text, "SECONDS|unlimited");
}

void check_rate(CLI::Option* option) {
    transform(option, parse_rate, number_text, "HZ");
}

void check_delay(CLI::Option* option) {
    transform(option, parse_delay, number_text, "SECONDS");
}

int report_parse_error(const CLI::App& app, const CLI::ParseError& error) {
    std::string message = error.what();
    // A validation error comes as "--pid: --pid must be ...": the option is named once.
    if (std::size_t colon = message.find(": --");
        colon != std::string::npos && message.compare(colon + 2, colon, message, 0, colon) == 0)
        message.erase(0, colon + 2);
    auto parsed = app.get_subcommands();
    std::string help =
        parsed.empty() ? "spyglass --help" : "spyglass " + parsed.front()->get_name() + " --help";
    std::fprintf(stderr, "spyglass: error: %s (see %s)\n", message.c_str(), help.c_str());
    return 2;
}

} // namespace spyglass::cli
