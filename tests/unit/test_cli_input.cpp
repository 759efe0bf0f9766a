// The command line's input: option values in words (validate.cpp), the summary's rate and time
// (summary.cpp), and what a --pid names (target_check.cpp), from texts /proc could give.
#include <cmath>

#include <CLI/CLI.hpp>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "spyglass/cli/summary.hpp"
#include "spyglass/cli/validate.hpp"
#include "spyglass/delivery/push.hpp"
#include "spyglass/process/target_check.hpp"

namespace {

using namespace spyglass;
using ::testing::HasSubstr;

TEST(Validate, PidIsAPositiveInteger) {
    EXPECT_EQ(cli::parse_pid("1234").value(), 1234);
    EXPECT_EQ(cli::parse_pid("+7").value(), 7);
    for (const char* bad : {"abc", "", "0", "-1", "12x", "1.5", "2147483648", "99999999999"}) {
        auto pid = cli::parse_pid(bad);
        ASSERT_FALSE(pid) << bad;
        EXPECT_EQ(pid.error().message,
                  fmt::format("--pid must be a process id (a positive integer), not '{}'", bad));
    }
}

TEST(Validate, DurationIsPositiveSecondsOrUnlimited) {
    EXPECT_DOUBLE_EQ(cli::parse_duration("2").value(), 2);
    EXPECT_DOUBLE_EQ(cli::parse_duration("0.0001").value(), 0.0001);
    EXPECT_TRUE(std::isinf(cli::parse_duration("unlimited").value()));
    EXPECT_TRUE(std::isinf(cli::parse_duration("Unlimited").value()));
    for (const char* bad : {"-1", "0", "nan", "NaN", "inf", "-inf", "infinity", "abc", "", "1s"}) {
        auto duration = cli::parse_duration(bad);
        ASSERT_FALSE(duration) << bad;
        EXPECT_THAT(duration.error().message,
                    HasSubstr("--duration must be a number of seconds > 0, or 'unlimited'"));
    }
    auto huge = cli::parse_duration("1e300");
    ASSERT_FALSE(huge);
    EXPECT_THAT(huge.error().message, HasSubstr("is too long: at most 1000000000 seconds"));
}

TEST(Validate, RateAndDelayHaveTheirRange) {
    EXPECT_DOUBLE_EQ(cli::parse_rate("0.05").value(), 0.05);
    EXPECT_DOUBLE_EQ(cli::parse_rate("100000").value(), 100000);
    for (const char* bad : {"0", "-5", "nan", "inf", "100001", "0.0001", "fast"}) {
        auto rate = cli::parse_rate(bad);
        ASSERT_FALSE(rate) << bad;
        EXPECT_EQ(rate.error().message,
                  fmt::format("--rate must be a number of samples per second from 0.001 to "
                              "100000, not '{}'",
                              bad));
    }
    EXPECT_DOUBLE_EQ(cli::parse_delay("0.5").value(), 0.5);
    EXPECT_FALSE(cli::parse_delay("0"));
    EXPECT_FALSE(cli::parse_delay("nan"));
    EXPECT_FALSE(cli::parse_delay("7200"));
}

// One spelling for every number (issue 23): what each option keeps, and what none takes.
TEST(Validate, OneSpellingOfANumber) {
    const cli::NumberRule seconds{"--window", "a number of seconds", cli::kMinWindow,
                                  cli::kMaxWindow};
    for (auto [text, value] : {std::pair{"5", 5.0},
                               {"+5", 5.0},
                               {"1.5", 1.5},
                               {".5e1", 5.0},
                               {"5.", 5.0},
                               {"1e3", 1000.0},
                               {"1E+3", 1000.0},
                               {"10", 10.0},
                               {"31536000", 31536000.0}})
        EXPECT_DOUBLE_EQ(cli::parse_number(text, seconds).value(), value) << text;
    for (const char* bad : {"",     " 5",  "5 ",  "\t5", "5\n",   "0x10",     "0X10",  "010",
                            "00.5", "nan", "NaN", "inf", "-inf",  "infinity", "1e400", "-1e400",
                            "-5",   "--5", "++5", "+-5", "5s",    "5,0",      "1e",    "1e+",
                            ".",    "+",   "e5",  "0b1", "1_000", "31536001", "0.5",   "0"}) {
        auto parsed = cli::parse_number(bad, seconds);
        ASSERT_FALSE(parsed) << bad;
        EXPECT_EQ(parsed.error().message,
                  fmt::format("--window must be a number of seconds from 1 to 31536000, not "
                              "'{}'",
                              std::string(bad) == "\t5"   ? "\\x095"
                              : std::string(bad) == "5\n" ? "5\\x0a"
                                                          : bad));
    }
    const cli::NumberRule frames{"--top", "a whole number of frames", 1, cli::kMaxTop, true};
    EXPECT_EQ(cli::parse_number("20", frames).value(), 20);
    EXPECT_EQ(cli::parse_number("1000000", frames).value(), 1e6);
    for (const char* bad : {"1.5", "1e3", "1.", "0", "-1", "1000001", "99999999999999999999",
                            "18446744073709551617", "0x10", "010", " 5", ""}) {
        auto parsed = cli::parse_number(bad, frames);
        ASSERT_FALSE(parsed) << bad;
        EXPECT_EQ(parsed.error().message,
                  fmt::format("--top must be a whole number of frames from 1 to 1000000, not "
                              "'{}'",
                              bad));
    }
    // The pid and the duration spell numbers the same way.
    for (const char* bad : {"0x10", "010", " 1", "1 ", "1e3"})
        EXPECT_FALSE(cli::parse_pid(bad)) << bad;
    for (const char* bad : {"0x10", "010", " 1", "1e-400"})
        EXPECT_FALSE(cli::parse_duration(bad)) << bad;
    EXPECT_DOUBLE_EQ(cli::parse_duration("1e-3").value(), 0.001);
}

TEST(Validate, SpansForKeep) {
    constexpr std::uint64_t s = 1'000'000'000;
    EXPECT_EQ(cli::parse_span_ns("3600").value(), 3600 * s);
    EXPECT_EQ(cli::parse_span_ns("90m").value(), 5400 * s);
    EXPECT_EQ(cli::parse_span_ns("24h").value(), 86400 * s);
    EXPECT_EQ(cli::parse_span_ns("7d").value(), 7 * 86400 * s);
    EXPECT_EQ(cli::parse_span_ns("1h30m").value(), 5400 * s);
    EXPECT_EQ(cli::parse_span_ns("1h05m").value(), 3900 * s);
    EXPECT_EQ(cli::parse_span_ns("1d2h3m4s").value(), (86400 + 7200 + 180 + 4) * s);
    EXPECT_EQ(cli::parse_span_ns("1.5h").value(), 5400 * s);
    EXPECT_EQ(cli::parse_span_ns("0.5").value(), s / 2);
    for (const char* bad :
         {"",    "0",   "0s",  "-1h", "+1h", "1h30", "30m1h", "1m1m", "1.5.5h",    "h",    "1x",
          " 1h", "1h ", "1 h", "nan", "inf", "1e12", "0x10",  "010",  "11574075d", "1e400"}) {
        auto span = cli::parse_span_ns(bad);
        ASSERT_FALSE(span) << bad;
        EXPECT_THAT(span.error().message, HasSubstr("--keep must be a duration above zero"));
        EXPECT_THAT(span.error().message, HasSubstr(fmt::format("not '{}'", bad)));
    }
}

TEST(Validate, TimesForFromAndTo) {
    constexpr std::uint64_t s = 1'000'000'000;
    const std::uint64_t start = 1'714'572'185 * s + 250'000'000; // 2024-05-01T14:03:05.25Z
    EXPECT_EQ(cli::parse_time_ns("--from", "0", start).value(), 0u);
    EXPECT_EQ(cli::parse_time_ns("--from", "1.37", start).value(), 1'370'000'000u);
    EXPECT_EQ(cli::parse_time_ns("--from", "1m30s", start).value(), 90 * s);
    EXPECT_EQ(cli::parse_time_ns("--from", "0s", start).value(), 0u);
    EXPECT_EQ(cli::parse_time_ns("--to", "1000000000", start).value(), 1'000'000'000 * s);
    EXPECT_EQ(cli::parse_time_ns("--to", "2024-05-01T14:04:05Z", start).value(),
              59 * s + 750'000'000);
    EXPECT_EQ(cli::parse_time_ns("--to", "14:03:05Z", start).value(), 0u); // the start's second
    EXPECT_EQ(cli::parse_time_ns("--to", "2024-05-01T00:00:00Z", start).value(), 0u);
    EXPECT_EQ(cli::parse_time_ns("--to", "2200-01-01T00:00:00Z", start).value(),
              7'258'118'400 * s - start);
    // The issue: 1e12 seconds overflowed once in nanoseconds (every sample, or none).
    for (const char* bad : {"1e12", "1000000001", "1e400", "", "nan", "inf", "-1", "0x10", "010",
                            " 1", "1 ", "1s2", "25:99", "2300-01-01T00:00:00Z", " 14:03", "14:03 ",
                            "2024-05-01  14:03", "2024-05-01\t14:03", "14:03:05x"}) {
        auto at = cli::parse_time_ns("--from", bad, start);
        ASSERT_FALSE(at) << bad;
        EXPECT_THAT(at.error().message,
                    HasSubstr("--from must be seconds from the start (90, 1m30s; at most "
                              "1000000000), a time of day (14:03:05) or a date and time"));
    }
}

TEST(Validate, InputLimitFromTheEnvironment) {
    ::unsetenv("SPYGLASS_MAX_INPUT_MB");
    EXPECT_EQ(cli::input_limit().value(), 256u << 20);
    ::setenv("SPYGLASS_MAX_INPUT_MB", "4", 1);
    EXPECT_EQ(cli::input_limit().value(), 4u << 20);
    for (const char* bad : {"0", "nan", "", "4 ", "0x10", "1.5", "1048577"}) {
        ::setenv("SPYGLASS_MAX_INPUT_MB", bad, 1);
        auto limit = cli::input_limit();
        ASSERT_FALSE(limit) << bad;
        EXPECT_EQ(limit.error().message,
                  fmt::format("SPYGLASS_MAX_INPUT_MB must be a whole number of MiB from 1 to "
                              "1048576, not '{}'",
                              bad));
    }
    ::unsetenv("SPYGLASS_MAX_INPUT_MB");
}

TEST(Validate, LongValuesAreCutInTheMessage) {
    std::string long_value(200, '9');
    auto pid = cli::parse_pid(long_value);
    ASSERT_FALSE(pid);
    EXPECT_LT(pid.error().message.size(), 120u);
    EXPECT_THAT(pid.error().message, HasSubstr("...'"));
}

// Through CLI11 as app.cpp wires it: the message names the option once, on one line.
std::string parse_error_of(std::vector<std::string> args) {
    CLI::App app{"test", "spyglass"};
    CLI::App* record = app.add_subcommand("record", "");
    int pid = 0;
    double duration = 0;
    cli::check_pid(record->add_option("-p,--pid", pid, ""));
    cli::check_duration(record->add_option("-d,--duration", duration, ""));
    double window = 0;
    std::string keep;
    cli::check_number(record->add_option("--window", window, ""),
                      {"--window", "a number of seconds", cli::kMinWindow, cli::kMaxWindow},
                      "SECONDS");
    cli::check_span(record->add_option("--keep", keep, ""));
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    try {
        app.parse(reversed);
    } catch (const CLI::ParseError& error) {
        ::testing::internal::CaptureStderr();
        EXPECT_EQ(cli::report_parse_error(app, error), 2);
        return ::testing::internal::GetCapturedStderr();
    }
    if (std::isinf(duration)) return "unlimited";
    return fmt::format("pid {} duration {}", pid, duration);
}

TEST(Validate, ThroughCli11) {
    EXPECT_EQ(parse_error_of({"record", "--pid", "abc"}),
              "spyglass: error: --pid must be a process id (a positive integer), not 'abc' "
              "(see spyglass record --help)\n");
    EXPECT_EQ(parse_error_of({"record", "-d", "-1"}),
              "spyglass: error: --duration must be a number of seconds > 0, or 'unlimited', not "
              "'-1' (see spyglass record --help)\n");
    EXPECT_EQ(parse_error_of({"record", "-d", "unlimited"}), "unlimited");
    EXPECT_EQ(parse_error_of({"record", "-p", "12", "-d", "1.5"}), "pid 12 duration 1.5");
    EXPECT_EQ(parse_error_of({"record", "--window", "nan"}),
              "spyglass: error: --window must be a number of seconds from 1 to 31536000, not "
              "'nan' (see spyglass record --help)\n");
    EXPECT_EQ(parse_error_of({"record", "--keep", ""}),
              "spyglass: error: --keep must be a duration above zero and at most 1000000000 "
              "seconds: seconds or numbers with s, m, h or d (3600, 90m, 24h, 1h30m), not '' "
              "(see spyglass record --help)\n");
    EXPECT_EQ(parse_error_of({"record", "-p", "12", "--window", "+60"}), "pid 12 duration 0");
    std::string unknown = parse_error_of({"record", "--bogus"});
    EXPECT_THAT(unknown, HasSubstr("spyglass: error: "));
    EXPECT_EQ(std::count(unknown.begin(), unknown.end(), '\n'), 1) << unknown;
}

TEST(Summary, AchievedRateNeverMoreThanAsked) {
    // The figures: -r 0.2 -d 2 (one tick in 2 s), -d 0.0001 at 100 Hz (one tick in
    // 0.1 ms), SIGINT 3 s into -r 0.05 (one tick).
    EXPECT_DOUBLE_EQ(cli::achieved_rate(1, 2'000'000'000, 0.2), 0.2);
    EXPECT_DOUBLE_EQ(cli::achieved_rate(1, 100'000, 100), 100);
    EXPECT_DOUBLE_EQ(cli::achieved_rate(1, 3'000'000'000, 0.05), 0.05);
    // Late ticks: the real rate.
    EXPECT_DOUBLE_EQ(cli::achieved_rate(800, 1'000'000'000, 1000), 800);
    EXPECT_DOUBLE_EQ(cli::achieved_rate(3000, 30'000'000'000, 100), 100);
    EXPECT_EQ(cli::achieved_rate(0, 0, 100), 0);
}

TEST(Summary, SmallRatesAndTimesKeepTheirDigits) {
    EXPECT_EQ(cli::rate_text(100), "100.0");
    EXPECT_EQ(cli::rate_text(99.74), "99.7");
    EXPECT_EQ(cli::rate_text(0.05), "0.05");
    EXPECT_EQ(cli::rate_text(0.2), "0.2");
    EXPECT_EQ(cli::rate_text(0), "0.0");
    EXPECT_EQ(cli::seconds_text(2'000'000'000), "2.0");
    EXPECT_EQ(cli::seconds_text(100'000), "0.0001");
    EXPECT_EQ(cli::seconds_text(10'000), "0.00001");
}

TEST(Summary, Plurals) {
    EXPECT_EQ(cli::count_of(1, "late tick"), "1 late tick");
    EXPECT_EQ(cli::count_of(2, "sampling error"), "2 sampling errors");
    EXPECT_EQ(cli::count_of(1234, "sample"), "1,234 samples");
}

// record's closing line: one sampling error is "1 sampling error" (no recording can be made to
// have exactly one on purpose, so the words are checked here).
TEST(Summary, RecordLineSaysOneOfEach) {
    model::RecordingTotals totals;
    totals.elapsed_ns = 2'000'000'000;
    totals.ticks = 200;
    totals.samples = 200;
    totals.errors = 1;
    totals.late_ticks = 1;
    EXPECT_EQ(
        cli::record_summary(totals, 200, 100, "the target exited; ", "; wrote folded to p.txt"),
        "the target exited; 200 samples in 2.0 s at 100.0 Hz (asked 100), 1 late tick, 1 "
        "sampling error (0.50%); wrote folded to p.txt");
    totals.samples = 1;
    totals.ticks = 1;
    totals.errors = 0;
    totals.late_ticks = 0;
    totals.elapsed_ns = 10'000'000;
    EXPECT_EQ(cli::record_summary(totals, 1, 100, "", ""),
              "1 sample in 0.01 s at 100.0 Hz (asked 100), 0 late ticks, 0 sampling errors "
              "(0.00%)");
    totals.samples = 1'234;
    totals.errors = 1'234;
    totals.pauses.pauses = 1;
    totals.pauses.p50_ns = totals.pauses.p99_ns = totals.pauses.max_ns = 21'000;
    EXPECT_EQ(cli::record_summary(totals, 1'234, 0.5, "", ""),
              "1,234 samples in 0.01 s at 0.5 Hz (asked 0.5), 0 late ticks, 1,234 sampling "
              "errors (100.00%); 1 pause (p50 21 µs, p99 21 µs, max 21 µs)");
}

// --push URL's user information is never printed (the summary, errors, warnings).
TEST(Push, RedactedHidesTheUserInformation) {
    EXPECT_EQ(delivery::redacted("http://user:pass@pyroscope:4040/prefix"),
              "http://***@pyroscope:4040/prefix");
    EXPECT_EQ(delivery::redacted("https://user:p@ss@host"), "https://***@host");
    EXPECT_EQ(delivery::redacted("http://token@host?x=1"), "http://***@host?x=1");
    EXPECT_EQ(delivery::redacted("http://host:4040/a@b"), "http://host:4040/a@b");
    EXPECT_EQ(delivery::redacted("http://host?x=a@b"), "http://host?x=a@b");
    EXPECT_EQ(delivery::redacted("http://host#a@b"), "http://host#a@b");
    EXPECT_EQ(delivery::redacted("http://host"), "http://host");
    EXPECT_EQ(delivery::redacted("not a url@all"), "not a url@all");
}

constexpr const char* kKthreaddStat =
    "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0 18446744073709551615 0 0 "
    "0 0 0 0 0 2147483647 0 1 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n";
constexpr const char* kPythonStat =
    "4242 (python3 (x) y) R 1 4242 4242 34816 4242 4194304 2000 0 0 0 50 3 0 0 20 0 3 0 700 0 0 "
    "18446744073709551615 1 1 0 0 0 0 0 16781312 2 0 0 0 17 1 0 0 0 0 0\n";

TEST(TargetCheck, KernelThreadFlag) {
    auto kthread = process::parse_stat_flags(kKthreaddStat);
    ASSERT_TRUE(kthread);
    EXPECT_NE(*kthread & process::kKernelThreadFlag, 0u);
    auto python = process::parse_stat_flags(kPythonStat); // a name with ')' and spaces
    ASSERT_TRUE(python);
    EXPECT_EQ(*python, 4194304u);
    EXPECT_EQ(*python & process::kKernelThreadFlag, 0u);
    EXPECT_FALSE(process::parse_stat_flags("1 (x) S 0"));
    EXPECT_FALSE(process::parse_stat_flags("garbage"));
}

TEST(TargetCheck, Tgid) {
    EXPECT_EQ(
        process::parse_tgid("Name:\tpython3\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t4242\n"
                            "Ngid:\t0\nPid:\t4243\n"),
        4242);
    EXPECT_EQ(process::parse_tgid("Tgid:\t7\n"), 7);
    EXPECT_FALSE(process::parse_tgid("Name:\tx\nPid:\t3\n"));
    EXPECT_FALSE(process::parse_tgid("Tgid:\tabc\n"));
}

TEST(TargetCheck, ThisProcess) {
    auto self = process::check_target_pid(::getpid());
    ASSERT_TRUE(self) << self.error().message;
    EXPECT_EQ(self->state, 'R');
    EXPECT_FALSE(self->stopped());
    auto gone = process::check_target_pid(2147483647);
    ASSERT_FALSE(gone);
    EXPECT_EQ(gone.error().message, "no process with PID 2147483647");
}

} // namespace
