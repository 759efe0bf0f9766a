// Per-sample labels: the label-set table (interning, order, one value per key, emptied with the
// frame table), their projection into other tables, the NAME=VALUE spelling, report --where,
// pprof's sample labels, and the raw format's round trip (version 4) across a table reset.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "../tools/output_fixture.hpp"
#include "profile.pb.h"
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "spyglass/input/raw_reader.hpp"
#include "spyglass/model/aggregator.hpp"
#include "spyglass/model/labels.hpp"
#include "spyglass/model/projector.hpp"
#include "spyglass/model/select.hpp"
#include "spyglass/output/raw.hpp"

namespace {

using namespace spyglass;

model::LabelSetId intern_text(model::FrameTable& frames,
                              const std::vector<std::pair<std::string, std::string>>& pairs) {
    std::vector<model::Label> labels;
    for (const auto& [key, value] : pairs)
        labels.push_back({frames.strings().intern(key), frames.strings().intern(value)});
    return frames.intern_labels(labels);
}

std::string label_text(const model::FrameTable& frames, model::LabelSetId id) {
    std::string out;
    for (const model::Label& label : frames.label_sets().get(id))
        out += fmt::format("{}{}={}", out.empty() ? "" : ",", frames.strings().view(label.key),
                           frames.strings().view(label.value));
    return out;
}

model::StackId one_frame_stack(model::FrameTable& frames, model::StackTable& stacks,
                               std::string_view function) {
    model::FrameId id =
        frames.intern({frames.strings().intern(function), frames.strings().intern("/app.py"), 3, 1,
                       model::FrameKind::python});
    return stacks.intern(std::span(&id, 1));
}

TEST(LabelSets, InternedSortedByKeyWithOneValuePerKey) {
    model::FrameTable frames;
    EXPECT_EQ(frames.label_sets().size(), 1u); // id 0: no labels
    EXPECT_EQ(intern_text(frames, {}), model::LabelSetId{});
    model::LabelSetId a = intern_text(frames, {{"tier", "web"}, {"env", "prod"}});
    model::LabelSetId b = intern_text(frames, {{"env", "prod"}, {"tier", "web"}});
    EXPECT_NE(a, model::LabelSetId{});
    EXPECT_EQ(a, b);
    EXPECT_EQ(label_text(frames, a), "env=prod,tier=web");
    // Of a key given twice the last value counts.
    model::LabelSetId c = intern_text(frames, {{"env", "dev"}, {"tier", "web"}, {"env", "prod"}});
    EXPECT_EQ(c, a);
    model::LabelSetId d = intern_text(frames, {{"env", "dev"}});
    EXPECT_NE(d, a);
    EXPECT_EQ(frames.label_sets().size(), 3u);
    frames.clear();
    EXPECT_EQ(frames.label_sets().size(), 1u);
    EXPECT_TRUE(frames.label_sets().get(model::LabelSetId{}).empty());
    EXPECT_EQ(label_text(frames, intern_text(frames, {{"b", "2"}, {"a", "1"}})), "a=1,b=2");
}

TEST(LabelSets, TheKeyHashesAndComparesItsLabels) {
    model::SampleKey plain, labelled;
    labelled.labels = model::LabelSetId(1);
    EXPECT_NE(plain, labelled);
    EXPECT_NE(model::SampleKeyHash{}(plain), model::SampleKeyHash{}(labelled));
}

TEST(LabelSets, AProjectionCarriesThemIntoOtherTables) {
    model::FrameTable frames;
    model::StackTable stacks;
    frames.strings().intern("padding"); // different string ids in the two tables
    model::LabelSetId set = intern_text(frames, {{"env", "prod"}, {"tier", "web"}});
    model::FrameTable to_frames;
    model::StackTable to_stacks;
    model::StackProjector projector(frames, stacks, {});
    projector.retarget(to_frames, to_stacks);
    model::SampleKey key;
    key.stack = one_frame_stack(frames, stacks, "f");
    key.labels = set;
    model::SampleKey out = projector.key(key);
    EXPECT_EQ(label_text(to_frames, out.labels), "env=prod,tier=web");
    EXPECT_EQ(projector.labels(set), out.labels);
    EXPECT_EQ(projector.labels(model::LabelSetId{}), model::LabelSetId{});
}

TEST(LabelSets, NamesAndValuesAreChecked) {
    auto good = model::parse_label("--label", "service.name=check-out=1");
    ASSERT_TRUE(good);
    EXPECT_EQ(good->key, "service.name");
    EXPECT_EQ(good->value, "check-out=1");
    for (const char* bad : {"env", "=prod", "env=", "en v=prod", "env=a\nb", "é=1"}) {
        auto parsed = model::parse_label("--label", bad);
        ASSERT_FALSE(parsed) << bad;
        EXPECT_EQ(parsed.error().code, Errc::invalid_argument);
        EXPECT_EQ(parsed.error().message.find('\n'), std::string::npos) << bad;
        EXPECT_EQ(parsed.error().message.rfind("--label '", 0), 0u) << parsed.error().message;
    }
    EXPECT_FALSE(model::parse_label("--label", std::string(model::kMaxLabelKey + 1, 'k') + "=v"));
    EXPECT_FALSE(model::parse_label("--label", "k=" + std::string(model::kMaxLabelValue + 1, 'v')));
}

TEST(LabelSets, WhereKeepsSamplesWithEveryLabelAsked) {
    model::FrameTable frames;
    model::StackTable stacks;
    model::StackId stack = one_frame_stack(frames, stacks, "f");
    model::LabelSetId prod = intern_text(frames, {{"env", "prod"}, {"tier", "web"}});
    model::LabelSetId dev = intern_text(frames, {{"env", "dev"}, {"tier", "web"}});
    auto kept = [&](std::vector<model::LabelText> where, const model::FrameTable* table) {
        model::Aggregator aggregator(frames, stacks, false);
        model::Selection selection;
        selection.labels = std::move(where);
        model::SelectingSink select(selection, {}, aggregator, table);
        select.thread(0, {1, 1, 1, "main"});
        for (model::LabelSetId labels : {prod, dev, model::LabelSetId{}}) {
            model::Sample sample;
            sample.key.stack = stack;
            sample.key.labels = labels;
            select.sample(sample);
        }
        return select.kept();
    };
    EXPECT_EQ(kept({}, &frames), 3u);
    EXPECT_EQ(kept({{"env", "prod"}}, &frames), 1u);
    EXPECT_EQ(kept({{"tier", "web"}}, &frames), 2u);
    EXPECT_EQ(kept({{"tier", "web"}, {"env", "dev"}}, &frames), 1u);
    EXPECT_EQ(kept({{"env", "qa"}}, &frames), 0u);
    EXPECT_EQ(kept({{"env", "prod"}}, nullptr), 0u);
}

TEST(LabelSets, PprofSamplesCarryEachLabel) {
    model::FrameTable frames;
    model::StackTable stacks;
    model::Aggregator aggregator(frames, stacks, false);
    aggregator.thread(0, {1, 1, 1, "main"});
    model::Sample sample;
    sample.key.stack = one_frame_stack(frames, stacks, "f");
    sample.weight_ns = 10;
    aggregator.sample(sample); // no labels
    sample.key.labels = intern_text(frames, {{"env", "prod"}, {"tier", "web"}});
    aggregator.sample(sample);
    aggregator.sample(sample);
    std::string bytes =
        test_support::write_to_string(aggregator.profile({}), output::Format::pprof);
    perftools::profiles::Profile decoded;
    ASSERT_TRUE(decoded.ParseFromString(test_support::gunzip(bytes)));
    std::map<std::int64_t, std::map<std::string, std::string>> by_count;
    for (const auto& s : decoded.sample()) {
        auto& labels = by_count[s.value(0)];
        for (const auto& label : s.label())
            if (label.str() != 0)
                labels[decoded.string_table(static_cast<int>(label.key()))] =
                    decoded.string_table(static_cast<int>(label.str()));
    }
    ASSERT_EQ(by_count.size(), 2u);
    EXPECT_EQ(by_count[2]["env"], "prod");
    EXPECT_EQ(by_count[2]["tier"], "web");
    EXPECT_FALSE(by_count[1].contains("env"));
    EXPECT_FALSE(by_count[1].contains("tier"));
}

// What a replay delivers: each sample's thread and labels, as text.
class LabelledSamples final : public model::SampleSink {
  public:
    explicit LabelledSamples(const model::FrameTable& frames) : frames_(frames) {}
    void thread(std::uint32_t, const model::ThreadInfo&) override {}
    void sample(const model::Sample& s) override {
        lines.push_back(fmt::format("t{} {}", s.key.thread, label_text(frames_, s.key.labels)));
    }
    std::vector<std::string> lines;

