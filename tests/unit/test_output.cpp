// The output formats' shared pieces and semantics: format selection, labels, roots, the
// on/off-CPU pseudo-frame, folded aggregation, flame graph pruning, I/O errors. Exact content
// of every format is in test_output_golden.cpp, pprof's decoded fields in test_output_pprof.cpp.
#include <map>
#include <sstream>

#include "../tools/output_fixture.hpp"
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "spyglass/output/writer.hpp"

namespace {

using namespace spyglass;
using output::Format;
using ::testing::HasSubstr;
using ::testing::Not;

std::map<std::string, std::uint64_t> parse_folded(const std::string& text) {
    std::map<std::string, std::uint64_t> lines;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        auto space = line.rfind(' ');
        EXPECT_NE(space, std::string::npos) << line;
        lines[line.substr(0, space)] += std::stoull(line.substr(space + 1));
    }
    return lines;
}

TEST(OutputFormat, NamesAndExtensions) {
    for (Format f : {Format::flamegraph, Format::folded, Format::pprof, Format::speedscope,
                     Format::chrometrace, Format::calls})
        EXPECT_EQ(output::parse_format(output::format_name(f)), f);
    EXPECT_EQ(output::parse_format("raw"), Format::folded);
    EXPECT_EQ(output::parse_format("collapsed"), Format::folded);
    EXPECT_EQ(output::parse_format("svg"), Format::flamegraph);
    EXPECT_EQ(output::parse_format("html"), std::nullopt);
    EXPECT_EQ(output::parse_format(""), std::nullopt);

    EXPECT_EQ(output::format_for_path("out.svg"), Format::flamegraph);
    EXPECT_EQ(output::format_for_path("out.HTML"), Format::flamegraph);
    EXPECT_EQ(output::format_for_path("out.txt"), Format::folded);
    EXPECT_EQ(output::format_for_path("a/b.folded"), Format::folded);
    EXPECT_EQ(output::format_for_path("b.collapsed"), Format::folded);
    EXPECT_EQ(output::format_for_path("p.pb"), Format::pprof);
    EXPECT_EQ(output::format_for_path("p.pb.gz"), Format::pprof);
    EXPECT_EQ(output::format_for_path("p.PPROF"), Format::pprof);
    EXPECT_EQ(output::format_for_path("s.json"), Format::speedscope);
    EXPECT_EQ(output::format_for_path("t.trace.json"), Format::chrometrace);
    EXPECT_EQ(output::format_for_path("t.Trace.JSON"), Format::chrometrace);
    EXPECT_EQ(output::format_for_path("noext"), Format::flamegraph);
    EXPECT_EQ(output::format_for_path("x.gz"), Format::flamegraph);

    EXPECT_TRUE(output::needs_timeline(Format::speedscope));
    EXPECT_TRUE(output::needs_timeline(Format::chrometrace));
    EXPECT_FALSE(output::needs_timeline(Format::folded));
    EXPECT_FALSE(output::needs_timeline(Format::pprof));
    EXPECT_FALSE(output::needs_timeline(Format::flamegraph));
    EXPECT_FALSE(output::needs_timeline(Format::calls));
    EXPECT_EQ(output::format_for_path("c.calls"), Format::calls);
    for (Format f : {Format::flamegraph, Format::folded, Format::pprof, Format::speedscope,
                     Format::chrometrace, Format::calls})
        EXPECT_NE(output::make_writer(f), nullptr);
}

TEST(OutputLabels, ShortFilenames) {
    using output::short_filename;
    EXPECT_EQ(short_filename("/opt/venv/lib/python3.11/site-packages/requests/api.py"),
              "requests/api.py");
    EXPECT_EQ(short_filename("/usr/lib/python3/dist-packages/apt/cache.py"), "apt/cache.py");
    EXPECT_EQ(short_filename("/usr/lib/python3.11/json/decoder.py"), "json/decoder.py");
    EXPECT_EQ(short_filename("/usr/local/lib/python2.7/threading.py"), "threading.py");
    EXPECT_EQ(short_filename("/usr/lib/python3.13t/os.py"), "os.py");
    EXPECT_EQ(short_filename("lib/python3.12/os.py"), "os.py");
    // The innermost site-packages wins; look-alikes are left alone.
    EXPECT_EQ(short_filename("/a/site-packages/b/site-packages/c.py"), "c.py");
    EXPECT_EQ(short_filename("/a/my-site-packages/c.py"), "/a/my-site-packages/c.py");
    EXPECT_EQ(short_filename("/srv/lib/pythonic/x.py"), "/srv/lib/pythonic/x.py");
    EXPECT_EQ(short_filename("/srv/app/main.py"), "/srv/app/main.py");
    EXPECT_EQ(short_filename("<frozen importlib._bootstrap>"), "<frozen importlib._bootstrap>");
    EXPECT_EQ(short_filename("/x/site-packages/"), "/x/site-packages/");
    EXPECT_EQ(short_filename(""), "");
}

