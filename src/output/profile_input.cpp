#include "spyglass/output/profile_input.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>

#include "profile.pb.h"
#include <fmt/format.h>
#include <zlib.h>

#include "spyglass/model/aggregator.hpp"
#include "spyglass/model/select.hpp"
#include "spyglass/output/writer.hpp"

namespace spyglass::output {

namespace {

namespace pb = perftools::profiles;

constexpr std::size_t kMaxInput = 1u << 30;

Result<std::string> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return fail(Errc::io, "cannot read {}: {}", path, std::strerror(errno));
    std::string bytes{std::istreambuf_iterator<char>(in), {}};
    if (in.bad()) return fail(Errc::io, "cannot read {}", path);
    return bytes;
}

Result<std::string> gunzip(const std::string& path, const std::string& bytes) {
    z_stream z{};
    if (inflateInit2(&z, 15 + 32) != Z_OK) return fail(Errc::io, "{}: zlib failed", path);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
    z.avail_in = static_cast<uInt>(bytes.size());
    std::string out;
    char chunk[1 << 16];
    int rc = Z_OK;
    while (rc != Z_STREAM_END) {
        z.next_out = reinterpret_cast<Bytef*>(chunk);
        z.avail_out = sizeof chunk;
        rc = inflate(&z, Z_NO_FLUSH);
        if (rc != Z_OK && rc != Z_STREAM_END) break;
        out.append(chunk, sizeof chunk - z.avail_out);
        if (out.size() > kMaxInput) break;
    }
    inflateEnd(&z);
    if (rc != Z_STREAM_END)
        return fail(Errc::invalid_argument,
                    "{} is not a readable gzip file (a pprof profile "
                    "is gzipped protobuf)",
                    path);
    return out;
}

// Threads by their labels, as the pprof writer puts them.
struct ThreadKey {
    std::int64_t pid = 0, tid = 0;
    std::string name;
    auto operator<=>(const ThreadKey&) const = default;
};

Result<void> load_pprof(const std::string& path, const std::string& bytes, bool cpu_only,
                        LoadedProfile& out) {
    pb::Profile pprof;
    if (bytes.size() > kMaxInput || !pprof.ParseFromString(bytes))
        return fail(Errc::invalid_argument,
                    "{} is not a pprof profile, a raw recording or "
                    "folded stacks",
                    path);
    const auto& strings = pprof.string_table();
    auto text = [&](std::int64_t id) -> std::string_view {
        return id >= 0 && id < strings.size() ? std::string_view(strings[static_cast<int>(id)])
                                              : std::string_view();
    };
    int samples_index = -1, wall_index = -1, cpu_index = -1;
    for (int i = 0; i < pprof.sample_type_size(); ++i) {
        std::string_view type = text(pprof.sample_type(i).type());
        if (type == "samples") samples_index = i;
        if (type == "wall") wall_index = i;
        if (type == "cpu") cpu_index = i;
    }
    if (pprof.sample_type_size() == 0)
        return fail(Errc::invalid_argument, "{} is a pprof profile without sample types", path);
    // The time a sample stands for: wall, else cpu, else a count times the period.
    const bool timed = wall_index >= 0 || cpu_index >= 0;
    const int weight_index = wall_index >= 0      ? wall_index
                             : cpu_index >= 0     ? cpu_index
                             : samples_index >= 0 ? samples_index
                                                  : 0;
    std::map<std::uint64_t, const pb::Function*> functions;
    for (const pb::Function& function : pprof.function())
        functions[function.id()] = &function;
    std::map<std::uint64_t, std::vector<model::FrameId>> locations; // innermost first
    for (const pb::Location& location : pprof.location()) {
        std::vector<model::FrameId>& frames = locations[location.id()];
        for (const pb::Line& line : location.line()) {
            auto function = functions.find(line.function_id());
            model::Frame frame;
            if (function != functions.end()) {
                frame.function = out.frames.strings().intern(text(function->second->name()));
                frame.file = out.frames.strings().intern(text(function->second->filename()));
                frame.first_line = static_cast<std::int32_t>(function->second->start_line());
            }
            frame.line = static_cast<std::int32_t>(line.line());
            frames.push_back(out.frames.intern(frame));
        }
    }
    std::int64_t period = pprof.period() > 0 ? pprof.period() : 1;
    model::RecordingInfo info;
    info.period_ns = static_cast<std::uint64_t>(period);
    info.rate_hz = 1e9 / static_cast<double>(period);
    info.start_unix_ns = static_cast<std::uint64_t>(std::max<std::int64_t>(0, pprof.time_nanos()));
    model::Aggregator aggregator(out.frames, out.stacks, false);
    aggregator.start(info);
    std::map<ThreadKey, std::uint32_t> threads;
    std::vector<model::FrameId> ids;
    std::vector<pid_t> pids;
    std::uint64_t kept = 0;
    for (const pb::Sample& sample : pprof.sample()) {
        ThreadKey key;
        bool on_cpu = true, gil = false;
        for (const pb::Label& label : sample.label()) {
            std::string_view name = text(label.key());
            if (name == "state") on_cpu = text(label.str()) != "off-cpu";
            if (name == "gil") gil = text(label.str()) == "true";
            if (name == "thread") key.name = text(label.str());
            if (name == "thread_id") key.tid = label.num();
            if (name == "pid") key.pid = label.num();
        }
        if (cpu_only && !on_cpu) continue;
        auto value = [&](int index) -> std::int64_t {
            return index >= 0 && index < sample.value_size() ? sample.value(index) : 0;
        };
        auto thread = threads.try_emplace(key, static_cast<std::uint32_t>(threads.size()));
        if (thread.second) {
            aggregator.thread(thread.first->second, {static_cast<pid_t>(key.pid),
                                                     static_cast<pid_t>(key.tid), 0, key.name});
            if (key.pid != 0 &&
                std::find(pids.begin(), pids.end(), static_cast<pid_t>(key.pid)) == pids.end())
                pids.push_back(static_cast<pid_t>(key.pid));
        }
        ids.clear();
        for (std::uint64_t location : sample.location_id()) {
            auto found = locations.find(location);
            if (found != locations.end())
                ids.insert(ids.end(), found->second.begin(), found->second.end());
        }
        // spyglass's own stand-in for a stack without frames is no frame at all.
        if (ids.size() == 1 &&
            out.frames.strings().view(out.frames.get(ids[0]).function) == kNoFramesFrame)
            ids.clear();
        model::Sample s;
        s.key.thread = thread.first->second;
        s.key.stack = out.stacks.intern(ids);
        s.key.on_cpu = on_cpu;
        s.key.gil = gil;
        std::int64_t count = samples_index >= 0 ? value(samples_index) : 1;
        std::int64_t weight = timed ? value(weight_index) : value(weight_index) * period;
        s.weight_ns = static_cast<std::uint64_t>(std::max<std::int64_t>(0, weight));
        s.cpu_ns = static_cast<std::uint64_t>(std::max<std::int64_t>(0, value(cpu_index)));
        aggregator.sample(s);
        kept += static_cast<std::uint64_t>(std::max<std::int64_t>(count, 1));
    }
    model::RecordingTotals totals;
    totals.elapsed_ns =
        static_cast<std::uint64_t>(std::max<std::int64_t>(0, pprof.duration_nanos()));
    totals.samples = kept;
    totals.pids = pids;
    aggregator.finish(totals);
    out.profile = aggregator.profile({});
    out.kind = "pprof";
    return {};
}

Result<void> load_folded(const std::string& path, const std::string& bytes, bool cpu_only,
                         LoadedProfile& out) {
    model::RecordingInfo info;
    info.period_ns = 1; // a count is a weight
    model::Aggregator aggregator(out.frames, out.stacks, false);
    aggregator.start(info);
    aggregator.thread(0, {});
    std::istringstream in(bytes);
    std::string line;
    std::size_t number = 0;
    std::uint64_t kept = 0;
    std::vector<model::FrameId> ids;
    while (std::getline(in, line)) {
        ++number;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.empty()) continue;
        std::size_t space = line.rfind(' ');
        char* end = nullptr;
        unsigned long long count =
            space == std::string::npos ? 0 : std::strtoull(line.c_str() + space + 1, &end, 10);
        if (space == std::string::npos || end == line.c_str() + space + 1 || *end != '\0')
            return fail(Errc::invalid_argument,
                        "{} is not a pprof profile, a raw recording or folded stacks (line {}: "
                        "no count at its end)",
                        path, number);
        std::string_view stack(line.data(), space);
        std::vector<std::string_view> labels;
        for (std::size_t start = 0;;) {
            std::size_t semi = stack.find(';', start);
            labels.push_back(stack.substr(start, semi - start));
            if (semi == std::string_view::npos) break;
            start = semi + 1;
        }
        bool on_cpu = true;
        if (!labels.empty() && labels.back() == kOffCpuFrame) {
            on_cpu = false;
            labels.pop_back();
        }
        if (labels.size() == 1 && labels[0] == kNoFramesFrame) labels.clear();
        if (cpu_only && !on_cpu) continue;
        ids.clear();
        for (auto it = labels.rbegin(); it != labels.rend(); ++it)
            ids.push_back(out.frames.marker(*it)); // a label as it was shown
        model::Sample s;
        s.key.stack = out.stacks.intern(ids);
        s.key.on_cpu = on_cpu;
        s.weight_ns = count;
        aggregator.sample(s);
        kept += count;
    }
    model::RecordingTotals totals;
    totals.samples = kept;
    aggregator.finish(totals);
    out.profile = aggregator.profile({});
    out.kind = "folded";
    return {};
}

} // namespace

