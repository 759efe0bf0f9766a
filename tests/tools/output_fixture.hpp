// A fixed synthetic recording for the output-format tests: the golden files of
// tests/unit/test_output*.cpp and the real consumers of tests/integration/
// test_output_consumers.py (through write_output_fixture) are written from it.
//
// Three threads of pid 4242 over 10 sampling ticks (10 ms period):
//   MainThread             on-CPU work, a lambda, waiting on the network (off-CPU), a tick
//                          on-CPU without the GIL
//   worker "α" <&>\        non-ASCII, XML- and JSON-special characters; a name made of
//                          specials; a "<truncated>" marker frame at the root
//   (no name)              idle, no Python frames, always off-CPU
// The aggregated samples and the timeline come from the same ticks, as the aggregator makes
// them, so they agree.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <zlib.h>

#include "spyglass/model/profile.hpp"
#include "spyglass/output/writer.hpp"

namespace spyglass::test_support {

struct OutputFixture {
    model::FrameTable frames;
    model::StackTable stacks;
    model::Profile profile;

    OutputFixture() = default;
    OutputFixture(const OutputFixture&) = delete;
    OutputFixture& operator=(const OutputFixture&) = delete;
};

struct FixtureTick {
    std::uint32_t thread;
    model::StackId stack;
    bool on_cpu;
    bool gil;
    std::uint64_t cpu_ns;
    model::WaitId wait{};
};

// Adds ticks (each a list of thread samples taken at the same time) to the profile: aggregated
// samples, and a timeline with each thread's consecutive identical samples merged.
inline void add_ticks(OutputFixture& fixture, const std::vector<std::vector<FixtureTick>>& ticks,
                      bool timeline) {
    model::Profile& profile = fixture.profile;
    std::vector<std::int64_t> last(profile.threads.size(), -1);
    for (std::size_t t = 0; t < ticks.size(); ++t) {
        std::uint64_t start = profile.totals.elapsed_ns + t * profile.info.period_ns;
        for (const FixtureTick& tick : ticks[t]) {
            bool merged = false;
            const model::SampleKey key{tick.thread, tick.stack, tick.on_cpu, tick.gil, tick.wait};
            const std::uint64_t weight = profile.info.period_ns;
            for (model::AggregatedSample& s : profile.samples) {
                if (s.key == key) {
                    ++s.count;
                    s.weight_ns += weight;
                    s.cpu_ns += tick.cpu_ns;
                    merged = true;
                    break;
                }
            }
            if (!merged) profile.samples.push_back({key, 1, weight, tick.cpu_ns});
            ++profile.totals.samples;
            if (!timeline) continue;
            std::int64_t& index = last[tick.thread];
            if (index >= 0) {
                model::TimelineEntry& entry = profile.timeline[static_cast<std::size_t>(index)];
                if (entry.stack == tick.stack && entry.on_cpu == tick.on_cpu &&
                    entry.wait == tick.wait && entry.start_ns + entry.weight_ns == start) {
                    ++entry.count;
                    entry.weight_ns += weight;
                    continue;
                }
            }
            index = static_cast<std::int64_t>(profile.timeline.size());
            profile.timeline.push_back(
                {tick.thread, tick.stack, tick.on_cpu, start, 1, weight, tick.wait});
        }
    }
    profile.totals.ticks += ticks.size();
    profile.totals.elapsed_ns += ticks.size() * profile.info.period_ns;
}

inline std::unique_ptr<OutputFixture> make_output_fixture(bool timeline = true) {
    auto fixture = std::make_unique<OutputFixture>();
    model::FrameTable& frames = fixture->frames;
    model::StackTable& stacks = fixture->stacks;
    model::Profile& profile = fixture->profile;
    profile.frames = &frames;
    profile.stacks = &stacks;

    model::RecordingInfo& info = profile.info;
    info.command = {"python3", "/srv/app/main.py", "--name=<\xc3\xa4 & \"b\">"};
    info.mode = model::SampleMode::wall;
    info.rate_hz = 100;
    info.period_ns = 10'000'000;
    info.start_unix_ns = 1'700'000'000'123'456'789ull;
    profile.totals.pids = {4242};
    profile.totals.python_version = "3.11.4";
    profile.totals.errors = 1;
    profile.display.per_thread_roots = true;

    profile.threads = {
        {4242, 4242, 0x7f0000001000, "MainThread"},
        {4242, 4250, 0x7f0000002000, "worker \"\xce\xb1\" <&>\\"},
        {4242, 4251, 0x7f0000003000, ""},
    };

    auto& strings = frames.strings();
    auto frame = [&](const char* function, const char* file, int line, int first_line) {
        return frames.intern({strings.intern(function), strings.intern(file), line, first_line,
                              model::FrameKind::python});
    };
    const char* main_py = "/srv/app/main.py";
    model::FrameId module = frame("<module>", main_py, 40, 1);
    model::FrameId main = frame("main", main_py, 31, 28);
    model::FrameId handle = frame("Handler.handle", main_py, 22, 20);
    model::FrameId compute = frame("compute", main_py, 12, 10);
    model::FrameId compute_14 = frame("compute", main_py, 14, 10);
    model::FrameId lambda = frame("compute.<locals>.<lambda>", main_py, 13, 13);
    model::FrameId get =
        frame("get", "/opt/venv/lib/python3.11/site-packages/requests/api.py", 73, 62);
    model::FrameId recv = frame("SSLSocket.recv_into", "/usr/lib/python3.11/ssl.py", 1275, 1262);
    model::FrameId decode =
        frame("JSONDecoder.decode", "/usr/lib/python3.11/json/decoder.py", 337, 332);
    model::FrameId sizes = frame("gr\xc3\xb6\xc3\x9f"
                                 "e_berechnen",
                                 "/srv/app/\xc3\xbcnicode.py", 5, 3);
    model::FrameId odd = frame("odd\"name'\\with;specials\t<&>", "/srv/app/odd.py", 2, 1);
    model::FrameId truncated = frames.marker("<truncated>");

    auto stack = [&](std::vector<model::FrameId> ids) { return stacks.intern(ids); };
    model::StackId busy = stack({compute, handle, main, module});
    model::StackId busy_14 = stack({compute_14, handle, main, module});
    model::StackId in_lambda = stack({lambda, compute, handle, main, module});
    model::StackId network = stack({recv, get, handle, main, module});
    model::StackId parsing = stack({decode, handle, main, module});
    model::StackId worker = stack({sizes, odd, truncated});
    model::StackId worker_odd = stack({odd, truncated});
    model::StackId idle{}; // the empty stack

    constexpr std::uint64_t on = 9'000'000, off = 50'000;
    auto m = [&](model::StackId s, bool cpu, bool gil = true) {
        return FixtureTick{0, s, cpu, cpu && gil, cpu ? on : off};
    };
    auto w = [&](model::StackId s, bool cpu, bool gil) {
        return FixtureTick{1, s, cpu, gil, cpu ? on : off};
    };
    FixtureTick z{2, idle, false, false, 0};
    add_ticks(*fixture,
              {
                  {m(busy, true), w(worker, true, false), z},
                  {m(busy, true), w(worker, true, false), z},
                  {m(busy_14, true), w(worker, false, false), z},
                  {m(in_lambda, true), w(worker, true, false), z},
                  {m(network, false), w(worker_odd, true, false), z},
                  {m(network, false), w(worker_odd, true, false), z},
                  {m(network, false), w(worker, true, false), z},
                  {m(parsing, true), w(worker, true, false), z},
                  {m(busy, true, false), w(worker, true, true), z},
                  {m(busy, true), w(worker, false, false), z},
              },
              timeline);
    return fixture;
}

// A recording with wait reasons (docs/waits.md), 8 ticks of two threads of pid 4300:
//   MainThread  on-CPU in execute, then waiting on a TCP peer (3 ticks), on the GIL, runnable
//               but starved of a CPU, and off-CPU once with no reason known
//   worker      in queue.Queue.get (4 ticks), then sleeping (3), then a socket wait with the
//               kind alone (what --waits=kind keeps)
inline std::unique_ptr<OutputFixture> make_wait_fixture(bool timeline = true) {
    auto fixture = std::make_unique<OutputFixture>();
    model::FrameTable& frames = fixture->frames;
    model::Profile& profile = fixture->profile;
    profile.frames = &frames;
    profile.stacks = &fixture->stacks;
    profile.info.command = {"python3", "/srv/app/server.py"};
    profile.info.rate_hz = 100;
    profile.info.period_ns = 10'000'000;
    profile.info.start_unix_ns = 1'700'000'000'000'000'000ull;
    profile.totals.pids = {4300};
    profile.totals.python_version = "3.12.1";
    profile.threads = {{4300, 4300, 0x7f0000001000, "MainThread"},
                       {4300, 4301, 0x7f0000002000, "worker"}};
    auto& strings = frames.strings();
    auto frame = [&](const char* function, const char* file, int line) {
        return frames.intern(
            {strings.intern(function), strings.intern(file), line, line, model::FrameKind::python});
    };
    auto wait = [&](model::WaitKind kind, const char* syscall, const char* target) {
        return frames.waits().intern({kind, *syscall ? strings.intern(syscall) : model::StringId{},
                                      *target ? strings.intern(target) : model::StringId{}});
    };
    model::FrameId handler = frame("handler", "/srv/app/app.py", 40);
    model::FrameId execute =
        frame("Cursor.execute", "/opt/venv/lib/python3.12/site-packages/psycopg/cursor.py", 732);
    model::FrameId get = frame("Queue.get", "/usr/lib/python3.12/queue.py", 171);
    model::FrameId cond = frame("Condition.wait", "/usr/lib/python3.12/threading.py", 355);
    model::FrameId nap = frame("nap", "/srv/app/app.py", 12);
    model::StackId db = fixture->stacks.intern(std::vector<model::FrameId>{execute, handler});
    model::StackId queue = fixture->stacks.intern(std::vector<model::FrameId>{cond, get});
    model::StackId sleeping = fixture->stacks.intern(std::vector<model::FrameId>{nap});
    using K = model::WaitKind;
    model::WaitId tcp = wait(K::socket, "recvfrom", "tcp 127.0.0.1:5432");
    model::WaitId gil = wait(K::gil, "futex", "GIL");
    model::WaitId starved = wait(K::cpu_starved, "", "");
    model::WaitId queued = wait(K::lock, "futex", "queue.Queue.get");
    model::WaitId sleep = wait(K::sleep, "clock_nanosleep", "");
    model::WaitId socket_kind = wait(K::socket, "", "");
    auto m = [&](bool cpu, model::WaitId w) {
        return FixtureTick{0, db, cpu, cpu, cpu ? 9'000'000u : 40'000u, w};
    };
    auto w = [&](model::StackId s, model::WaitId id) {
        return FixtureTick{1, s, false, false, 0, id};
    };
    add_ticks(*fixture,
              {
                  {m(true, {}), w(queue, queued)},
                  {m(false, tcp), w(queue, queued)},
                  {m(false, tcp), w(queue, queued)},
                  {m(false, tcp), w(queue, queued)},
                  {m(false, gil), w(sleeping, sleep)},
                  {m(true, starved), w(sleeping, sleep)},
                  {m(false, {}), w(sleeping, sleep)},
                  {m(true, {}), w(db, socket_kind)},
              },
              timeline);
    return fixture;
}

// The bytes a writer produces (through a real FILE*); throws if it fails.
inline std::string write_to_string(const model::Profile& profile, output::Format format) {
    std::FILE* file = std::tmpfile();
    if (file == nullptr) throw std::runtime_error("tmpfile failed");
    auto written = output::make_writer(format)->write(profile, file);
    std::string bytes;
    if (written) {
        std::rewind(file);
        char buffer[65536];
        std::size_t n;
        while ((n = std::fread(buffer, 1, sizeof buffer, file)) > 0)
            bytes.append(buffer, n);
    }
    std::fclose(file);
    if (!written) throw std::runtime_error(written.error().message);
    return bytes;
}

// Decompresses gzip (or zlib) data; throws on corrupt or truncated input.
inline std::string gunzip(const std::string& data) {
    z_stream z{};
    if (inflateInit2(&z, 15 + 32) != Z_OK) throw std::runtime_error("inflateInit2 failed");
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    z.avail_in = static_cast<uInt>(data.size());
    std::string out;
    char buffer[65536];
    int rc = Z_OK;
    while (rc != Z_STREAM_END) {
        z.next_out = reinterpret_cast<Bytef*>(buffer);
        z.avail_out = sizeof buffer;
        rc = inflate(&z, Z_NO_FLUSH);
        if (rc != Z_OK && rc != Z_STREAM_END) {
            inflateEnd(&z);
            throw std::runtime_error("corrupt gzip data");
        }
        out.append(buffer, sizeof buffer - z.avail_out);
    }
    bool trailing = z.avail_in != 0;
    inflateEnd(&z);
    if (trailing) throw std::runtime_error("data after the gzip stream");
    return out;
}

} // namespace spyglass::test_support