TEST(OutputLabels, FrameLabels) {
    auto fixture = spyglass::test_support::make_output_fixture();
    model::Profile& profile = fixture->profile;
    model::FrameTable& frames = fixture->frames;
    auto& strings = frames.strings();
    model::FrameId get =
        frames.intern({strings.intern("get"),
                       strings.intern("/opt/venv/lib/python3.11/site-packages/requests/api.py"), 73,
                       62, model::FrameKind::python});
    model::FrameId no_line = frames.intern(
        {strings.intern("f"), strings.intern("/srv/x.py"), 0, 1, model::FrameKind::python});
    model::FrameId no_file = frames.intern(
        {strings.intern("native_fn"), model::StringId{}, 0, 0, model::FrameKind::native});
    model::FrameId marker = frames.marker("<truncated>");

    EXPECT_EQ(output::frame_label(profile, get), "get (requests/api.py:73)");
    EXPECT_EQ(output::frame_label(profile, no_line), "f (/srv/x.py)");
    EXPECT_EQ(output::frame_label(profile, no_file), "native_fn");
    EXPECT_EQ(output::frame_label(profile, marker), "<truncated>");
    profile.display.labels.full_filenames = true;
    EXPECT_EQ(output::frame_label(profile, get),
              "get (/opt/venv/lib/python3.11/site-packages/requests/api.py:73)");
    profile.display.labels.line_numbers = false;
    EXPECT_EQ(output::frame_label(profile, get),
              "get (/opt/venv/lib/python3.11/site-packages/requests/api.py)");
    EXPECT_EQ(output::frame_label(profile, marker), "<truncated>");
}

TEST(OutputLabels, Roots) {
    model::ThreadInfo named{1, 7, 0, "worker-1"}, unnamed{1, 8, 0, ""};
    EXPECT_EQ(output::thread_root_label(named), "thread 7 worker-1");
    EXPECT_EQ(output::thread_root_label(unnamed), "thread 8");
    EXPECT_EQ(output::process_root_label(4242), "process 4242");
}

TEST(OutputFolded, RootFirstWithRootsAndOffCpuOnTop) {
    auto fixture = spyglass::test_support::make_output_fixture();
    auto lines =
        parse_folded(spyglass::test_support::write_to_string(fixture->profile, Format::folded));
    const std::string main =
        "thread 4242 MainThread;<module> (/srv/app/main.py:40);main (/srv/app/main.py:31);"
        "Handler.handle (/srv/app/main.py:22)";
    EXPECT_EQ(lines[main + ";compute (/srv/app/main.py:12)"], 4u);
    EXPECT_EQ(lines[main + ";get (requests/api.py:73);SSLSocket.recv_into (ssl.py:1275);" +
                    std::string(output::kOffCpuFrame)],
              3u);
    EXPECT_EQ(lines["thread 4251;[no Python frames];[off-cpu]"], 10u);
    // ';' inside a name cannot split it; the tab becomes a space.
    EXPECT_EQ(lines["thread 4250 worker \"\xce\xb1\" <&>\\;<truncated>;"
                    "odd\"name'\\with,specials <&> (/srv/app/odd.py:2)"],
              2u);
    std::uint64_t total = 0;
    for (const auto& [stack, count] : lines)
        total += count;
    EXPECT_EQ(total, 30u);
}