Result<std::unique_ptr<LoadedProfile>> load_profile(const std::string& path, bool cpu_only,
                                                    const model::DisplayOptions& display) {
    auto out = std::make_unique<LoadedProfile>();
    std::string head(16, '\0');
    {
        std::ifstream probe(path, std::ios::binary);
        if (!probe) return fail(Errc::io, "cannot read {}: {}", path, std::strerror(errno));
        probe.read(head.data(), static_cast<std::streamsize>(head.size()));
        head.resize(static_cast<std::size_t>(probe.gcount()));
    }
    if (looks_like_raw(head)) {
        auto reader = RawReader::open(path);
        if (!reader) return std::unexpected(reader.error());
        out->raw = std::move(*reader);
        model::Aggregator aggregator(out->raw->frames(), out->raw->stacks(), false);
        model::Selection selection;
        selection.cpu_only = cpu_only;
        model::SelectingSink select(selection, {}, aggregator);
        RawReadStatus status = out->raw->replay(select);
        if (!status.complete)
            out->warning = fmt::format("{} was cut short ({}): compared as far as it goes", path,
                                       status.problem);
        out->profile = aggregator.profile(display);
        out->kind = "raw";
        return out;
    }
    auto bytes = read_file(path);
    if (!bytes) return std::unexpected(bytes.error());
    Result<void> loaded;
    if (bytes->size() >= 2 && static_cast<unsigned char>((*bytes)[0]) == 0x1f &&
        static_cast<unsigned char>((*bytes)[1]) == 0x8b) {
        auto plain = gunzip(path, *bytes);
        if (!plain) return std::unexpected(plain.error());
        loaded = load_pprof(path, *plain, cpu_only, *out);
    } else if (bytes->find('\0') != std::string::npos) {
        loaded = load_pprof(path, *bytes, cpu_only, *out);
    } else {
        loaded = load_folded(path, *bytes, cpu_only, *out);
    }
    if (!loaded) return std::unexpected(loaded.error());
    out->profile.display = display;
    return out;
}

} // namespace spyglass::output
