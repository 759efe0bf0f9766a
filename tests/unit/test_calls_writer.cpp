// -f calls (src/output/calls.cpp, calls_svg.cpp) on a profile made by hand: the text table's
// columns, order, dashes and notes; the JSON's structure and fields; the SVG's shape, and that
// names from the target are escaped in every style.
#include <cctype>
#include <sstream>
#include <string>
#include <vector>

#include "../tools/output_fixture.hpp"
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "spyglass/output/calls.hpp"
#include "spyglass/output/writer.hpp"

namespace {

using namespace spyglass;
using output::Format;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr std::uint64_t kMs = 1'000'000;

std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        lines.push_back(line);
    return lines;
}

// A small JSON checker: the whole text is one JSON value (RFC 8259's grammar).
class JsonCheck {
  public:
    static bool valid(std::string_view text) {
        JsonCheck check(text);
        check.space();
        if (!check.value()) return false;
        check.space();
        return check.at_ == text.size();
    }

  private:
    explicit JsonCheck(std::string_view text) : text_(text) {}
    bool more() const { return at_ < text_.size(); }
    char peek() const { return more() ? text_[at_] : '\0'; }
    void space() {
        while (more() && (peek() == ' ' || peek() == '\n' || peek() == '\t' || peek() == '\r'))
            ++at_;
    }
    bool literal(std::string_view word) {
        if (text_.substr(at_, word.size()) != word) return false;
        at_ += word.size();
        return true;
    }
    bool string() {
        if (peek() != '"') return false;
        ++at_;
        while (more()) {
            auto c = static_cast<unsigned char>(text_[at_++]);
            if (c == '"') return true;
            if (c < 0x20) return false;
            if (c != '\\') continue;
            char e = peek();
            ++at_;
            if (e == 'u') {
                for (int i = 0; i < 4; ++i, ++at_)
                    if (!std::isxdigit(static_cast<unsigned char>(peek()))) return false;
            } else if (std::string_view("\"\\/bfnrt").find(e) == std::string_view::npos) {
                return false;
            }
        }
        return false;
    }
    bool number() {
        std::size_t start = at_;
        if (peek() == '-') ++at_;
        if (!std::isdigit(static_cast<unsigned char>(peek()))) return false;
        while (std::isdigit(static_cast<unsigned char>(peek())))
            ++at_;
        if (peek() == '.') {
            ++at_;
            if (!std::isdigit(static_cast<unsigned char>(peek()))) return false;
            while (std::isdigit(static_cast<unsigned char>(peek())))
                ++at_;
        }
        if (peek() == 'e' || peek() == 'E') {
            ++at_;
            if (peek() == '+' || peek() == '-') ++at_;
            if (!std::isdigit(static_cast<unsigned char>(peek()))) return false;
            while (std::isdigit(static_cast<unsigned char>(peek())))
                ++at_;
        }
        return at_ > start;
    }
    bool value() {
        switch (peek()) {
        case '{':
            return container('}', true);
        case '[':
            return container(']', false);
        case '"':
            return string();
        case 't':
            return literal("true");
        case 'f':
            return literal("false");
        case 'n':
            return literal("null");
        default:
            return number();
        }
    }
    bool container(char close, bool object) {
        ++at_;
        space();
        if (peek() == close) {
            ++at_;
            return true;
        }
        for (;;) {
            space();
            if (object) {
                if (!string()) return false;
                space();
                if (peek() != ':') return false;
                ++at_;
                space();
            }
            if (!value()) return false;
            space();
            if (peek() == close) {
                ++at_;
                return true;
            }
            if (peek() != ',') return false;
            ++at_;
        }
    }

    std::string_view text_;
    std::size_t at_ = 0;
};

struct CallsFixture {
    model::FrameTable frames;
    model::StackTable stacks;
    model::Profile profile;

    CallsFixture() {
        profile.frames = &frames;
        profile.stacks = &stacks;
        profile.info.command = {"python3", "shop.py"};
        profile.info.period_ns = 10 * kMs;
        profile.threads.push_back({4242, 4243, 0, "worker-1"});
        profile.threads.push_back({4242, 4244, 0, ""});
        profile.calls.known = true;
    }
    model::CallStats& add(std::string_view function, std::string_view file, std::int32_t line) {
        model::CallStats& stats = profile.calls.functions.emplace_back();
        stats.function = frames.strings().intern(function);
        stats.file = frames.strings().intern(file);
        stats.first_line = line;
        return stats;
    }
    std::string write(model::CallsStyle style) {
        profile.display.calls_style = style;
        return test_support::write_to_string(profile, Format::calls);
    }
};