TEST(OutputFolded, ProcessRootsAndMergingWithoutLineNumbers) {
    auto fixture = spyglass::test_support::make_output_fixture();
    model::Profile& profile = fixture->profile;
    profile.info.subprocesses = true;
    profile.display.per_thread_roots = false;
    profile.display.labels.line_numbers = false;
    std::string text = spyglass::test_support::write_to_string(profile, Format::folded);
    auto lines = parse_folded(text);
    // compute:12 and compute:14 are one line now: 4 + 1 samples.
    EXPECT_EQ(lines["process 4242;<module> (/srv/app/main.py);main (/srv/app/main.py);"
                    "Handler.handle (/srv/app/main.py);compute (/srv/app/main.py)"],
              5u);
    EXPECT_EQ(lines["process 4242;[no Python frames];[off-cpu]"], 10u);
    EXPECT_THAT(text, Not(HasSubstr("thread ")));
    // Sorted, and every stack once.
    std::istringstream in(text);
    std::string line, previous;
    std::size_t count = 0;
    while (std::getline(in, line)) {
        EXPECT_LT(previous, line);
        previous = line;
        ++count;
    }
    EXPECT_EQ(count, lines.size());
}

TEST(OutputFolded, NoRootsAndEmptyProfiles) {
    auto fixture = spyglass::test_support::make_output_fixture();
    fixture->profile.display.per_thread_roots = false;
    auto lines =
        parse_folded(spyglass::test_support::write_to_string(fixture->profile, Format::folded));
    EXPECT_EQ(lines["[no Python frames];[off-cpu]"], 10u);
    EXPECT_EQ(lines["<truncated>;odd\"name'\\with,specials <&> (/srv/app/odd.py:2)"], 2u);

    fixture->profile.samples.clear();
    fixture->profile.timeline.clear();
    EXPECT_EQ(spyglass::test_support::write_to_string(fixture->profile, Format::folded), "");
    // The others still write a valid, empty document.
    std::string svg = spyglass::test_support::write_to_string(fixture->profile, Format::flamegraph);
    EXPECT_THAT(svg, HasSubstr("No samples were recorded."));
    EXPECT_THAT(svg, Not(HasSubstr("<g><title>")));
    EXPECT_THAT(svg, Not(HasSubstr("too small to draw")));
    EXPECT_THAT(spyglass::test_support::write_to_string(fixture->profile, Format::speedscope),
                HasSubstr("\"profiles\":[]"));
}

TEST(OutputDisplayFrames, OneIdPerLabel) {
    auto fixture = spyglass::test_support::make_output_fixture();
    fixture->profile.display.labels.line_numbers = false;
    const model::Profile& profile = fixture->profile;
    auto leaf_line = [&](const model::AggregatedSample& s) {
        auto frames = profile.stacks->get(s.key.stack);
        return s.key.thread == 0 && !frames.empty() ? profile.frames->get(frames[0]).line : -1;
    };
    auto find = [&](int line) {
        for (const model::AggregatedSample& s : profile.samples)
            if (leaf_line(s) == line) return s.key.stack;
        throw std::runtime_error("no such sample");
    };
    output::DisplayFrames display(profile);
    std::vector<output::DisplayFrames::Id> a, b;
    display.stack(0, find(12), true, model::WaitId{}, a);  // compute:12
    display.stack(0, find(14), false, model::WaitId{}, b); // compute:14
    ASSERT_EQ(a.size(), 5u);
    ASSERT_EQ(b.size(), 6u);
    EXPECT_EQ(std::vector(a.begin(), a.end()), std::vector(b.begin(), b.end() - 1));
    EXPECT_TRUE(display[a[0]].synthetic);
    EXPECT_EQ(display[a[0]].label, "thread 4242 MainThread");
    EXPECT_EQ(display[a[4]].function, "compute");
    EXPECT_EQ(display[a[4]].file, "/srv/app/main.py");
    EXPECT_EQ(display[a[4]].line, 0);
    EXPECT_TRUE(display[b[5]].off_cpu);
    EXPECT_EQ(display[b[5]].label, output::kOffCpuFrame);
}

