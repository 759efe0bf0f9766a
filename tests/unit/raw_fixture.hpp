// A synthetic recording written as a raw file, for the raw format's unit tests and fuzz
// target: two processes (the second starts late), threads (one renamed), stacks that change
// and repeat, waits, torn and truncated samples, CPU times and weights that vary, and a table reset
// in the middle. Each sample is also described as text through the tables of the moment, so that
// what a reader replays can be compared without trusting ids.
#pragma once

#include <cstdio>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <unistd.h>
#include <zlib.h>

#include "spyglass/input/raw_reader.hpp"
#include "spyglass/model/frame_table.hpp"
#include "spyglass/model/sample.hpp"
#include "spyglass/output/raw.hpp"

namespace spyglass::rawtest {

inline std::string describe(const model::FrameTable& frames, const model::StackTable& stacks,
                            const model::Sample& s) {
    std::string out = fmt::format("t{} {}{} w{} c{} s{} @{} [", s.key.thread,
                                  s.key.on_cpu ? "on" : "off", s.key.gil ? "+gil" : "", s.weight_ns,
                                  s.cpu_ns, static_cast<int>(s.status), s.time_ns);
    const model::StringTable& text = frames.strings();
    for (model::FrameId id : stacks.get(s.key.stack)) {
        const model::Frame& f = frames.get(id);
        out += fmt::format("{}|{}|{}|{}|{}", text.view(f.function), text.view(f.file), f.line,
                           f.first_line, static_cast<int>(f.kind));
        if (f.module.value != 0)
            out += fmt::format("|{}|{}", text.view(f.module), frames.build_id(f.module));
        out += ';';
    }
    out += "]";
    if (s.key.wait.value != 0) {
        const model::Wait& w = frames.waits().get(s.key.wait);
        out += fmt::format(" wait {}:{}:{}", static_cast<int>(w.kind), text.view(w.syscall),
                           text.view(w.target));
    }
    return out;
}

// Collects what a replay delivers, as text.
class Transcript final : public model::SampleSink {
  public:
    Transcript(const model::FrameTable& frames, const model::StackTable& stacks)
        : frames_(frames), stacks_(stacks) {}
    void start(const model::RecordingInfo& info) override {
        lines.push_back(fmt::format("start {} {}", info.rate_hz, info.start_unix_ns));
    }
    void process(const model::ProcessInfo& info) override {
        lines.push_back(
            fmt::format("process {} {} {}", info.pid, info.python_version, info.interpreter));
        processes.push_back(info);
    }
    void thread(std::uint32_t index, const model::ThreadInfo& info) override {
        lines.push_back(fmt::format("thread {} {} {} {} {}", index, info.pid, info.tid,
                                    info.thread_id, info.name));
    }
    void sample(const model::Sample& s) override {
        // Only the last sample, when asked (cheap enough to replay thousands of cut files).
        if (last_only)
            last = s;
        else
            lines.push_back(describe(frames_, stacks_, s));
        ++samples;
    }
    [[nodiscard]] std::string last_line() const { return describe(frames_, stacks_, last); }
    void finish(const model::RecordingTotals& t) override {
        finished = true;
        totals = t;
    }
    std::vector<std::string> lines;
    std::vector<model::ProcessInfo> processes;
    std::size_t samples = 0;
    bool finished = false;
    bool last_only = false;
    model::Sample last;
    model::RecordingTotals totals;

