// The raw format: what is written is what a reader replays (processes, samples, threads,
// totals, through a table reset), a file cut at any byte of its last blocks reads up to its last
// whole block and still names its processes' Python versions, a damaged block stops the reading
// there, versions 1 and 2 are read, a newer version is refused, and repeated samples cost a
// couple of bytes.
#include <algorithm>

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

// A stored record block holding `records`, its checksum right.
std::string stored_block(const std::string& records) {
    std::string block;
    block.push_back(2); // records
    block.push_back(0); // stored
    block.append(2, '\0');
    for (int k = 0; k < 2; ++k)
        for (int i = 0; i < 4; ++i)
            block.push_back(static_cast<char>((records.size() >> (8 * i)) & 0xff));
    std::uint32_t crc = static_cast<std::uint32_t>(
        crc32(crc32(0L, reinterpret_cast<const Bytef*>(block.data()), 12),
              reinterpret_cast<const Bytef*>(records.data()), static_cast<uInt>(records.size())));
    for (int i = 0; i < 4; ++i)
        block.push_back(static_cast<char>((crc >> (8 * i)) & 0xff));
    return block + records;
}

// The file up to the start of its last block: the end record cut off, as SIGKILL would.
std::string without_last_block(const std::string& bytes) {
    std::vector<std::size_t> blocks = raw_block_offsets(bytes);
    return bytes.substr(0, blocks[blocks.size() - 2]);
}

TEST(RawFormat, ProcessesComeBeforeTheirThreadsAndSamples) {
    auto fixture = make_raw_recording(3000, true, 11, 40'000'000);
    auto read = replay(fixture.bytes);
    ASSERT_TRUE(read);
    EXPECT_TRUE(read->status.complete) << read->status.problem;
    const Transcript& t = read->transcript;
    ASSERT_EQ(t.processes.size(), 2u);
    EXPECT_EQ(t.processes[0].pid, 4242);
    EXPECT_EQ(t.processes[0].python_version, "3.12.1");
    EXPECT_EQ(t.processes[0].interpreter, "/usr/bin/python3.12");
    EXPECT_EQ(t.processes[1].pid, 4250);
    EXPECT_EQ(t.processes[1].python_version, "3.11.9");
    EXPECT_EQ(t.processes[1].interpreter, "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0");
    // In the order written: each process before its first thread, and that before its samples.
    EXPECT_EQ(t.lines, fixture.lines);
    auto at = [&](const std::string& prefix) {
        return std::find_if(t.lines.begin(), t.lines.end(),
                            [&](const std::string& l) { return l.rfind(prefix, 0) == 0; }) -
               t.lines.begin();
    };
    EXPECT_EQ(at("process 4242 "), 1);
    EXPECT_LT(at("process 4250 "), at("thread 3 4250 "));
    EXPECT_LT(at("thread 3 4250 "), at("t3 "));
    EXPECT_LT(at("t3 "), static_cast<std::ptrdiff_t>(t.lines.size()));
    // The end record is as before: the first process's version, every pid.
    EXPECT_EQ(t.totals.python_version, "3.12.1");
    EXPECT_EQ(t.totals.pids, (std::vector<pid_t>{4242, 4250}));
}

TEST(RawFormat, AFileCutBeforeItsEndStillNamesItsProcessesPythonVersions) {
    auto fixture = make_raw_recording(3000, true, 11, 40'000'000);
    std::string cut = without_last_block(fixture.bytes);
    auto reader = output::RawReader::from_memory(cut);
    ASSERT_TRUE(reader) << reader.error().message;
    // Through the aggregator, as report --summary reads it.
    model::Aggregator aggregator((*reader)->frames(), (*reader)->stacks(), false);
    output::RawReadStatus status = (*reader)->replay(aggregator);
    EXPECT_FALSE(status.complete);
    EXPECT_FALSE(status.damaged);
    model::Profile profile = aggregator.profile({});
    ASSERT_EQ(profile.processes.size(), 2u);
    EXPECT_EQ(profile.processes[0].python_version, "3.12.1");
    EXPECT_EQ(profile.processes[1].python_version, "3.11.9");
    EXPECT_EQ(profile.processes[1].interpreter, "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0");
    // The totals made for a cut file say what the end record would have.
    EXPECT_EQ(profile.totals.python_version, "3.12.1");
    EXPECT_EQ(profile.totals.pids, (std::vector<pid_t>{4242, 4250}));
    EXPECT_TRUE(profile.totals.found_interpreter);
    // Cut in the first record block, after the first process record: still named.
    std::vector<std::size_t> blocks = raw_block_offsets(fixture.bytes);
    auto early = replay(fixture.bytes.substr(0, blocks[2] + 20));
    ASSERT_TRUE(early);
    EXPECT_EQ(early->status.blocks, 1u);
    ASSERT_EQ(early->transcript.processes.size(), 1u);
    EXPECT_EQ(early->transcript.totals.python_version, "3.12.1");
    EXPECT_EQ(early->transcript.totals.pids, (std::vector<pid_t>{4242}));
}