TEST(OutputWaits, PseudoFrameSyntax) {
    auto fixture = spyglass::test_support::make_wait_fixture();
    const model::Profile& profile = fixture->profile;
    model::WaitTable& waits = fixture->frames.waits();
    auto& strings = fixture->frames.strings();
    auto id = [&](model::WaitKind kind, const char* syscall, const char* target) {
        return waits.intern({kind, *syscall ? strings.intern(syscall) : model::StringId{},
                             *target ? strings.intern(target) : model::StringId{}});
    };
    using K = model::WaitKind;
    EXPECT_EQ(output::wait_label(profile, id(K::socket, "recvfrom", "tcp 127.0.0.1:5432")),
              "[wait recvfrom tcp 127.0.0.1:5432]");
    EXPECT_EQ(output::wait_label(profile, id(K::sleep, "clock_nanosleep", "")),
              "[wait clock_nanosleep]");
    // Up to 3.10 time.sleep is select() on no descriptors: a sleep, and it says so.
    EXPECT_EQ(output::wait_label(profile, id(K::sleep, "pselect6", "")), "[wait pselect6 sleep]");
    EXPECT_EQ(output::wait_label(profile, id(K::sleep, "poll", "")), "[wait poll sleep]");
    EXPECT_EQ(output::wait_label(profile, id(K::poll, "pselect6", "")), "[wait pselect6]");
    EXPECT_EQ(output::wait_label(profile, id(K::io, "", "")), "[wait io]");
    EXPECT_EQ(output::wait_label(profile, id(K::socket, "", "")), "[wait socket]"); // --waits=kind
    EXPECT_EQ(output::wait_label(profile, id(K::kernel, "", "folio_wait_bit")),
              "[wait kernel folio_wait_bit]");
    EXPECT_EQ(output::wait_label(profile, id(K::cpu_starved, "", "")), output::kCpuStarvedFrame);
    // top's rows: the target, else the call, else the kind.
    EXPECT_EQ(output::wait_summary(fixture->frames, id(K::gil, "futex", "GIL")), "GIL");
    EXPECT_EQ(output::wait_summary(fixture->frames, id(K::sleep, "clock_nanosleep", "")),
              "clock_nanosleep");
    EXPECT_EQ(output::wait_summary(fixture->frames, id(K::sleep, "pselect6", "")),
              "pselect6 sleep");
    EXPECT_EQ(output::wait_summary(fixture->frames, id(K::io, "", "")), "io");
}

// The wait replaces [off-cpu] as the leaf of an off-CPU sample; a cpu-starved sample is on-CPU
// and gets [cpu-starved]; a wait that contradicts the state is not shown.
TEST(OutputWaits, TheLeafOfASample) {
    auto fixture = spyglass::test_support::make_wait_fixture();
    const model::Profile& profile = fixture->profile;
    model::WaitTable& waits = fixture->frames.waits();
    auto& strings = fixture->frames.strings();
    model::WaitId gil =
        waits.intern({model::WaitKind::gil, strings.intern("futex"), strings.intern("GIL")});
    model::WaitId starved = waits.intern({model::WaitKind::cpu_starved, {}, {}});
    model::StackId stack = profile.samples.front().key.stack;
    output::DisplayFrames display(profile);
    std::vector<output::DisplayFrames::Id> off, unknown, cpu, on_with_wait, off_starved;
    display.stack(0, stack, false, gil, off);
    display.stack(0, stack, false, model::WaitId{}, unknown);
    display.stack(0, stack, true, starved, cpu);
    display.stack(0, stack, true, gil, on_with_wait);
    display.stack(0, stack, false, starved, off_starved);
    EXPECT_EQ(display[off.back()].label, "[wait futex GIL]");
    EXPECT_EQ(display[off.back()].wait, gil);
    EXPECT_TRUE(display[off.back()].off_cpu);
    EXPECT_EQ(display[unknown.back()].label, output::kOffCpuFrame);
    EXPECT_EQ(display[cpu.back()].label, output::kCpuStarvedFrame);
    EXPECT_FALSE(display[cpu.back()].off_cpu);
    EXPECT_EQ(on_with_wait.size(), off.size() - 1); // no leaf pseudo-frame at all
    EXPECT_EQ(display[off_starved.back()].label, output::kOffCpuFrame);
    // Every off-CPU line of the folded output ends in [off-cpu] or [wait ...]: excluding
    // both leaves the on-CPU time (docs/output-formats.md).
    auto lines = parse_folded(spyglass::test_support::write_to_string(profile, Format::folded));
    std::uint64_t on = 0, total = 0;
    for (const auto& [stack_text, count] : lines) {
        total += count;
        if (stack_text.find("[off-cpu]") == std::string::npos &&
            stack_text.find("[wait ") == std::string::npos)
            on += count;
    }
    std::uint64_t on_samples = 0;
    for (const model::AggregatedSample& s : profile.samples)
        if (s.key.on_cpu) on_samples += s.count;
    EXPECT_EQ(total, 16u);
    EXPECT_EQ(on, on_samples);
}

