// The values of the command line's options, checked with the words a user needs: what the
// option takes and what was given ("--pid must be a process id (a positive integer), not
// 'abc'"), never a parser's own messages. The parsers are plain functions (unit tested); the
// check_* functions attach them to CLI11 options.
#pragma once

#include <string>
#include <string_view>

#include <sys/types.h>

#include "spyglass/error.hpp"

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

// A process id: a decimal integer from 1 to 2^31-1.
Result<pid_t> parse_pid(std::string_view text);
// Seconds > 0 and at most kMaxDuration, or "unlimited" (py-spy's spelling): +infinity.
Result<double> parse_duration(std::string_view text);
// Samples per second, from kMinRate to kMaxRate.
Result<double> parse_rate(std::string_view text);
// Seconds between refreshes of top, from kMinDelay to kMaxDelay.
Result<double> parse_delay(std::string_view text);

// Each makes the option check its value with the parser above and hand CLI11 the normalized
// text ("unlimited" becomes "inf").
void check_pid(CLI::Option* option);
void check_duration(CLI::Option* option);
void check_rate(CLI::Option* option);
void check_delay(CLI::Option* option);

// A parse error as one line, "spyglass: error: ..." on stderr; returns the exit status (2).
int report_parse_error(const CLI::App& app, const CLI::ParseError& error);

} // namespace spyglass::cli
