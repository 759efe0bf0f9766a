#include "spyglass/cli/validate.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <limits>
#include <optional>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "spyglass/input/profile_input.hpp"

namespace spyglass::cli {

namespace {

constexpr std::uint64_t kNanosPerSecond = 1'000'000'000ull;

// The value as the user typed it, quoted, for the message: cut if it is long, and a control
// character escaped, so that the message stays one line.
std::string quoted(std::string_view text) {
    constexpr std::size_t kMax = 40;
    std::string shown;
    for (unsigned char c : text.substr(0, kMax)) {
        if (c < 0x20 || c == 0x7f)
            shown += fmt::format("\\x{:02x}", c);
        else
            shown.push_back(static_cast<char>(c));
    }
    if (text.size() > kMax) shown += "...";
    return "'" + shown + "'";
}

bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

// The one spelling of a number: [+]digits[.digits][(e|E)[+|-]digits] (".5" and "5." too); with
// `whole`, digits only. A leading zero before another digit is refused: 010 is octal to C (and
// to CLI11's own integer parsing). +infinity for a number too large for a double.
std::optional<double> decimal(std::string_view text, bool whole) {
    if (!text.empty() && text.front() == '+') text.remove_prefix(1);
    std::size_t i = 0;
    auto digits = [&] {
        std::size_t from = i;
        while (i < text.size() && is_digit(text[i]))
            ++i;
        return i - from;
    };
    std::size_t integer = digits(), fraction = 0;
    if (integer > 1 && text[0] == '0') return std::nullopt;
    if (!whole && i < text.size() && text[i] == '.') {
        ++i;
        fraction = digits();
    }
    if (integer + fraction == 0) return std::nullopt;
    bool negative_exponent = false;
    if (!whole && i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
        ++i;
        if (i < text.size() && (text[i] == '+' || text[i] == '-'))
            negative_exponent = text[i++] == '-';
        if (digits() == 0) return std::nullopt;
    }
    if (i != text.size()) return std::nullopt;
    double value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec == std::errc::result_out_of_range)
        return negative_exponent ? 0.0 : std::numeric_limits<double>::infinity();
    if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
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

// A span's seconds: a plain number, or numbers each with its unit, largest unit first (90m,
// 1h30m, 1.5d); nullopt for anything else.
std::optional<double> span_seconds(std::string_view text) {
    if (text.empty()) return std::nullopt;
    if (auto plain = decimal(text, false)) return plain;
    constexpr std::string_view kUnits = "dhms";
    constexpr double kUnitSeconds[] = {86400, 3600, 60, 1};
    double total = 0;
    std::size_t i = 0, next_unit = 0;
    while (i < text.size()) {
        std::size_t from = i;
        while (i < text.size() && (is_digit(text[i]) || text[i] == '.'))
            ++i;
        // digits[.digits]: after a larger unit "05" is as good as "5" (1h05m).
        std::string_view digits = text.substr(from, i - from);
        double number = 0;
        auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), number,
                                         std::chars_format::fixed);
        if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() ||
            i == text.size())
            return std::nullopt;
        std::size_t unit = kUnits.find(text[i]);
        if (unit == std::string_view::npos || unit < next_unit) return std::nullopt;
        total += number * kUnitSeconds[unit];
        next_unit = unit + 1;
        ++i;
    }
    return total;
}

// A wall-clock time on the day of `start_unix_ns` (a time of day) or a date and time, as
// Unix seconds; nullopt when it is neither.
std::optional<std::int64_t> wall_clock_seconds(std::string_view text, std::uint64_t start_unix_ns) {
    // strptime skips spaces of its own accord: only the one between a date and a time.
    if (text.empty() || text.front() == ' ' || text.back() == ' ' ||
        std::count(text.begin(), text.end(), ' ') > 1 ||
        std::any_of(text.begin(), text.end(),
                    [](char c) { return c != ' ' && std::isspace(static_cast<unsigned char>(c)); }))
        return std::nullopt;
    std::string value(text);
    bool utc = value.back() == 'Z' || value.back() == 'z';
    if (utc) value.pop_back();
    std::tm tm{};
    auto start_seconds = static_cast<std::time_t>(start_unix_ns / kNanosPerSecond);
    const char* rest = nullptr;
    for (const char* format :
         {"%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M"}) {
        tm = {};
        rest = ::strptime(value.c_str(), format, &tm);
        if (rest != nullptr && *rest == '\0') break;
        rest = nullptr;
    }
    bool time_of_day = false;
    if (rest == nullptr) {
        for (const char* format : {"%H:%M:%S", "%H:%M"}) {
            std::tm clock{};
            rest = ::strptime(value.c_str(), format, &clock);
            if (rest != nullptr && *rest == '\0') {
                // On the day the recording started.
                if (utc)
                    ::gmtime_r(&start_seconds, &tm);
                else
                    ::localtime_r(&start_seconds, &tm);
                tm.tm_hour = clock.tm_hour;
                tm.tm_min = clock.tm_min;
                tm.tm_sec = clock.tm_sec;
                time_of_day = true;
                break;
            }
            rest = nullptr;
        }
    }
    if (rest == nullptr) return std::nullopt;
    tm.tm_isdst = -1;
    std::time_t at = utc ? ::timegm(&tm) : std::mktime(&tm);
    // A time of day before the start (by more than half a day) is the next day's.
    if (time_of_day && at + 43200 < start_seconds) at += 86400;
    return static_cast<std::int64_t>(at);
}

} // namespace