  private:
    const model::FrameTable& frames_;
    const model::StackTable& stacks_;
};

struct RawFixture {
    std::string bytes;              // the whole file
    std::vector<std::string> lines; // what was written, as a Transcript would say it
    std::size_t samples = 0;
};

// Writes `count` samples (a reset after half of them when `reset`), a pass of three threads
// every `pass_ns` (blocks close every second of recording: a long pass makes small blocks), in
// format `version` (native frames with their modules and build-ids from version 2, process
// records from version 3). A second process with a thread of its own starts after five sixths
// of the samples, its process record in one of the last blocks.
inline RawFixture make_raw_recording(std::size_t count = 4000, bool reset = true, unsigned seed = 7,
                                     std::uint64_t pass_ns = 1'000'000,
                                     std::uint16_t version = output::kRawFormatVersion) {
    model::FrameTable frames;
    model::StackTable stacks;
    std::string path = fmt::format("/tmp/spyglass-raw-fixture-{}-{}.sgr", ::getpid(), seed);
    output::RawHeader header;
    header.spyglass_version = "test";
    header.host = "host";
    header.target_pid = 4242;
    header.format_version = version;
    auto opened = output::RawWriter::open(path, frames, stacks, header);
    if (!opened) return {};
    output::RawWriter& writer = **opened;
    RawFixture fixture;
    model::RecordingInfo info;
    info.command = {"python3", "app.py"};
    info.rate_hz = 1000;
    info.period_ns = 1'000'000;
    info.start_unix_ns = 1'700'000'000'000'000'000ull;
    writer.start(info);
    fixture.lines.push_back(fmt::format("start {} {}", info.rate_hz, info.start_unix_ns));
    auto thread = [&](std::uint32_t index, model::ThreadInfo t) {
        writer.thread(index, t);
        fixture.lines.push_back(
            fmt::format("thread {} {} {} {} {}", index, t.pid, t.tid, t.thread_id, t.name));
    };
    auto process = [&](model::ProcessInfo p) {
        writer.process(p);
        if (version >= 3)
            fixture.lines.push_back(
                fmt::format("process {} {} {}", p.pid, p.python_version, p.interpreter));
    };
    process({4242, "3.12.1", "/usr/bin/python3.12"});
    thread(0, {4242, 4242, 1, "MainThread"});
    thread(1, {4242, 4243, 2, "python3"});
    thread(2, {4242, 4244, 3, "worker-2"});
    std::mt19937 random(seed);
    std::vector<model::StackId> known;
    std::uint64_t time = 0;
    std::vector<model::StackId> last(3, model::StackId{});
    std::uint32_t threads = 3, t = 2;
    std::vector<pid_t> pids{4242};
    for (std::size_t i = 0; i < count; ++i) {
        if (reset && i == count / 2) {
            frames.clear();
            stacks.clear();
            writer.tables_reset();
            known.clear();
            std::fill(last.begin(), last.end(), model::StackId{});
        }
        if (i == 300) thread(1, {4242, 4243, 2, "worker-1"}); // named by threading a bit later
        if (i == count * 5 / 6 && i != 0) {
            // A subprocess of another Python (--subprocesses), from the next pass on.
            process({4250, "3.11.9", "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0"});
            thread(3, {4250, 4250, 7, "MainThread"});
            pids.push_back(4250);
            threads = 4;
            last.resize(4, model::StackId{});
        }
        t = (t + 1) % threads;
        if (t == 0) time += pass_ns + random() % 3 * 1000; // a pass
        model::Sample s;
        s.key.thread = t;
        s.time_ns = time;
        s.weight_ns = 1'000'000 + (random() % 10 == 0 ? random() % 500'000 : 0);
        if (random() % 8 == 0 || known.empty()) {
            std::vector<model::FrameId> ids;
            std::size_t depth = 1 + random() % 12;
            for (std::size_t d = 0; d < depth; ++d) {
                model::Frame f;
                f.function = frames.strings().intern(fmt::format("fn{}", random() % 40));
                f.file = frames.strings().intern(fmt::format("/app/m{}.py", random() % 5));
                f.first_line = static_cast<std::int32_t>(random() % 500);
                f.line = f.first_line + static_cast<std::int32_t>(random() % 30);
                if (version >= 2 && d == 0 && random() % 3 == 0) {
                    // A native leaf: its module, the module's build-id (not every one has one).
                    unsigned lib = random() % 3;
                    f.kind = model::FrameKind::native;
                    f.first_line = 0;
                    f.module = frames.strings().intern(fmt::format("/usr/lib/libx{}.so", lib));
                    if (lib != 2) frames.set_build_id(f.module, fmt::format("b1d{}", lib));
                }
                ids.push_back(frames.intern(f));
            }
            if (random() % 20 == 0) ids.push_back(frames.marker("<truncated>"));
            known.push_back(stacks.intern(ids));
        }
        s.key.stack = random() % 3 == 0 ? last[t] : known[random() % known.size()];
        if (s.key.stack.value == 0 && !known.empty()) s.key.stack = known.front();
        last[t] = s.key.stack;
        s.key.on_cpu = t == 2 || random() % 4 == 0;
        s.key.gil = s.key.on_cpu && random() % 2 == 0;
        s.cpu_ns = s.key.on_cpu ? 900'000 + random() % 100'000 : 0;
        if (random() % 50 == 0) s.status = model::StackStatus::torn;
        if (!s.key.on_cpu && random() % 3 == 0) {
            model::Wait w{model::WaitKind::socket, frames.strings().intern("recvfrom"),
                          frames.strings().intern(fmt::format("tcp 10.0.0.{}:5432", random() % 4))};
            s.key.wait = frames.waits().intern(w);
        }
        writer.sample(s);
        fixture.lines.push_back(describe(frames, stacks, s));
        ++fixture.samples;
        writer.advance(time);
    }
    model::RecordingTotals totals;
    totals.end = model::RecordingEnd::duration;
    totals.elapsed_ns = time + 1'000'000;
    totals.samples = fixture.samples;
    totals.python_version = "3.12.1";
    totals.pids = pids;
    writer.finish(totals);
    opened->reset();
    std::ifstream in(path, std::ios::binary);
    fixture.bytes.assign(std::istreambuf_iterator<char>(in), {});
    ::unlink(path.c_str());
    return fixture;
}

// Where each block of a raw file starts (after the file header and the info block), and the
// file's end: the offsets a cut can fall between.
inline std::vector<std::size_t> raw_block_offsets(const std::string& bytes) {
    std::vector<std::size_t> out;
    std::size_t at = 16;
    while (at + 16 <= bytes.size()) {
        out.push_back(at);
        auto u32 = [&](std::size_t p) {
            return static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[p])) |
                   static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[p + 1])) << 8 |
                   static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[p + 2])) << 16 |
                   static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[p + 3])) << 24;
        };
        at += 16 + u32(at + 4);
    }
    out.push_back(bytes.size());
    return out;
}

// Puts the checksum of the block at `block` right after its bytes were edited (a block whose
// size runs past the end is left alone), so that the edit reaches the decoders behind the check.
inline void set_block_crc(std::string& bytes, std::size_t block) {
    if (block + 16 > bytes.size()) return;
    std::uint32_t size = 0;
    for (int i = 0; i < 4; ++i)
        size |= static_cast<std::uint32_t>(static_cast<unsigned char>(bytes[block + 4 + i]))
                << (8 * i);
    if (block + 16 + size > bytes.size()) return;
    uLong crc = crc32(0L, reinterpret_cast<const Bytef*>(bytes.data() + block), 12);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(bytes.data() + block + 16), size);
    for (int i = 0; i < 4; ++i)
        bytes[block + 12 + static_cast<std::size_t>(i)] =
            static_cast<char>((crc >> (8 * i)) & 0xff);
}

} // namespace spyglass::rawtest