  private:
    const model::FrameTable& frames_;
};

TEST(LabelSets, RawVersion4KeepsThemAcrossAReset) {
    model::FrameTable frames;
    model::StackTable stacks;
    std::string path = fmt::format("/tmp/spyglass-labels-{}.sgr", ::getpid());
    output::RawHeader header;
    auto opened = output::RawWriter::open(path, frames, stacks, header);
    ASSERT_TRUE(opened) << opened.error().message;
    output::RawWriter& writer = **opened;
    writer.start({});
    writer.thread(0, {1, 1, 1, "main"});
    writer.thread(1, {1, 2, 2, "worker"});
    std::vector<std::string> expected;
    std::uint64_t time = 0;
    auto sample = [&](std::uint32_t thread, model::LabelSetId labels) {
        model::Sample s;
        s.key.thread = thread;
        s.key.stack = one_frame_stack(frames, stacks, "f");
        s.key.labels = labels;
        s.time_ns = ++time;
        s.weight_ns = 10;
        writer.sample(s);
        expected.push_back(fmt::format("t{} {}", thread, label_text(frames, labels)));
    };
    model::LabelSetId prod = intern_text(frames, {{"env", "prod"}, {"tier", "web"}});
    sample(0, prod);
    sample(1, {});
    sample(0, prod); // its thread's labels again: not written again
    sample(1, intern_text(frames, {{"env", "dev"}}));
    sample(0, {});
    sample(1, intern_text(frames, {{"env", "dev"}}));
    frames.clear();
    stacks.clear();
    writer.tables_reset();
    sample(1, {});
    sample(0, intern_text(frames, {{"tier", "db"}}));
    sample(0, intern_text(frames, {{"tier", "db"}}));
    writer.finish({});
    opened->reset();
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    ::unlink(path.c_str());

    auto reader = output::RawReader::from_memory(bytes);
    ASSERT_TRUE(reader) << reader.error().message;
    EXPECT_GE((*reader)->header().format_version, 4); // this writer's, which has them
    LabelledSamples replayed((*reader)->frames());
    output::RawReadStatus status = (*reader)->replay(replayed);
    EXPECT_TRUE(status.complete) << status.problem;
    EXPECT_EQ(replayed.lines, expected);
}

TEST(LabelSets, OlderRawVersionsAreWrittenWithoutThem) {
    model::FrameTable frames;
    model::StackTable stacks;
    std::string path = fmt::format("/tmp/spyglass-labels-v3-{}.sgr", ::getpid());
    output::RawHeader header;
    header.format_version = 3;
    auto opened = output::RawWriter::open(path, frames, stacks, header);
    ASSERT_TRUE(opened);
    (*opened)->start({});
    (*opened)->thread(0, {1, 1, 1, "main"});
    model::Sample s;
    s.key.stack = one_frame_stack(frames, stacks, "f");
    s.key.labels = intern_text(frames, {{"env", "prod"}});
    (*opened)->sample(s);
    (*opened)->finish({});
    opened->reset();
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), {});
    ::unlink(path.c_str());
    auto reader = output::RawReader::from_memory(bytes);
    ASSERT_TRUE(reader);
    LabelledSamples replayed((*reader)->frames());
    EXPECT_TRUE((*reader)->replay(replayed).complete);
    EXPECT_EQ(replayed.lines, std::vector<std::string>{"t0 "});
}

} // namespace
