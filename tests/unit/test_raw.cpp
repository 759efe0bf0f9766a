// The raw format: what is written is what a reader replays (samples, threads, totals, through
// a table reset), a file cut at any byte of its last blocks reads up to its last whole block,
// a damaged block stops the reading there, a newer version is refused, and repeated samples
// cost a couple of bytes.
#include "raw_fixture.hpp"
#include <gtest/gtest.h>
#include <zlib.h>

#include "spyglass/model/aggregator.hpp"

namespace {

using namespace spyglass;
using rawtest::make_raw_recording;
using rawtest::raw_block_offsets;
using rawtest::Transcript;

struct Replayed {
    Transcript transcript;
    output::RawReadStatus status;
    std::string last; // the last sample, described
};

std::unique_ptr<Replayed> replay(const std::string& bytes, bool last_only = false) {
    auto reader = output::RawReader::from_memory(bytes);
    if (!reader) return nullptr;
    auto out = std::make_unique<Replayed>(
        Replayed{Transcript((*reader)->frames(), (*reader)->stacks()), {}, {}});
    out->transcript.last_only = last_only;
    out->status = (*reader)->replay(out->transcript);
    // The transcript reads the reader's tables: describe before the reader goes.
    if (last_only && out->transcript.samples != 0) out->last = out->transcript.last_line();
    return out;
}

TEST(RawFormat, ReplaysWhatWasWrittenThroughAReset) {
    auto fixture = make_raw_recording(4000, true);
    ASSERT_FALSE(fixture.bytes.empty());
    auto reader = output::RawReader::from_memory(fixture.bytes);
    ASSERT_TRUE(reader) << reader.error().message;
    EXPECT_EQ((*reader)->header().host, "host");
    EXPECT_EQ((*reader)->header().target_pid, 4242);
    EXPECT_EQ((*reader)->info().command, (std::vector<std::string>{"python3", "app.py"}));
    Transcript transcript((*reader)->frames(), (*reader)->stacks());
    output::RawReadStatus status = (*reader)->replay(transcript);
    EXPECT_TRUE(status.complete) << status.problem;
    EXPECT_FALSE(status.damaged);
    EXPECT_EQ(status.samples, fixture.samples);
    ASSERT_EQ(transcript.lines.size(), fixture.lines.size());
    for (std::size_t i = 0; i < fixture.lines.size(); ++i)
        ASSERT_EQ(transcript.lines[i], fixture.lines[i]) << "line " << i;
    ASSERT_TRUE(transcript.finished);
    EXPECT_EQ(transcript.totals.python_version, "3.12.1");
    EXPECT_EQ(transcript.totals.samples, fixture.samples);
    EXPECT_EQ(transcript.totals.end, model::RecordingEnd::duration);
}

TEST(RawFormat, NativeFramesKeepTheirModulesAndBuildIds) {
    auto fixture = make_raw_recording(2000, true);
    std::size_t with_id = 0, without_id = 0;
    for (const std::string& line : fixture.lines) {
        with_id += line.find("|/usr/lib/libx0.so|b1d0;") != std::string::npos;
        without_id += line.find("|/usr/lib/libx2.so|;") != std::string::npos;
    }
    ASSERT_GT(with_id, 0u);
    ASSERT_GT(without_id, 0u);
    auto reader = output::RawReader::from_memory(fixture.bytes);
    ASSERT_TRUE(reader) << reader.error().message;
    Transcript transcript((*reader)->frames(), (*reader)->stacks());
    (*reader)->replay(transcript);
    EXPECT_EQ(transcript.lines, fixture.lines);
}

TEST(RawFormat, Version1FilesAreStillRead) {
    auto fixture = make_raw_recording(2000, true, 5, 1'000'000, 1);
    ASSERT_FALSE(fixture.bytes.empty());
    EXPECT_EQ(static_cast<unsigned char>(fixture.bytes[8]), 1);
    auto reader = output::RawReader::from_memory(fixture.bytes);
    ASSERT_TRUE(reader) << reader.error().message;
    EXPECT_EQ((*reader)->header().format_version, 1);
    Transcript transcript((*reader)->frames(), (*reader)->stacks());
    output::RawReadStatus status = (*reader)->replay(transcript);
    EXPECT_TRUE(status.complete) << status.problem;
    EXPECT_EQ(transcript.lines, fixture.lines);
}

TEST(RawFormat, ReplayingTwiceGivesTheSameIds) {
    auto fixture = make_raw_recording(2000, false);
    auto reader = output::RawReader::from_memory(fixture.bytes);
    ASSERT_TRUE(reader);
    model::Aggregator first((*reader)->frames(), (*reader)->stacks(), false);
    (*reader)->replay(first);
    model::Aggregator second((*reader)->frames(), (*reader)->stacks(), false);
    (*reader)->replay(second);
    auto a = first.profile({}), b = second.profile({});
    ASSERT_EQ(a.samples.size(), b.samples.size());
    for (std::size_t i = 0; i < a.samples.size(); ++i) {
        EXPECT_EQ(a.samples[i].key, b.samples[i].key);
        EXPECT_EQ(a.samples[i].weight_ns, b.samples[i].weight_ns);
    }
}

TEST(RawFormat, CutAtEveryByteOfTheLastBlocksReadsUpToTheLastWholeBlock) {
    // Small blocks (a pass every 40 ms), so that every byte of the last ones is a cut.
    auto fixture = make_raw_recording(3000, true, 11, 40'000'000);
    std::vector<std::size_t> blocks = raw_block_offsets(fixture.bytes);
    ASSERT_GE(blocks.size(), 20u) << "the fixture should span many blocks";
    // How many samples each whole-block prefix holds, from cutting right at block ends
    // (blocks[0] is the recording header: a file cut before its end is no recording yet).
    EXPECT_FALSE(output::RawReader::from_memory(fixture.bytes.substr(0, blocks[1] - 1)));
    std::vector<std::size_t> samples_at(blocks.size());
    for (std::size_t b = 1; b < blocks.size(); ++b) {
        auto whole = replay(fixture.bytes.substr(0, blocks[b]));
        ASSERT_TRUE(whole);
        samples_at[b] = whole->transcript.samples;
        if (b + 1 < blocks.size()) {
            EXPECT_FALSE(whole->status.complete);
            EXPECT_EQ(whole->status.good_bytes, blocks[b]);
        }
    }
    EXPECT_EQ(samples_at.back(), fixture.samples);
    std::vector<std::string> sample_lines;
    for (const std::string& line : fixture.lines)
        if (line.rfind("start ", 0) != 0 && line.rfind("thread ", 0) != 0)
            sample_lines.push_back(line);
    // Every cut inside the last three blocks: the blocks before it, whole, and nothing else.
    std::size_t first = blocks[blocks.size() - 4];
    for (std::size_t cut = first; cut < fixture.bytes.size(); ++cut) {
        std::size_t b = 0;
        while (b + 1 < blocks.size() && blocks[b + 1] <= cut)
            ++b;
        auto read = replay(fixture.bytes.substr(0, cut), cut != blocks[b]);
        ASSERT_TRUE(read) << cut;
        ASSERT_FALSE(read->status.complete) << cut;
        ASSERT_FALSE(read->status.damaged) << cut; // a cut, not damage
        ASSERT_EQ(read->status.good_bytes, blocks[b]) << cut;
        ASSERT_EQ(read->transcript.samples, samples_at[b]) << cut;
        ASSERT_FALSE(read->status.problem.empty());
        // What was read is a prefix of what was written (its last sample, every line once).
        if (!read->last.empty()) {
            ASSERT_EQ(read->last, sample_lines[read->transcript.samples - 1]) << cut;
        }
        if (cut == blocks[b]) {
            for (std::size_t i = 0; i < read->transcript.lines.size(); ++i)
                ASSERT_EQ(read->transcript.lines[i], fixture.lines[i]) << cut << " line " << i;
        }
        ASSERT_TRUE(read->transcript.finished); // totals made from what was read
        EXPECT_EQ(read->transcript.totals.samples, samples_at[b]);
    }
}

TEST(RawFormat, ADamagedBlockStopsTheReadingThere) {
    auto fixture = make_raw_recording(6000, false);
    std::vector<std::size_t> blocks = raw_block_offsets(fixture.bytes);
    ASSERT_GE(blocks.size(), 4u);
    std::string bytes = fixture.bytes;
    std::size_t victim = blocks[2];
    bytes[victim + 20] = static_cast<char>(bytes[victim + 20] ^ 0x40); // in its payload
    auto read = replay(bytes);
    ASSERT_TRUE(read);
    EXPECT_TRUE(read->status.damaged);
    EXPECT_FALSE(read->status.complete);
    EXPECT_EQ(read->status.good_bytes, victim);
    EXPECT_NE(read->status.problem.find("checksum"), std::string::npos) << read->status.problem;
    auto whole = replay(fixture.bytes.substr(0, victim));
    EXPECT_EQ(read->transcript.samples, whole->transcript.samples);
}

TEST(RawFormat, ANewerVersionIsRefusedNotMisread) {
    auto fixture = make_raw_recording(100, false);
    std::string bytes = fixture.bytes;
    bytes[8] = 3; // version 3
    // The header's own checksum is right: the version is what is refused.
    std::uint32_t crc =
        static_cast<std::uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(bytes.data()), 12));
    for (int i = 0; i < 4; ++i)
        bytes[12 + static_cast<std::size_t>(i)] = static_cast<char>((crc >> (8 * i)) & 0xff);
    auto reader = output::RawReader::from_memory(bytes);
    ASSERT_FALSE(reader);
    EXPECT_NE(reader.error().message.find("format version 3, newer than this spyglass reads"),
              std::string::npos)
        << reader.error().message;
    auto other = output::RawReader::from_memory("digraph { a -> b }");
    ASSERT_FALSE(other);
    EXPECT_NE(other.error().message.find("not a spyglass raw recording"), std::string::npos);
    EXPECT_FALSE(output::RawReader::from_memory(fixture.bytes.substr(0, 10)));
    EXPECT_FALSE(output::RawReader::from_memory(""));
}