constexpr std::string_view kLedgerFile = "/opt/venv/lib/python3.12/site-packages/shop/ledger.py";

// Ledger.record: 412 calls, 3 of them short; 20.1 ms typically, 201.3 ms at p99, 203 ms max.
// load_config: 5 calls, all short. main: one call, running at the end.
void fill(CallsFixture& fixture) {
    model::CallStats& record = fixture.add("Ledger.record", kLedgerFile, 24);
    record.calls = 412;
    record.short_calls = 3;
    for (int i = 0; i < 400; ++i)
        record.durations.add(20'100'000);
    for (int i = 0; i < 8; ++i)
        record.durations.add(201'300'000);
    record.durations.add(203'000'000);
    record.back_to_back = 2;
    record.total_ns = 13'800 * kMs;
    record.self_ns = 13'700 * kMs;
    record.cpu_ns = 200 * kMs;
    model::CallStats& config = fixture.add("load_config", "/srv/app/config.py", 7);
    config.calls = 5;
    config.short_calls = 5;
    config.total_ns = 50 * kMs;
    config.self_ns = 50 * kMs;
    model::CallStats& main = fixture.add("main", "/srv/app/shop.py", 1);
    main.open_calls = 1;
    main.total_ns = 20'000 * kMs;
    main.self_ns = 10 * kMs;
    main.cpu_ns = 300 * kMs;
}

