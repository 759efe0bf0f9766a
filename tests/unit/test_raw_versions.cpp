// Each raw format version's decoder on a small recording built here byte by byte
// (docs/raw-format.md), not by the writer: version 1's frames without a module, version 2's
// module and build-id records, version 3's process record, version 4's label sets, version 5's
// new calls; and each
// version refuses the records of the versions after it.
#include <string>
#include <vector>

#include "raw_fixture.hpp"
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <zlib.h>

namespace {

using namespace spyglass;

void append_crc(std::string& out, const std::string& header, const std::string& payload) {
    uLong crc =
        crc32(0L, reinterpret_cast<const Bytef*>(header.data()), static_cast<uInt>(header.size()));
    crc = crc32(crc, reinterpret_cast<const Bytef*>(payload.data()),
                static_cast<uInt>(payload.size()));
    for (int i = 0; i < 4; ++i)
        out.push_back(static_cast<char>((crc >> (8 * i)) & 0xff));
}

std::string hand_built_block(std::uint8_t type, const std::string& payload) {
    std::string header;
    header.push_back(static_cast<char>(type));
    header.push_back(0); // stored
    header.append(2, '\0');
    for (int k = 0; k < 2; ++k)
        for (int i = 0; i < 4; ++i)
            header.push_back(static_cast<char>((payload.size() >> (8 * i)) & 0xff));
    std::string block = header;
    append_crc(block, header, payload);
    return block + payload;
}

// The file header and recording header of a version `version` file, then `records` in one
// block, then the end record in another.
std::string hand_built_recording(std::uint16_t version, const std::string& records) {
    std::string file("\x89SGR\r\n\x1a\n", 8);
    file.push_back(static_cast<char>(version & 0xff));
    file.push_back(static_cast<char>(version >> 8));
    file.append(2, '\0'); // flags
    append_crc(file, file, "");
    std::string info = "\x04test\x04host\x07";            // version, host, target pid 7
    info += "\x01\x07python3";                            // the command
    info += std::string("\0\0", 2);                       // mode wall, no flags
    info += std::string("\0\0\0\0\0\0\x59\x40", 8);       // 100.0 Hz
    info += "\x01\x02";                                   // period 1 ns, start at 2 ns
    std::string finish = std::string("\x07\x03", 2);      // end: targets exited
    finish += std::string("\x05\x01\x00\x01\x00\x00", 6); // elapsed, ticks, late, samples, ...
    finish += "\x01\x04"
              "3.12";                      // found, the Python version
    finish += "\x01\x07";                  // pids: 7
    finish += std::string(7, '\0') + '\0'; // pauses, no refusal
    return file + hand_built_block(1, info) + hand_built_block(2, records) +
           hand_built_block(2, finish);
}

struct VersionRead {
    std::vector<std::string> lines;
    output::RawReadStatus status;
};

VersionRead read_hand_built(std::uint16_t version, const std::string& records) {
    auto reader = output::RawReader::from_memory(hand_built_recording(version, records));
    if (!reader) return {{reader.error().message}, {}};
    rawtest::Transcript transcript((*reader)->frames(), (*reader)->stacks());
    VersionRead read;
    read.status = (*reader)->replay(transcript);
    read.lines = std::move(transcript.lines);
    return read;
}

// Strings 1 "f", 2 "a.py"; then `frame`; then a stack of it, thread 0 and one sample on it.
std::string one_sample(const std::string& definitions, const std::string& frame) {
    std::string out = "\x01\x01"
                      "f"
                      "\x01\x04"
                      "a.py" +
                      definitions + frame;
    out += std::string("\x04\x01\x00", 3);                      // stack 1: frame 0
    out += std::string("\x05\x00\x07\x07\x01\x04", 6) + "main"; // thread 0: pid 7, tid 7
    out += std::string("\x81\x00\x01\xe8\x07", 5); // on-CPU sample, thread 0, stack 1, 1000 ns
    return out;
}

const std::string kPythonFrame = std::string("\x03\x01\x02\x14\x02\x00", 6); // f a.py:10, 1
const std::string kModuleString = "\x01\x07"
                                  "libx.so"
                                  "\x01\x04"
                                  "b1d0"; // strings 3, 4
const std::string kNativeFrame = std::string("\x03\x01\x02\x14\x02\x01\x03", 7);
const std::string kBuildIdRecord = "\x08\x03\x04";
const std::string kProcessRecord = std::string("\x09\x4d\x06", 3) + "3.13.0" + "\x07/bin/py";

constexpr const char* kSampleLine = "t0 on w1000 c0 s0 @0 [f|a.py|10|1|0;]";

TEST(RawVersions, Version1ReadsFramesWithoutAModule) {
    VersionRead read = read_hand_built(1, one_sample("", kPythonFrame));
    EXPECT_TRUE(read.status.complete) << read.status.problem;
    EXPECT_EQ(read.lines,
              (std::vector<std::string>{"start 100 2", "thread 0 7 7 1 main", kSampleLine}));
    // Version 2's build-id record and version 3's process record are damage in version 1.
    EXPECT_TRUE(read_hand_built(1, kModuleString + kBuildIdRecord).status.damaged);
    EXPECT_TRUE(read_hand_built(1, kProcessRecord).status.damaged);
}

TEST(RawVersions, Version2ReadsModulesAndBuildIds) {
    VersionRead read = read_hand_built(2, one_sample(kModuleString + kBuildIdRecord, kNativeFrame));
    EXPECT_TRUE(read.status.complete) << read.status.problem;
    EXPECT_EQ(read.lines,
              (std::vector<std::string>{"start 100 2", "thread 0 7 7 1 main",
                                        "t0 on w1000 c0 s0 @0 [f|a.py|10|1|1|libx.so|b1d0;]"}));
    // A version 1 frame record is too short for version 2, a process record is damage.
    EXPECT_TRUE(read_hand_built(2, one_sample("", kPythonFrame)).status.damaged);
    EXPECT_TRUE(read_hand_built(2, kProcessRecord).status.damaged);
}

TEST(RawVersions, Version3ReadsProcessRecords) {
    VersionRead read = read_hand_built(
        3,
        kProcessRecord + one_sample(kModuleString, std::string("\x03\x01\x02\x14\x02\x00\x00", 7)));
    EXPECT_TRUE(read.status.complete) << read.status.problem;
    EXPECT_EQ(read.lines, (std::vector<std::string>{"start 100 2", "process 77 3.13.0 /bin/py",
                                                    "thread 0 7 7 1 main", kSampleLine}));
    // Every version up to this spyglass's has its decoder; none other is read.
    for (std::uint16_t version = 1; version <= output::kRawFormatVersion; ++version)
        EXPECT_TRUE(output::RawReader::from_memory(hand_built_recording(version, ""))) << version;
    for (std::uint16_t version : {0, output::kRawFormatVersion + 1})
        EXPECT_FALSE(output::RawReader::from_memory(hand_built_recording(version, ""))) << version;
}

// Version 4: strings 3 "env", 4 "prod", a label set {env=prod}; samples of thread 0 after
// one_sample's: `samples`.
const std::string kLabelStrings = "\x01\x03"
                                  "env"
                                  "\x01\x04"
                                  "prod";
const std::string kLabelSetRecord = std::string("\x0a\x01\x03\x04", 4);
const std::string kModuleFrame = std::string("\x03\x01\x02\x14\x02\x00\x00", 7);
// An on-CPU sample of thread 0 on stack 1, 1000 ns, its extra byte saying label set `set`.
std::string labelled_sample(char set) {
    return std::string("\xa1\x01\x01\xe8\x07\x08", 6) + set;
}
const std::string kPlainSample = std::string("\x81\x01\x01\xe8\x07", 5); // thread 0 again

// What a hand-built file's samples are labelled with, one line per sample.
std::vector<std::string> sample_labels_read(std::uint16_t version, const std::string& records,
                                            output::RawReadStatus& status) {
    auto reader = output::RawReader::from_memory(hand_built_recording(version, records));
    if (!reader) return {reader.error().message};
    struct Labels final : model::SampleSink {
        const model::FrameTable& frames;
        std::vector<std::string> lines;
        explicit Labels(const model::FrameTable& table) : frames(table) {}
        void thread(std::uint32_t, const model::ThreadInfo&) override {}
        void sample(const model::Sample& s) override {
            std::string line;
            for (const model::Label& label : frames.label_sets().get(s.key.labels))
                line += fmt::format("{}={};", frames.strings().view(label.key),
                                    frames.strings().view(label.value));
            lines.push_back(line);
        }
    } labels((*reader)->frames());
    status = (*reader)->replay(labels);
    return labels.lines;
}

TEST(RawVersions, Version4ReadsLabelSets) {
    const std::string records = one_sample(kLabelStrings + kLabelSetRecord, kModuleFrame) +
                                labelled_sample('\x01') + kPlainSample + labelled_sample('\x00') +
                                kPlainSample;
    output::RawReadStatus status;
    std::vector<std::string> lines = sample_labels_read(4, records, status);
    EXPECT_TRUE(status.complete) << status.problem;
    // A thread's label set holds until one of its samples says otherwise.
    EXPECT_EQ(lines, (std::vector<std::string>{"", "env=prod;", "env=prod;", "", ""}));
    // Each of these is damage: a label set id not defined, more labels than a set holds, a
    // count longer than the record, a string id not defined; and version 4's records and
    // sample flag in a version 3 file.
    const std::string base = one_sample(kLabelStrings + kLabelSetRecord, kModuleFrame);
    for (const std::string& bad :
         {base + labelled_sample('\x02'), base + labelled_sample('\x7f'),
          kLabelStrings + std::string("\x0a\x41", 2) + std::string(130, '\x03'),
          kLabelStrings + std::string("\x0a\x7f\x03\x04", 4),
          kLabelStrings + std::string("\x0a\x01\x03\x09", 4),
          kLabelStrings + std::string("\x0a\x01\x03", 3)}) {
        sample_labels_read(4, bad, status);
        EXPECT_TRUE(status.damaged) << fmt::format("{:02x}", fmt::join(bad, " "));
        EXPECT_NE(status.problem.find("does not decode"), std::string::npos) << status.problem;
    }
    sample_labels_read(3, kLabelStrings + kLabelSetRecord, status);
    EXPECT_TRUE(status.damaged);
    sample_labels_read(3, one_sample(kLabelStrings, kModuleFrame) + labelled_sample('\x00'),
                       status);
    EXPECT_TRUE(status.damaged);
}

// What a hand-built file's samples say of their new calls, one number per sample (-1: not known).
std::vector<int> new_calls_read(std::uint16_t version, const std::string& records,
                                output::RawReadStatus& status) {
    auto reader = output::RawReader::from_memory(hand_built_recording(version, records));
    if (!reader) return {-2};
    struct NewCalls final : model::SampleSink {
        std::vector<int> calls;
        void thread(std::uint32_t, const model::ThreadInfo&) override {}
        void sample(const model::Sample& s) override {
            calls.push_back(s.new_calls == model::kCallsUnknown ? -1 : s.new_calls);
        }
    } sink;
    status = (*reader)->replay(sink);
    return sink.calls;
}

// An on-CPU sample of thread 0 on stack 1, 1000 ns, its extra byte saying `calls` new calls.
std::string sample_with_new_calls(const std::string& calls) {
    return std::string("\xa1\x01\x01\xe8\x07\x10", 6) + calls;
}

TEST(RawVersions, Version5ReadsNewCalls) {
    const std::string base = one_sample("", kModuleFrame);
    output::RawReadStatus status;
    // one_sample's own sample has no extra byte: no new call (version 5), not known (4).
    EXPECT_EQ(new_calls_read(5,
                             base + sample_with_new_calls("\x03") + kPlainSample +
                                 sample_with_new_calls(std::string(1, '\0')) +
                                 sample_with_new_calls("\x81\x01"),
                             status),
              (std::vector<int>{0, 3, 0, -1, 129}));
    EXPECT_TRUE(status.complete) << status.problem;
    EXPECT_EQ(new_calls_read(4, base + kPlainSample, status), (std::vector<int>{-1, -1}));
    EXPECT_TRUE(status.complete) << status.problem;
    // Damage: the flag in a version 4 file, a count that is the "not known" value or above.
    new_calls_read(4, base + sample_with_new_calls("\x03"), status);
    EXPECT_TRUE(status.damaged);
    new_calls_read(5, base + sample_with_new_calls("\xff\xff\x03"), status);
    EXPECT_TRUE(status.damaged);
}

} // namespace
