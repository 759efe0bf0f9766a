// Writes the synthetic profile of output_fixture.hpp in every format, for
// tests/integration/test_output_consumers.py (which checks each with a real consumer):
//
//   write_output_fixture DIR
//
// writes DIR/profile.txt (folded), DIR/profile.pb.gz (pprof), DIR/profile.json (speedscope,
// from the timeline), DIR/profile-samples.json (speedscope, without a timeline),
// DIR/profile.svg (flame graph), DIR/profile.trace.json (Chrome trace) and DIR/waits.pb.gz
// (pprof of make_wait_fixture's recording, with wait labels), and prints what
// they must contain as one JSON object.
#include <cstdio>
#include <map>
#include <string>

#include "output_fixture.hpp"

#include "spyglass/output/json_writer.hpp"
#include "spyglass/output/writer.hpp"

namespace {

using namespace spyglass;

bool write(const model::Profile& profile, output::Format format, const std::string& path) {
    std::FILE* file = std::fopen(path.c_str(), "wb");
    if (file == nullptr) {
        std::perror(path.c_str());
        return false;
    }
    auto written = output::make_writer(format)->write(profile, file);
    bool closed = std::fclose(file) == 0;
    if (!written || !closed) {
        std::fprintf(stderr, "%s: %s\n", path.c_str(),
                     written ? "close failed" : written.error().message.c_str());
        return false;
    }
    return true;
}

} // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    std::string dir = argv[1];
    auto fixture = test_support::make_output_fixture(true);
    auto no_timeline = test_support::make_output_fixture(false);
    const model::Profile& profile = fixture->profile;
    bool ok =
        write(profile, output::Format::folded, dir + "/profile.txt") &&
        write(profile, output::Format::pprof, dir + "/profile.pb.gz") &&
        write(profile, output::Format::speedscope, dir + "/profile.json") &&
        write(no_timeline->profile, output::Format::speedscope, dir + "/profile-samples.json") &&
        write(profile, output::Format::flamegraph, dir + "/profile.svg") &&
        write(profile, output::Format::chrometrace, dir + "/profile.trace.json") &&
        write(test_support::make_wait_fixture()->profile, output::Format::pprof,
              dir + "/waits.pb.gz");
    if (!ok) return 1;

    // What the files must show.
    std::map<std::uint32_t, std::uint64_t> per_thread, on_cpu_per_thread;
    std::uint64_t total = 0, on_cpu = 0, cpu_ns = 0, gil = 0;
    for (const model::AggregatedSample& s : profile.samples) {
        per_thread[s.key.thread] += s.count;
        total += s.count;
        cpu_ns += s.cpu_ns;
        if (s.key.gil) gil += s.count;
        if (s.key.on_cpu) {
            on_cpu += s.count;
            on_cpu_per_thread[s.key.thread] += s.count;
        }
    }
    std::string out;
    output::JsonWriter json(out);
    json.begin_object();
    json.field("period_ns", profile.info.period_ns);
    json.field("start_unix_ns", profile.info.start_unix_ns);
    json.field("duration_ns", profile.totals.elapsed_ns);
    json.field("samples", total);
    json.field("on_cpu_samples", on_cpu);
    json.field("gil_samples", gil);
    json.field("cpu_ns", cpu_ns);
    json.key("threads").begin_array();
    for (std::uint32_t i = 0; i < profile.threads.size(); ++i) {
        const model::ThreadInfo& thread = profile.threads[i];
        json.begin_object();
        json.field("pid", static_cast<std::int64_t>(thread.pid));
        json.field("tid", static_cast<std::int64_t>(thread.tid));
        json.field("name", thread.name);
        json.field("root", output::thread_root_label(thread));
        json.field("samples", per_thread[i]);
        json.field("on_cpu_samples", on_cpu_per_thread[i]);
        json.end_object();
    }
    json.end_array();
    json.key("functions").begin_array();
    for (const model::Frame& frame : fixture->frames.frames())
        if (frame.kind == model::FrameKind::python)
            json.value(fixture->frames.strings().view(frame.function));
    json.end_array();
    json.key("labels").begin_array();
    for (std::uint32_t id = 0; id < fixture->frames.size(); ++id)
        json.value(output::frame_label(profile, model::FrameId(id)));
    json.end_array();
    json.end_object();
    std::printf("%s\n", out.c_str());
    return 0;
}