TEST(OutputXml, Escaping) {
    std::string out;
    output::append_xml_escaped(out, "a<b>&\"c'\td\n");
    EXPECT_EQ(out, "a&lt;b&gt;&amp;&quot;c&apos;\td\n");
    out.clear();
    // Control characters, broken, overlong and surrogate UTF-8 become U+FFFD; valid UTF-8 stays.
    output::append_xml_escaped(out, "\x01|\xc3|\xc0\xaf|\xed\xa0\x80|\xce\xb1|"
                                    "\xf0\x9f\x94\xa5|\xef\xbf\xbe");
    EXPECT_EQ(out, "\xEF\xBF\xBD|\xEF\xBF\xBD|\xEF\xBF\xBD\xEF\xBF\xBD|"
                   "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD|\xce\xb1|\xf0\x9f\x94\xa5|"
                   "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
}

// A wide, deep recording: tiny frames are left out so the SVG stays small.
TEST(OutputFlamegraph, PrunesFramesNarrowerThanATenthOfAPixel) {
    auto fixture = spyglass::test_support::make_output_fixture();
    model::Profile& profile = fixture->profile;
    auto& strings = fixture->frames.strings();
    std::uint32_t state = 12345;
    auto next = [&] { return state = state * 1103515245u + 12345u; };
    for (int i = 0; i < 5000; ++i) {
        std::vector<model::FrameId> stack;
        for (int depth = 0; depth < 30; ++depth)
            stack.push_back(fixture->frames.intern(
                {strings.intern("fn_" + std::to_string(next() % 5000)),
                 strings.intern("/srv/app/mod.py"), static_cast<int>(next() % 100 + 1), 1,
                 model::FrameKind::python}));
        model::SampleKey key{0, fixture->stacks.intern(stack), true, true};
        profile.samples.push_back({key, 1, 1000});
    }
    profile.samples.push_back(profile.samples[0]);
    // The rest is under 0.1 px each (the flame graph weighs samples by their time).
    profile.samples.back().count = 1'000'000;
    profile.samples.back().weight_ns = 1'000'000 * profile.info.period_ns;
    std::string svg = spyglass::test_support::write_to_string(profile, Format::flamegraph);
    std::size_t frames = 0;
    for (std::size_t at = svg.find("<g><title>"); at != std::string::npos;
         at = svg.find("<g><title>", at + 1))
        ++frames;
    EXPECT_LT(frames, 200u);
    EXPECT_LT(svg.size(), 300'000u);
    EXPECT_THAT(svg, HasSubstr("frames too small to draw"));
}

class OutputIoErrors : public ::testing::TestWithParam<Format> {};

TEST_P(OutputIoErrors, DiskFullIsAnError) {
    auto fixture = spyglass::test_support::make_output_fixture();
    std::FILE* full = std::fopen("/dev/full", "w");
    ASSERT_NE(full, nullptr);
    auto written = output::make_writer(GetParam())->write(fixture->profile, full);
    std::fclose(full);
    ASSERT_FALSE(written.has_value());
    EXPECT_EQ(written.error().code, Errc::io);
    EXPECT_THAT(written.error().message, HasSubstr("No space left on device"));
}

TEST_P(OutputIoErrors, ReadOnlyStreamIsAnError) {
    auto fixture = spyglass::test_support::make_output_fixture();
    std::FILE* in = std::fopen("/dev/null", "r");
    ASSERT_NE(in, nullptr);
    auto written = output::make_writer(GetParam())->write(fixture->profile, in);
    std::fclose(in);
    ASSERT_FALSE(written.has_value());
    EXPECT_EQ(written.error().code, Errc::io);
}

INSTANTIATE_TEST_SUITE_P(EveryFormat, OutputIoErrors,
                         ::testing::Values(Format::flamegraph, Format::folded, Format::pprof,
                                           Format::speedscope, Format::calls),
                         [](const auto& param_info) {
                             return output::format_name(param_info.param);
                         });

} // namespace