TEST(RawFormat, AProcessRecordIsReadFromVersion3Only) {
    // A process record: pid 77, its version, its interpreter; after the blocks of a cut file.
    std::string record = "\x09";
    record += static_cast<char>(77);
    record += "\x06"
              "3.13.0"
              "\x0a"
              "/bin/py313";
    const std::string cut = without_last_block(make_raw_recording(600, false, 7, 40'000'000).bytes);
    auto before = replay(cut);
    ASSERT_TRUE(before);
    ASSERT_FALSE(before->transcript.processes.empty());
    auto v3 = replay(cut + stored_block(record));
    ASSERT_TRUE(v3);
    EXPECT_FALSE(v3->status.damaged) << v3->status.problem;
    EXPECT_EQ(v3->status.blocks, before->status.blocks + 1);
    ASSERT_EQ(v3->transcript.processes.size(), before->transcript.processes.size() + 1);
    EXPECT_EQ(v3->transcript.processes.back().pid, 77);
    EXPECT_EQ(v3->transcript.processes.back().python_version, "3.13.0");
    EXPECT_EQ(v3->transcript.processes.back().interpreter, "/bin/py313");
    // In a version 2 file the tag means nothing: the block is damaged, not guessed at.
    const std::string cut2 =
        without_last_block(make_raw_recording(600, false, 7, 40'000'000, 2).bytes);
    auto v2 = replay(cut2 + stored_block(record));
    ASSERT_TRUE(v2);
    EXPECT_TRUE(v2->status.damaged);
    EXPECT_EQ(v2->status.good_bytes, cut2.size());
    EXPECT_TRUE(v2->transcript.processes.empty());
    // A pid no process can have is damage too.
    std::string huge = "\x09\xff\xff\xff\xff\x0f";
    huge.append(2, '\0'); // two empty strings
    auto bad = replay(cut + stored_block(huge));
    ASSERT_TRUE(bad);
    EXPECT_TRUE(bad->status.damaged);
    EXPECT_EQ(bad->transcript.processes.size(), before->transcript.processes.size());
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

TEST(RawFormat, Version2FilesAreStillRead) {
    auto fixture = make_raw_recording(3000, true, 11, 40'000'000, 2);
    ASSERT_FALSE(fixture.bytes.empty());
    EXPECT_EQ(static_cast<unsigned char>(fixture.bytes[8]), 2);
    auto read = replay(fixture.bytes);
    ASSERT_TRUE(read);
    EXPECT_TRUE(read->status.complete) << read->status.problem;
    EXPECT_EQ(read->transcript.lines, fixture.lines); // native modules and build-ids included
    // No process records: the Python version is the end record's, as version 2 had it.
    EXPECT_TRUE(read->transcript.processes.empty());
    EXPECT_EQ(read->transcript.totals.python_version, "3.12.1");
    // Cut before its end, a version 2 file cannot say which Python it sampled.
    auto cut = replay(without_last_block(fixture.bytes));
    ASSERT_TRUE(cut);
    EXPECT_FALSE(cut->status.complete);
    EXPECT_FALSE(cut->status.damaged) << cut->status.problem;
    EXPECT_EQ(cut->transcript.totals.python_version, "");
    EXPECT_EQ(cut->transcript.totals.pids, (std::vector<pid_t>{4242, 4250}));
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
        if (line.rfind("start ", 0) != 0 && line.rfind("thread ", 0) != 0 &&
            line.rfind("process ", 0) != 0)
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
    bytes[8] = static_cast<char>(output::kRawFormatVersion + 1); // the version after this one
    // The header's own checksum is right: the version is what is refused.
    std::uint32_t crc =
        static_cast<std::uint32_t>(crc32(0L, reinterpret_cast<const Bytef*>(bytes.data()), 12));
    for (int i = 0; i < 4; ++i)
        bytes[12 + static_cast<std::size_t>(i)] = static_cast<char>((crc >> (8 * i)) & 0xff);
    auto reader = output::RawReader::from_memory(bytes);
    ASSERT_FALSE(reader);
    EXPECT_NE(reader.error().message.find(
                  fmt::format("format version {}, newer than this spyglass reads (version {})",
                              output::kRawFormatVersion + 1, output::kRawFormatVersion)),
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
            s.key = {t, stack_of[t], false, false, model::WaitId{}};
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