TEST(RawFormat, RepeatedSamplesCostAboutAByte) {
    // 50 idle threads, one stack each, sampled 10,000 times: what continuous recording of a
    // quiet service looks like.
    model::FrameTable frames;
    model::StackTable stacks;
    std::string path = "/tmp/spyglass-raw-repeated.sgr";
    auto writer = output::RawWriter::open(path, frames, stacks, {});
    ASSERT_TRUE(writer);
    model::RecordingInfo info;
    info.period_ns = 1'000'000;
    (*writer)->start(info);
    std::vector<model::StackId> stack_of;
    for (std::uint32_t t = 0; t < 50; ++t) {
        (*writer)->thread(t, {1, static_cast<pid_t>(100 + t), t, fmt::format("worker-{}", t)});
        model::Frame f{frames.strings().intern(fmt::format("wait_{}", t % 5)),
                       frames.strings().intern("/app/pool.py"), 10, 3, model::FrameKind::python};
        model::FrameId id = frames.intern(f);
        stack_of.push_back(stacks.intern(std::span(&id, 1)));
    }
    std::uint64_t samples = 0;
    for (std::uint64_t tick = 1; tick <= 10'000; ++tick) {
        std::uint64_t weight = 1'000'000 + (tick * 7919) % 2000; // a jittery clock
        for (std::uint32_t t = 0; t < 50; ++t) {
            model::Sample s;
            s.key = {t, stack_of[t], false, false, 0};
            s.time_ns = tick * 1'000'000 + (tick * 104729) % 5000;
            s.weight_ns = weight;
            (*writer)->sample(s);
            ++samples;
        }
        (*writer)->advance(tick * 1'000'000);
    }
    (*writer)->finish({});
    double per_sample =
        static_cast<double>((*writer)->bytes_written()) / static_cast<double>(samples);
    ::unlink(path.c_str());
    EXPECT_LT(per_sample, 1.0) << per_sample << " bytes per sample";
}

} // namespace
