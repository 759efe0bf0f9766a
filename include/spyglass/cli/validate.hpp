// The values of the command line's options, checked with the words a user needs: what the
// option takes and what was given ("--pid must be a process id (a positive integer), not
// 'abc'"), never a parser's own messages. Every number of every option goes through one
// spelling (docs/reliability-input.md): decimal digits with an optional fraction and exponent
// and an optional '+'; no spaces, no hex or octal (0x10, 010), no nan or inf, nothing after
// it; within the option's range, also once converted to nanoseconds. The parsers are plain
// functions (unit tested); the check_* functions attach them to CLI11 options.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <sys/types.h>

#include "spyglass/error.hpp"
#include "spyglass/model/labels.hpp"

namespace CLI {
class App;
class Option;
class ParseError;
} // namespace CLI

namespace spyglass::cli {

// The limits of --rate (Hz), --duration and top's --delay (seconds).
inline constexpr double kMinRate = 0.001, kMaxRate = 100000;
inline constexpr double kMaxDuration = 1e9; // ~31 years: nanoseconds still fit in 64 bits
inline constexpr double kMinDelay = 0.1, kMaxDelay = 3600;
// --window and --push-timeout (seconds), diff's --top (frames).
inline constexpr double kMinWindow = 1, kMaxWindow = 86400.0 * 365;
inline constexpr double kMinPushTimeout = 0.1, kMaxPushTimeout = 600;
inline constexpr double kMaxTop = 1e6;

// What one numeric option takes: "{option} must be {what} from {min} to {max}, not '...'".
struct NumberRule {
    std::string_view option; // "--top"
    std::string_view what;   // "a whole number of frames"
    double min = 0, max = 0;
    bool whole = false; // digits only: no fraction, no exponent
};

// The number `text` spells, within the rule's range.
Result<double> parse_number(std::string_view text, const NumberRule& rule);
// A process id: a decimal integer from 1 to 2^31-1.
Result<pid_t> parse_pid(std::string_view text);
// Seconds > 0 and at most kMaxDuration, or "unlimited" (py-spy's spelling): +infinity.
Result<double> parse_duration(std::string_view text);
// Samples per second, from kMinRate to kMaxRate.
Result<double> parse_rate(std::string_view text);
// Seconds between refreshes of top, from kMinDelay to kMaxDelay.
Result<double> parse_delay(std::string_view text);
// --keep: "24h", "90m", "3600", "1h30m", "7d" -> nanoseconds, above zero and at most
// kMaxDuration seconds.
Result<std::uint64_t> parse_span_ns(std::string_view text);
// report's --from / --to: seconds from the start ("90", "1m30s") or a wall-clock time
// ("14:03", "14:03:05", "2024-05-01T14:03:05", "2024-05-01 14:03:05", Z at the end for UTC),
// as nanoseconds since `start_unix_ns`, the start of the recording (0 for a time before it).
Result<std::uint64_t> parse_time_ns(std::string_view option, std::string_view text,
                                    std::uint64_t start_unix_ns);

// Each NAME=VALUE of a repeated option (`flag`: --label, --where), checked (model::parse_label).
Result<std::vector<model::LabelText>> parse_labels(std::string_view flag,
                                                   const std::vector<std::string>& texts);

// The most bytes one input of report or diff may hold in memory whole: SPYGLASS_MAX_INPUT_MB
// (a whole number of MiB) if set, else output::kDefaultMaxInputBytes.
Result<std::uint64_t> input_limit();

// Each makes the option check its value with the parser above and hand CLI11 the normalized
// text ("unlimited" becomes "inf"; a span or a time is kept as it was given, checked).
void check_number(CLI::Option* option, NumberRule rule, std::string value_name);
void check_pid(CLI::Option* option);
void check_duration(CLI::Option* option);
void check_rate(CLI::Option* option);
void check_delay(CLI::Option* option);
void check_span(CLI::Option* option);
void check_time(CLI::Option* option);
// record's --label and report's --where: NAME=VALUE (model::parse_label).
void check_label(CLI::Option* option);

// A parse error as one line, "spyglass: error: ..." on stderr; returns the exit status (2).
int report_parse_error(const CLI::App& app, const CLI::ParseError& error);

} // namespace spyglass::cli
