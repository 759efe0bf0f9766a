#include "spyglass/input/profile_input.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <map>
#include <sstream>
#include <utility>

#include "profile.pb.h"
#include <fcntl.h>
#include <fmt/format.h>
#include <google/protobuf/stubs/common.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "spyglass/model/aggregator.hpp"
#include "spyglass/model/select.hpp"
#include "spyglass/output/writer.hpp"

namespace spyglass::output {

namespace {

namespace pb = perftools::profiles;

std::string mib(std::uint64_t bytes) {
    return fmt::format("{} MiB", bytes >> 20);
}

std::string_view file_type(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    return "not a regular file";
}

Result<std::string> gunzip(const std::string& path, const std::string& bytes,
                           std::uint64_t max_bytes) {
    z_stream z{};
    if (inflateInit2(&z, 15 + 32) != Z_OK) return fail(Errc::io, "{}: zlib failed", path);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
    z.avail_in = static_cast<uInt>(std::min<std::size_t>(bytes.size(), UINT32_MAX));
    std::string out;
    char chunk[1 << 16];
    int rc = Z_OK;
    bool too_big = false;
    while (rc != Z_STREAM_END) {
        z.next_out = reinterpret_cast<Bytef*>(chunk);
        z.avail_out = sizeof chunk;
        rc = inflate(&z, Z_NO_FLUSH);
        if (rc != Z_OK && rc != Z_STREAM_END) break;
        std::size_t got = sizeof chunk - z.avail_out;
        if (out.size() + got > max_bytes) {
            too_big = true;
            break;
        }
        out.append(chunk, got);
    }
    inflateEnd(&z);
    if (too_big)
        return fail(Errc::invalid_argument,
                    "{} decompresses to more than {}, the most an input may hold in memory "
                    "(SPYGLASS_MAX_INPUT_MB raises it)",
                    path, mib(max_bytes));
    if (rc != Z_STREAM_END)
        return fail(Errc::invalid_argument,
                    "{} is not a readable gzip file (a pprof profile "
                    "is gzipped protobuf)",
                    path);
    return out;
}

// Whether a pprof sample has every one of the string labels of `where`.
template <class Text>
bool has_labels(const pb::Sample& sample, std::span<const model::LabelText> where,
                const Text& text) {
    return std::all_of(where.begin(), where.end(), [&](const model::LabelText& wanted) {
        return std::any_of(sample.label().begin(), sample.label().end(), [&](const pb::Label& l) {
            return l.str() != 0 && text(l.key()) == wanted.key && text(l.str()) == wanted.value;
        });
    });
}

// Threads by their labels, as the pprof writer puts them.
struct ThreadKey {
    std::int64_t pid = 0, tid = 0;
    std::string name;
    auto operator<=>(const ThreadKey&) const = default;
};

Result<void> load_pprof(const std::string& path, const std::string& bytes, bool cpu_only,
                        std::span<const model::LabelText> where, LoadedProfile& out) {
#if GOOGLE_PROTOBUF_VERSION < 4022000
    // A damaged profile is said in one line of ours: protobuf's own log lines (invalid UTF-8
    // in a string) stay out of it.
    static const bool quiet = [] {
        google::protobuf::SetLogHandler(nullptr);
        return true;
    }();
    (void)quiet;
#endif
    pb::Profile pprof;
    if (bytes.size() > INT32_MAX || !pprof.ParseFromString(bytes))
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
        if (!has_labels(sample, where, text)) continue;
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
                         std::span<const model::LabelText> where, LoadedProfile& out) {
    if (!where.empty())
        return fail(Errc::invalid_argument,
                    "{} is folded stacks, which keep no labels: --where cannot select in it", path);
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

Result<std::unique_ptr<LoadedProfile>> load_raw(const std::string& path,
                                                std::unique_ptr<RawReader> reader, bool cpu_only,
                                                const model::DisplayOptions& display,
                                                std::span<const model::LabelText> where) {
    auto out = std::make_unique<LoadedProfile>();
    out->raw = std::move(reader);
    model::Selection selection;
    selection.cpu_only = cpu_only;
    selection.labels.assign(where.begin(), where.end());
    SelectedProfile selected(*out->raw, std::move(selection), {}, {}, false);
    RawReadStatus status = selected.replay();
    if (!status.complete)
        out->warning =
            fmt::format("{} was cut short ({}): compared as far as it goes", path, status.problem);
    out->profile = selected.profile(display);
    out->kind = "raw";
    return out;
}

} // namespace

SelectedProfile::SelectedProfile(RawReader& reader, model::Selection selection,
                                 std::vector<std::vector<std::string>> names,
                                 model::FrameTransform transform, bool keep_timeline)
    : reader_(reader) {
    if (transform.function_lines || transform.no_lines)
        projector_ =
            std::make_unique<model::ProjectingSink>(reader.frames(), reader.stacks(), transform);
    aggregator_ = std::make_unique<model::Aggregator>(
        projector_ ? projector_->frames() : reader.frames(),
        projector_ ? projector_->stacks() : reader.stacks(), keep_timeline);
    if (projector_) projector_->forward_to(*aggregator_);
    select_ = std::make_unique<model::SelectingSink>(
        std::move(selection), std::move(names),
        projector_ ? static_cast<model::SampleSink&>(*projector_)
                   : static_cast<model::SampleSink&>(*aggregator_),
        &reader.frames());
}

SelectedProfile::~SelectedProfile() = default;

void SelectedProfile::track_calls(bool per_thread) {
    aggregator_->track_calls(per_thread);
}

RawReadStatus SelectedProfile::replay() {
    return reader_.replay(*select_);
}

model::Profile SelectedProfile::profile(const model::DisplayOptions& display) const {
    return aggregator_->profile(display);
}

std::uint64_t SelectedProfile::kept() const noexcept {
    return select_->kept();
}

Result<InputFile> InputFile::open(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
        return fail(Errc::io, "cannot read {}: {}", path, std::strerror(errno));
    // A FIFO's open waits for its writer, as a reader of a FIFO expects; anything else is
    // opened without waiting (a terminal's or a modem's open may wait for a carrier).
    const bool fifo = S_ISFIFO(st.st_mode);
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | (fifo ? 0 : O_NONBLOCK));
    if (fd < 0) return fail(Errc::io, "cannot read {}: {}", path, std::strerror(errno));
    InputFile input(fd, false, 0);
    if (::fstat(fd, &st) != 0)
        return fail(Errc::io, "cannot read {}: {}", path, std::strerror(errno));
    if (S_ISREG(st.st_mode)) {
        input.regular_ = true;
        input.size_ = static_cast<std::uint64_t>(st.st_size);
    } else if (!S_ISFIFO(st.st_mode) && !S_ISSOCK(st.st_mode)) {
        return fail(Errc::invalid_argument, "cannot read {}: it is {}, not a recording", path,
                    file_type(st.st_mode));
    }
    if (!fifo) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return input;
}

InputFile::InputFile(InputFile&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), regular_(other.regular_), size_(other.size_) {}

InputFile::~InputFile() {
    if (fd_ >= 0) ::close(fd_);
}

int InputFile::release() noexcept {
    return std::exchange(fd_, -1);
}

Result<std::string> InputFile::read_head(const std::string& path, std::size_t n) {
    std::string bytes(n, '\0');
    std::size_t got = 0;
    while (got < n) {
        ssize_t r = ::read(fd_, bytes.data() + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return fail(Errc::io, "cannot read {}: {}", path, std::strerror(errno));
        if (r == 0) break;
        got += static_cast<std::size_t>(r);
    }
    bytes.resize(got);
    return bytes;
}

Result<std::string> InputFile::read_all(const std::string& path, std::uint64_t max_bytes,
                                        std::string_view what, std::string bytes) {
    auto too_big = [&] {
        return fail(Errc::invalid_argument,
                    "{} holds more than {}, the most {} may hold, read whole into memory "
                    "(SPYGLASS_MAX_INPUT_MB raises it)",
                    path, mib(max_bytes), what);
    };
    if ((regular_ && size_ > max_bytes) || bytes.size() > max_bytes) return too_big();
    if (regular_) bytes.reserve(static_cast<std::size_t>(size_));
    char chunk[1 << 16];
    for (;;) {
        ssize_t n = ::read(fd_, chunk, sizeof chunk);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return fail(Errc::io, "cannot read {}: {}", path, std::strerror(errno));
        if (n == 0) return bytes;
        if (bytes.size() + static_cast<std::size_t>(n) > max_bytes) return too_big();
        bytes.append(chunk, static_cast<std::size_t>(n));
    }
}

Result<std::unique_ptr<LoadedProfile>> load_profile(const std::string& path, bool cpu_only,
                                                    const model::DisplayOptions& display,
                                                    std::uint64_t max_bytes,
                                                    std::span<const model::LabelText> where) {
    auto input = InputFile::open(path);
    if (!input) return std::unexpected(input.error());
    if (input->regular()) {
        // A raw recording in a file is read block by block, however large.
        std::string head(16, '\0');
        ssize_t n = ::pread(input->fd(), head.data(), head.size(), 0);
        head.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
        if (looks_like_raw(head)) {
            auto reader = RawReader::open(path, max_bytes);
            if (!reader) return std::unexpected(reader.error());
            return load_raw(path, std::move(*reader), cpu_only, display, where);
        }
    }
    auto bytes = input->read_all(path, max_bytes, "a pprof or folded input");
    if (!bytes) return std::unexpected(bytes.error());
    return load_profile_bytes(path, *bytes, cpu_only, display, max_bytes, where);
}

Result<std::unique_ptr<LoadedProfile>> load_profile_bytes(const std::string& name,
                                                          const std::string& bytes, bool cpu_only,
                                                          const model::DisplayOptions& display,
                                                          std::uint64_t max_bytes,
                                                          std::span<const model::LabelText> where) {
    if (looks_like_raw(bytes)) {
        auto reader = RawReader::from_memory(bytes, name);
        if (!reader) return std::unexpected(reader.error());
        return load_raw(name, std::move(*reader), cpu_only, display, where);
    }
    auto out = std::make_unique<LoadedProfile>();
    Result<void> loaded;
    if (bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
        static_cast<unsigned char>(bytes[1]) == 0x8b) {
        auto plain = gunzip(name, bytes, max_bytes);
        if (!plain) return std::unexpected(plain.error());
        loaded = load_pprof(name, *plain, cpu_only, where, *out);
    } else if (bytes.find('\0') != std::string::npos) {
        loaded = load_pprof(name, bytes, cpu_only, where, *out);
    } else {
        loaded = load_folded(name, bytes, cpu_only, where, *out);
    }
    if (!loaded) return std::unexpected(loaded.error());
    out->profile.display = display;
    return out;
}

} // namespace spyglass::output
