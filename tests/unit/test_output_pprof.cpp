// pprof, decoded with libprotobuf: gzip framing, sample types and their values, the default
// sample type per mode, deduplicated functions and locations, and the labels that carry
// on/off-CPU, GIL, thread and pid.
#include <map>
#include <set>

#include "../tools/output_fixture.hpp"
#include "profile.pb.h"
#include <gtest/gtest.h>

#include "spyglass/output/writer.hpp"

namespace {

using namespace spyglass;
namespace pb = perftools::profiles;

pb::Profile decode(const model::Profile& profile) {
    std::string bytes = spyglass::test_support::write_to_string(profile, output::Format::pprof);
    EXPECT_GE(bytes.size(), 18u);
    EXPECT_EQ(static_cast<unsigned char>(bytes[0]), 0x1f); // gzip magic
    EXPECT_EQ(static_cast<unsigned char>(bytes[1]), 0x8b);
    pb::Profile decoded;
    EXPECT_TRUE(decoded.ParseFromString(spyglass::test_support::gunzip(bytes)));
    return decoded;
}

struct Text {
    const pb::Profile& p;
    const std::string& operator()(std::int64_t i) const {
        return p.string_table(static_cast<int>(i));
    }
};

std::map<std::string, std::string> labels(const pb::Profile& p, const pb::Sample& s) {
    Text text{p};
    std::map<std::string, std::string> out;
    for (const pb::Label& label : s.label())
        out[text(label.key())] = label.str() != 0 ? text(label.str()) : std::to_string(label.num());
    return out;
}

TEST(OutputPprof, HeaderSampleTypesAndTimes) {
    auto fixture = spyglass::test_support::make_output_fixture();
    pb::Profile p = decode(fixture->profile);
    Text text{p};
    ASSERT_GT(p.string_table_size(), 0);
    EXPECT_EQ(p.string_table(0), "");
    ASSERT_EQ(p.sample_type_size(), 3);
    std::vector<std::string> types;
    for (const pb::ValueType& t : p.sample_type())
        types.push_back(text(t.type()) + "/" + text(t.unit()));
    EXPECT_EQ(types,
              (std::vector<std::string>{"samples/count", "wall/nanoseconds", "cpu/nanoseconds"}));
    EXPECT_EQ(text(p.default_sample_type()), "wall");
    EXPECT_EQ(text(p.period_type().type()), "wall");
    EXPECT_EQ(text(p.period_type().unit()), "nanoseconds");
    EXPECT_EQ(p.period(), 10'000'000);
    EXPECT_EQ(p.time_nanos(), 1'700'000'000'123'456'789);
    EXPECT_EQ(p.duration_nanos(), 100'000'000);

    fixture->profile.info.mode = model::SampleMode::cpu;
    pb::Profile cpu = decode(fixture->profile);
    EXPECT_EQ(cpu.string_table(static_cast<int>(cpu.default_sample_type())), "cpu");
}

TEST(OutputPprof, ValuesAndLabels) {
    auto fixture = spyglass::test_support::make_output_fixture();
    pb::Profile p = decode(fixture->profile);
    ASSERT_EQ(static_cast<std::size_t>(p.sample_size()), fixture->profile.samples.size());
    std::int64_t count = 0, wall = 0, cpu = 0, off_cpu = 0, gil = 0;
    std::set<std::string> threads;
    for (const pb::Sample& s : p.sample()) {
        ASSERT_EQ(s.value_size(), 3);
        EXPECT_EQ(s.value(1), s.value(0) * 10'000'000);
        count += s.value(0);
        wall += s.value(1);
        cpu += s.value(2);
        auto l = labels(p, s);
        EXPECT_EQ(l.size(), l.count("thread") ? 5u : 4u);
        EXPECT_TRUE(l["state"] == "on-cpu" || l["state"] == "off-cpu") << l["state"];
        EXPECT_TRUE(l["gil"] == "true" || l["gil"] == "false") << l["gil"];
        EXPECT_EQ(l["pid"], "4242");
        if (l["state"] == "off-cpu") off_cpu += s.value(0);
        if (l["gil"] == "true") gil += s.value(0);
        threads.insert(l["thread_id"] + " " + l["thread"]);
        // No [off-cpu] frame in pprof (the state label says it); the idle thread's samples
        // have one "[no Python frames]" location, so that pprof's views keep them.
        EXPECT_GT(s.location_id_size(), 0);
        if (l["thread_id"] == "4251") {
            EXPECT_EQ(s.location_id_size(), 1);
        }
    }
    EXPECT_EQ(count, 30);
    EXPECT_EQ(wall, 300'000'000);
    std::int64_t expected_cpu = 0;
    for (const auto& s : fixture->profile.samples)
        expected_cpu += static_cast<std::int64_t>(s.cpu_ns);
    EXPECT_EQ(cpu, expected_cpu);
    EXPECT_EQ(off_cpu, 3 + 2 + 10);
    EXPECT_EQ(gil, 6 + 1); // MainThread's on-CPU ticks but one; the worker once
    EXPECT_EQ(threads, (std::set<std::string>{"4242 MainThread", "4250 worker \"\xce\xb1\" <&>\\",
                                              "4251 "}));
}

TEST(OutputPprof, FunctionsAndLocationsAreDeduplicated) {
    auto fixture = spyglass::test_support::make_output_fixture();
    pb::Profile p = decode(fixture->profile);
    Text text{p};
    std::map<std::uint64_t, const pb::Function*> functions;
    std::set<std::tuple<std::string, std::string, std::int64_t>> function_keys;
    for (const pb::Function& f : p.function()) {
        EXPECT_TRUE(functions.emplace(f.id(), &f).second);
        EXPECT_TRUE(
            function_keys.emplace(text(f.name()), text(f.filename()), f.start_line()).second);
        EXPECT_EQ(f.system_name(), 0); // else pprof "demangles" <module> away
    }
    // compute at lines 12 and 14: one function, two locations. Full paths, for pprof -list.
    std::map<std::string, std::set<std::int64_t>> lines_of;
    std::set<std::pair<std::uint64_t, std::int64_t>> location_keys;
    for (int i = 0; i < p.location_size(); ++i) {
        const pb::Location& loc = p.location(i);
        EXPECT_EQ(loc.id(), static_cast<std::uint64_t>(i) + 1);
        ASSERT_EQ(loc.line_size(), 1);
        ASSERT_TRUE(functions.count(loc.line(0).function_id()));
        const pb::Function& f = *functions[loc.line(0).function_id()];
        lines_of[text(f.name()) + " " + text(f.filename())].insert(loc.line(0).line());
        EXPECT_TRUE(location_keys.emplace(loc.line(0).function_id(), loc.line(0).line()).second);
    }
    EXPECT_EQ(lines_of["compute /srv/app/main.py"], (std::set<std::int64_t>{12, 14}));
    EXPECT_EQ(lines_of["get /opt/venv/lib/python3.11/site-packages/requests/api.py"],
              (std::set<std::int64_t>{73}));
    EXPECT_EQ(lines_of["<truncated> "], (std::set<std::int64_t>{0}));
    EXPECT_EQ(lines_of["[no Python frames] "], (std::set<std::int64_t>{0}));
    // 11 Python frames, compute twice; the marker; [no Python frames].
    EXPECT_EQ(p.function_size(), 12);
    EXPECT_EQ(p.location_size(), 13);
    EXPECT_EQ(p.mapping_size(), 1);
    EXPECT_TRUE(p.mapping(0).has_functions());

    // Leaf first: the network sample's first location is recv_into.
    for (const pb::Sample& s : p.sample()) {
        auto l = labels(p, s);
        if (l["state"] != "off-cpu" || l["thread_id"] == "4251") continue;
        const pb::Location& leaf = p.location(static_cast<int>(s.location_id(0) - 1));
        const pb::Location& root =
            p.location(static_cast<int>(s.location_id(s.location_id_size() - 1) - 1));
        std::string leaf_name = text(functions[leaf.line(0).function_id()]->name());
        std::string root_name = text(functions[root.line(0).function_id()]->name());
        EXPECT_TRUE(leaf_name == "SSLSocket.recv_into" || leaf_name == "gr\xc3\xb6\xc3\x9f"
                                                                       "e_berechnen")
            << leaf_name;
        EXPECT_TRUE(root_name == "<module>" || root_name == "<truncated>") << root_name;
    }
}

TEST(OutputPprof, NoLineNumbersMergesLocations) {
    auto fixture = spyglass::test_support::make_output_fixture();
    fixture->profile.display.labels.line_numbers = false;
    pb::Profile p = decode(fixture->profile);
    EXPECT_EQ(p.location_size(), 12); // compute:12 and compute:14 are one location
    for (const pb::Location& loc : p.location())
        EXPECT_EQ(loc.line(0).line(), 0);
}

// A native frame's module is its own mapping (path and build-id); its function is named and,
// where DWARF had it, has its source file and line.
TEST(OutputPprof, NativeFramesHaveTheirModulesMapping) {
    auto fixture = spyglass::test_support::make_output_fixture();
    model::FrameTable& frames = fixture->frames;
    auto& strings = frames.strings();
    model::StringId libc = strings.intern("/usr/lib/x86_64-linux-gnu/libc.so.6");
    frames.set_build_id(libc, "93ac61ec");
    model::Frame with_line{strings.intern("read"),
                           strings.intern("./io/read.c"),
                           26,
                           0,
                           model::FrameKind::native,
                           libc};
    model::Frame without{
        strings.intern("qsort"), strings.intern("libc.so.6"), 0, 0, model::FrameKind::native, libc};
    model::FrameId read = frames.intern(with_line), sort = frames.intern(without);
    model::AggregatedSample sample = fixture->profile.samples.front();
    std::vector<model::FrameId> ids{read, sort};
    for (model::FrameId id : fixture->stacks.get(sample.key.stack))
        ids.push_back(id);
    sample.key.stack = fixture->stacks.intern(ids);
    fixture->profile.samples.push_back(sample);

    EXPECT_EQ(output::frame_label(fixture->profile, read), "read (read.c:26)");
    EXPECT_EQ(output::frame_label(fixture->profile, sort), "qsort (libc.so.6)");
    pb::Profile p = decode(fixture->profile);
    Text text{p};
    ASSERT_EQ(p.mapping_size(), 2);
    const pb::Mapping& mapping = p.mapping(1);
    EXPECT_EQ(mapping.id(), 2u);
    EXPECT_EQ(text(mapping.filename()), "/usr/lib/x86_64-linux-gnu/libc.so.6");
    EXPECT_EQ(text(mapping.build_id()), "93ac61ec");
    EXPECT_TRUE(mapping.has_functions());
    std::map<std::string, std::pair<std::string, std::int64_t>> natives;
    for (const pb::Location& loc : p.location()) {
        if (loc.mapping_id() != 2) continue;
        const pb::Function& f = p.function(static_cast<int>(loc.line(0).function_id() - 1));
        natives[text(f.name())] = {text(f.filename()), loc.line(0).line()};
    }
    EXPECT_EQ(natives["read"], (std::pair<std::string, std::int64_t>{"./io/read.c", 26}));
    EXPECT_EQ(natives["qsort"], (std::pair<std::string, std::int64_t>{"libc.so.6", 0}));
    EXPECT_EQ(natives.size(), 2u);
}

} // namespace