TEST(CallsWriter, Durations) {
    EXPECT_EQ(output::call_duration(20'100'000), "20.1ms");
    EXPECT_EQ(output::call_duration(412'340), "412.3\u00b5s");
    EXPECT_EQ(output::call_duration(999'949), "999.9\u00b5s");
    EXPECT_EQ(output::call_duration(999'950), "1.0ms");
    EXPECT_EQ(output::call_duration(13'800'000'000), "13.8s");
    EXPECT_EQ(output::call_duration(0), "0.0\u00b5s");
}

TEST(CallsWriter, StyleFromTheOutputsName) {
    using model::CallsStyle;
    EXPECT_EQ(output::calls_style_for_path("calls.json"), CallsStyle::json);
    EXPECT_EQ(output::calls_style_for_path("calls.JSON"), CallsStyle::json);
    EXPECT_EQ(output::calls_style_for_path("calls.svg"), CallsStyle::svg);
    EXPECT_EQ(output::calls_style_for_path("calls.html"), CallsStyle::svg);
    EXPECT_EQ(output::calls_style_for_path("calls.txt"), CallsStyle::table);
    EXPECT_EQ(output::calls_style_for_path("out.calls"), CallsStyle::table);
    EXPECT_EQ(output::calls_style_for_path("-"), CallsStyle::table);
    EXPECT_EQ(output::calls_style_for_path(""), CallsStyle::table);
}

TEST(CallsWriter, TextTable) {
    CallsFixture fixture;
    fill(fixture);
    const std::vector<std::string> lines = lines_of(fixture.write(model::CallsStyle::table));
    ASSERT_GE(lines.size(), 6u);
    EXPECT_EQ(
        lines[0],
        "Sampled every 10.0ms: durations are \u00b1 half a period (5.0ms) at each end, more after "
        "late ticks");
    EXPECT_EQ(lines[1], "");
    EXPECT_EQ(lines[2], "calls  short  p50      p90      p99      max      total    self     cpu  "
                        "    function");
    // By total time: main (20 s), Ledger.record (13.8 s), load_config (0.05 s).
    EXPECT_EQ(lines[3], "    0      0  -        -        -        -        20.0s    10.0ms   "
                        "300.0ms  main (/srv/app/shop.py:1)");
    const model::DurationHistogram& durations = fixture.profile.calls.functions[0].durations;
    EXPECT_EQ(lines[4],
              fmt::format("  412      3  {:<7}  {:<7}  {:<7}  203.0ms  13.8s    13.7s    200.0ms  "
                          "Ledger.record (shop/ledger.py:24)",
                          output::call_duration(durations.quantile(0.5)),
                          output::call_duration(durations.quantile(0.9)),
                          output::call_duration(durations.quantile(0.99))));
    // Within a bucket (2.2%) of the durations added.
    EXPECT_THAT(output::call_duration(durations.quantile(0.5)), StartsWith("20."));
    EXPECT_THAT(output::call_duration(durations.quantile(0.99)), StartsWith("20"));
    EXPECT_EQ(output::call_duration(durations.quantile(0.99)).size(), 7u); // 20x.yms
    EXPECT_EQ(lines[5], "    5      5  -        -        -        -        50.0ms   50.0ms   "
                        "0.0\u00b5s    load_config (/srv/app/config.py:7)");
    ASSERT_EQ(lines.size(), 9u);
    EXPECT_EQ(lines[6], "");
    EXPECT_EQ(lines[7], "1 call was running at the start or end of the recording: their time "
                        "is in total and self, not in the durations");
    EXPECT_EQ(lines[8], "2 calls began within one sampling period of the previous call of the "
                        "same function: calls with nothing in their frames to tell them apart "
                        "are merged");
}

TEST(CallsWriter, TextOptions) {
    CallsFixture fixture;
    fill(fixture);
    fixture.profile.calls.samples_without_identity = 7;
    fixture.profile.info.mode = model::SampleMode::cpu;
    fixture.profile.display.labels.full_filenames = true;
    fixture.profile.display.calls_top = 2;
    const std::string text = fixture.write(model::CallsStyle::table);
    EXPECT_THAT(text, StartsWith("Sampled every 10.0ms, on-CPU samples only (--mode cpu): "
                                 "durations are on-CPU time"));
    EXPECT_THAT(text, HasSubstr("Ledger.record (" + std::string(kLedgerFile) + ":24)\n"));
    EXPECT_THAT(text, Not(HasSubstr("load_config")));
    EXPECT_THAT(text, HasSubstr("\n(1 more function)\n"));
    EXPECT_THAT(text, HasSubstr("\n7 samples (torn or cut stacks) could not say which calls were "
                                "new: their time was given to the calls running\n"));

    fixture.profile.display.labels.line_numbers = false;
    EXPECT_THAT(fixture.write(model::CallsStyle::table),
                HasSubstr("Ledger.record (" + std::string(kLedgerFile) + ")\n"));
}

TEST(CallsWriter, PerThread) {
    CallsFixture fixture;
    fixture.profile.calls.per_thread = true;
    model::CallStats& one = fixture.add("work", "/srv/w.py", 3);
    one.thread = 0;
    one.calls = 2;
    one.durations.add(30 * kMs);
    one.durations.add(30 * kMs);
    one.total_ns = 60 * kMs;
    model::CallStats& two = fixture.add("work", "/srv/w.py", 3);
    two.thread = 1;
    two.calls = 1;
    two.durations.add(30 * kMs);
    two.total_ns = 30 * kMs;
    const std::vector<std::string> lines = lines_of(fixture.write(model::CallsStyle::table));
    ASSERT_EQ(lines.size(), 5u);
    EXPECT_EQ(lines[2], "calls  short  p50      p90      p99      max      total    self     cpu  "
                        "    thread         function");
    EXPECT_EQ(lines[3], "    2      0  30.0ms   30.0ms   30.0ms   30.0ms   60.0ms   0.0\u00b5s    "
                        "0.0\u00b5s    4243 worker-1  work (/srv/w.py:3)");
    EXPECT_THAT(lines[4], HasSubstr("  4244           work (/srv/w.py:3)"));

    const std::string json = fixture.write(model::CallsStyle::json);
    EXPECT_TRUE(JsonCheck::valid(json)) << json;
    EXPECT_THAT(json, HasSubstr("\"thread\":{\"tid\":4243,\"name\":\"worker-1\"}"));
    EXPECT_THAT(json, HasSubstr("\"thread\":{\"tid\":4244,\"name\":\"\"}"));
}

TEST(CallsWriter, WithoutCallIdentityOneLine) {
    CallsFixture fixture;
    fill(fixture);
    fixture.profile.calls.known = false;
    const std::string text = fixture.write(model::CallsStyle::table);
    EXPECT_EQ(text, output::calls_unknown_line() + "\n");
    EXPECT_THAT(text, HasSubstr("no call identity"));
    EXPECT_THAT(text, HasSubstr("format version 4 or older"));
    const std::string json = fixture.write(model::CallsStyle::json);
    EXPECT_TRUE(JsonCheck::valid(json)) << json;
    EXPECT_THAT(json, HasSubstr("\"known\":false"));
}

TEST(CallsWriter, EmptyTable) {
    CallsFixture fixture;
    const std::vector<std::string> lines = lines_of(fixture.write(model::CallsStyle::table));
    ASSERT_EQ(lines.size(), 4u);
    EXPECT_EQ(lines[3], "(no calls)");
    const std::string json = fixture.write(model::CallsStyle::json);
    EXPECT_TRUE(JsonCheck::valid(json)) << json;
    EXPECT_THAT(json, HasSubstr("\"functions\":[]"));
    const std::string svg = fixture.write(model::CallsStyle::svg);
    EXPECT_THAT(svg, HasSubstr("No call was seen in two samples or more"));
    EXPECT_THAT(svg, HasSubstr("</svg>\n"));
}

TEST(CallsWriter, Json) {
    CallsFixture fixture;
    fill(fixture);
    const std::string json = fixture.write(model::CallsStyle::json);
    ASSERT_TRUE(JsonCheck::valid(json)) << json;
    EXPECT_THAT(json, StartsWith("{\"period_ms\":10,\"mode\":\"wall\",\"known\":true,"));
    // By total time, as the table.
    EXPECT_LT(json.find("\"function\":\"main\""), json.find("\"function\":\"Ledger.record\""));
    EXPECT_LT(json.find("\"function\":\"Ledger.record\""),
              json.find("\"function\":\"load_config\""));
    EXPECT_THAT(json,
                HasSubstr("{\"function\":\"Ledger.record\",\"file\":\"" + std::string(kLedgerFile) +
                          "\",\"line\":24,\"calls\":412,\"short_calls\":3,\"open_calls\":0,"
                          "\"back_to_back\":2,\"p50_ms\":"));
    EXPECT_THAT(json, HasSubstr("\"max_ms\":203,\"total_s\":13.8,\"self_s\":13.7,\"cpu_s\":0.2,"));
    EXPECT_THAT(json, HasSubstr("\"p50_ms\":null,\"p90_ms\":null,\"p99_ms\":null,\"max_ms\":null"));
    EXPECT_THAT(json, Not(HasSubstr("\"thread\"")));
    // The histogram: 4 buckets an octave; 400 calls in the one around 20.1 ms, 9 around 200.
    const std::string histogram = json.substr(json.find("\"histogram\":["));
    EXPECT_THAT(histogram, HasSubstr(",\"count\":400}"));
    EXPECT_THAT(histogram, HasSubstr(",\"count\":9}"));
    const auto buckets = fixture.profile.calls.functions[0].durations.buckets(4);
    ASSERT_EQ(buckets.size(), 2u);
    EXPECT_THAT(histogram, HasSubstr(fmt::format("{{\"from_ms\":{},\"to_ms\":{},\"count\":400}}",
                                                 static_cast<double>(buckets[0].lower_ns) / 1e6,
                                                 static_cast<double>(buckets[0].upper_ns) / 1e6)));
    EXPECT_THAT(json, HasSubstr("\"histogram\":[]"));

    fixture.profile.display.calls_top = 1;
    fixture.profile.info.mode = model::SampleMode::cpu;
    const std::string top = fixture.write(model::CallsStyle::json);
    EXPECT_THAT(top, HasSubstr("\"mode\":\"cpu\""));
    EXPECT_THAT(top, HasSubstr("\"function\":\"main\""));
    EXPECT_THAT(top, Not(HasSubstr("Ledger.record")));
}

TEST(CallsWriter, Svg) {
    CallsFixture fixture;
    fill(fixture);
    for (int i = 0; i < 12; ++i) {
        model::CallStats& stats = fixture.add(fmt::format("f{}", i), "/srv/f.py", 10 + i);
        stats.calls = 3;
        for (int k = 0; k < 3; ++k)
            stats.durations.add(static_cast<std::uint64_t>(i + 1) * 1000 * (k + 1));
        stats.total_ns = 30 * kMs;
    }
    const std::string svg = fixture.write(model::CallsStyle::svg);
    EXPECT_THAT(svg, StartsWith("<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
                                "<svg version=\"1.1\""));
    EXPECT_THAT(svg, HasSubstr("</svg>\n"));
    EXPECT_THAT(svg, Not(HasSubstr("<script")));
    // The 10 slowest by p99: Ledger.record first, then f11 ... f3 (f0 to f2 left out);
    // load_config (no timed call) and main (no call ended) have no distribution.
    EXPECT_LT(svg.find("Ledger.record (shop/ledger.py:24)"), svg.find("f11 ("));
    EXPECT_THAT(svg, HasSubstr("f3 (/srv/f.py:13)"));
    EXPECT_THAT(svg, Not(HasSubstr("f2 (/srv/f.py:12)")));
    EXPECT_THAT(svg, Not(HasSubstr("load_config")));
    EXPECT_THAT(svg, Not(HasSubstr(">main (")));
    EXPECT_THAT(svg, HasSubstr("The 10 slowest functions by p99"));
    // A shared log axis, decades labelled; p50 and p99 marked in every row.
    EXPECT_THAT(svg, HasSubstr(">1\u00b5s</text>"));
    EXPECT_THAT(svg, HasSubstr(">1s</text>"));
    std::size_t p50 = 0, p99 = 0;
    for (std::size_t at = svg.find("class=\"p50\""); at != std::string::npos;
         at = svg.find("class=\"p50\"", at + 1))
        ++p50;
    for (std::size_t at = svg.find("class=\"p99\""); at != std::string::npos;
         at = svg.find("class=\"p99\"", at + 1))
        ++p99;
    EXPECT_EQ(p50, 10u);
    EXPECT_EQ(p99, 10u);
    // Elements open and close in balance.
    std::size_t groups = 0, closed = 0;
    for (std::size_t at = svg.find("<g"); at != std::string::npos; at = svg.find("<g", at + 1))
        ++groups;
    for (std::size_t at = svg.find("</g>"); at != std::string::npos; at = svg.find("</g>", at + 1))
        ++closed;
    EXPECT_EQ(groups, closed);

    fixture.profile.display.calls_top = 2;
    const std::string two = fixture.write(model::CallsStyle::svg);
    EXPECT_THAT(two, HasSubstr("The 2 slowest functions by p99"));
    EXPECT_THAT(two, Not(HasSubstr("f10 (")));
}

TEST(CallsWriter, HostileNamesAreEscapedEverywhere) {
    CallsFixture fixture;
    fixture.profile.calls.per_thread = true;
    fixture.profile.threads[0].name = "w\x1b]0;owned\x07";
    model::CallStats& stats =
        fixture.add("<script>alert(1)</script>\x1b[2J\x9b", "/tmp/\"evil\"&\x01.py", 6);
    stats.thread = 0;
    stats.calls = 2;
    stats.durations.add(5 * kMs);
    stats.durations.add(7 * kMs);
    stats.total_ns = 12 * kMs;

    const std::string text = fixture.write(model::CallsStyle::table);
    for (char c : text)
        if (c != '\n') {
            EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
                << "control byte " << static_cast<int>(static_cast<unsigned char>(c));
        }
    EXPECT_THAT(text, HasSubstr("<script>alert(1)</script>\\x1b[2J"));
    EXPECT_THAT(text, HasSubstr("4243 w\\x1b]0;owned\\x07"));

    const std::string json = fixture.write(model::CallsStyle::json);
    EXPECT_TRUE(JsonCheck::valid(json)) << json;
    EXPECT_THAT(json, HasSubstr("\"function\":\"<script>alert(1)</script>\\u001b[2J"));
    EXPECT_THAT(json, HasSubstr("\"file\":\"/tmp/\\\"evil\\\"&\\u0001.py\""));

    const std::string svg = fixture.write(model::CallsStyle::svg);
    EXPECT_THAT(svg, Not(HasSubstr("<script")));
    EXPECT_THAT(svg, Not(HasSubstr("\x1b")));
    EXPECT_THAT(svg, Not(HasSubstr("\x01")));
    EXPECT_THAT(svg, Not(HasSubstr("\x07")));
    EXPECT_THAT(svg, HasSubstr("&lt;script&gt;alert(1)&lt;/script&gt;"));
    EXPECT_THAT(svg, HasSubstr("&quot;evil&quot;&amp;"));
    for (char c : svg)
        if (c != '\n') {
            EXPECT_FALSE(static_cast<unsigned char>(c) < 0x20) << static_cast<int>(c);
        }
}

} // namespace