Result<double> parse_number(std::string_view text, const NumberRule& rule) {
    auto value = decimal(text, rule.whole);
    if (!value || !(*value >= rule.min && *value <= rule.max))
        return fail(Errc::invalid_argument, "{} must be {} from {} to {}, not {}", rule.option,
                    rule.what, rule.min, rule.max, quoted(text));
    return *value;
}

Result<pid_t> parse_pid(std::string_view text) {
    auto value = decimal(text, true);
    if (!value || *value < 1 || *value > std::numeric_limits<std::int32_t>::max())
        return fail(Errc::invalid_argument,
                    "--pid must be a process id (a positive integer), not {}", quoted(text));
    return static_cast<pid_t>(*value);
}

Result<double> parse_duration(std::string_view text) {
    if (equals_nocase(text, "unlimited")) return std::numeric_limits<double>::infinity();
    auto value = decimal(text, false);
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
    return parse_number(text, {"--rate", "a number of samples per second", kMinRate, kMaxRate});
}

Result<double> parse_delay(std::string_view text) {
    return parse_number(text, {"--delay", "a number of seconds", kMinDelay, kMaxDelay});
}

Result<std::uint64_t> parse_span_ns(std::string_view text) {
    auto seconds = span_seconds(text);
    if (!seconds || !(*seconds > 0) || *seconds > kMaxDuration)
        return fail(Errc::invalid_argument,
                    "--keep must be a duration above zero and at most {:.0f} seconds: seconds or "
                    "numbers with s, m, h or d (3600, 90m, 24h, 1h30m), not {}",
                    kMaxDuration, quoted(text));
    return static_cast<std::uint64_t>(*seconds * 1e9);
}

Result<std::uint64_t> parse_time_ns(std::string_view option, std::string_view text,
                                    std::uint64_t start_unix_ns) {
    auto bad = [&] {
        return fail(Errc::invalid_argument,
                    "{} must be seconds from the start (90, 1m30s; at most {:.0f}), a time of day "
                    "(14:03:05) or a date and time (2024-05-01T14:03:05), not {}",
                    option, kMaxDuration, quoted(text));
    };
    if (text.find(':') == std::string_view::npos) {
        auto seconds = span_seconds(text);
        if (!seconds || !(*seconds >= 0) || *seconds > kMaxDuration) return bad();
        return static_cast<std::uint64_t>(*seconds * 1e9);
    }
    auto at = wall_clock_seconds(text, start_unix_ns);
    // Nanoseconds since 1970 fit in 63 bits until 2262.
    if (!at ||
        *at > std::numeric_limits<std::int64_t>::max() / static_cast<std::int64_t>(kNanosPerSecond))
        return bad();
    auto at_ns = *at * static_cast<std::int64_t>(kNanosPerSecond);
    auto start = static_cast<std::int64_t>(start_unix_ns);
    // Whole seconds: a time of the start's own second means the start.
    if (at_ns <= start) return 0;
    return static_cast<std::uint64_t>(at_ns - start);
}

Result<std::uint64_t> input_limit() {
    const char* text = std::getenv("SPYGLASS_MAX_INPUT_MB");
    if (text == nullptr) return output::kDefaultMaxInputBytes;
    auto mib =
        parse_number(text, {"SPYGLASS_MAX_INPUT_MB", "a whole number of MiB", 1, 1 << 20, true});
    if (!mib) return std::unexpected(mib.error());
    return static_cast<std::uint64_t>(*mib) << 20;
}

void check_number(CLI::Option* option, NumberRule rule, std::string value_name) {
    transform(
        option, [rule](std::string_view text) { return parse_number(text, rule); }, number_text,
        std::move(value_name));
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

void check_span(CLI::Option* option) {
    option->check(CLI::Validator(
        [](std::string& text) -> std::string {
            auto span = parse_span_ns(text);
            return span ? std::string() : span.error().message;
        },
        ""));
}

void check_time(CLI::Option* option) {
    // The start of the recording is not known yet: this checks the spelling; report resolves
    // a wall-clock time once it has read the file.
    std::string name = option->get_name();
    option->check(CLI::Validator(
        [name](std::string& text) -> std::string {
            auto at = parse_time_ns(name, text, 0);
            return at ? std::string() : at.error().message;
        },
        ""));
}

Result<std::vector<model::LabelText>> parse_labels(std::string_view flag,
                                                   const std::vector<std::string>& texts) {
    std::vector<model::LabelText> out;
    for (const std::string& text : texts) {
        auto label = model::parse_label(flag, text);
        if (!label) return std::unexpected(label.error());
        out.push_back(std::move(*label));
    }
    return out;
}

void check_label(CLI::Option* option) {
    std::string name = option->get_name();
    option->check(CLI::Validator(
        [name](std::string& text) -> std::string {
            auto label = model::parse_label(name, text);
            return label ? std::string() : label.error().message;
        },
        ""));
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
