// The Chrome trace-event format (JSON object form), which Perfetto and chrome://tracing open:
// one track per thread (metadata events name the processes and threads), and on it one
// complete event ("ph": "X") per frame for as long as consecutive samples of that thread had
// it on their stack, nested as the stack was (docs/output-formats.md).
#include <algorithm>

#include <fmt/format.h>

#include "spyglass/output/json_writer.hpp"
#include "spyglass/output/writer.hpp"

namespace spyglass::output {

namespace {

struct Slice {
    DisplayFrames::Id frame = 0;
    std::uint32_t depth = 0;
    std::uint64_t start_ns = 0, end_ns = 0;
};

// One thread's slices from its part of the timeline: a frame's slice lasts while consecutive
// samples keep it (and everything below it) on the stack; a gap of more than half a period
// between samples (samples left out by --mode cpu or --gil) ends every slice.
class ThreadSlices {
  public:
    explicit ThreadSlices(std::uint64_t period_ns) : period_ns_(period_ns) {}

    void add(const std::vector<DisplayFrames::Id>& frames, std::uint64_t start_ns,
             std::uint64_t end_ns) {
        if (!open_.empty() && start_ns > last_end_ns_ + period_ns_ / 2) close_from(0, last_end_ns_);
        std::size_t common = 0;
        while (common < open_.size() && common < frames.size() &&
               open_[common].frame == frames[common])
            ++common;
        close_from(common, start_ns);
        for (std::size_t i = common; i < frames.size(); ++i)
            open_.push_back({frames[i], static_cast<std::uint32_t>(i), start_ns, 0});
        last_end_ns_ = end_ns;
    }

    // Every slice, parents before their children.
    std::vector<Slice> finish() {
        close_from(0, last_end_ns_);
        std::sort(done_.begin(), done_.end(), [](const Slice& a, const Slice& b) {
            return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.depth < b.depth;
        });
        return std::move(done_);
    }

  private:
    void close_from(std::size_t depth, std::uint64_t end_ns) {
        while (open_.size() > depth) {
            Slice slice = open_.back();
            open_.pop_back();
            slice.end_ns = std::max(end_ns, slice.start_ns);
            done_.push_back(slice);
        }
    }

    std::uint64_t period_ns_;
    std::vector<Slice> open_, done_;
    std::uint64_t last_end_ns_ = 0;
};

double microseconds(std::uint64_t ns) {
    return static_cast<double>(ns) / 1e3;
}

void metadata(JsonWriter& json, std::string_view name, pid_t pid, pid_t tid, std::string_view key,
              std::string_view value) {
    json.begin_object().field("ph", "M").field("name", name);
    json.field("pid", static_cast<std::int64_t>(pid)).field("tid", static_cast<std::int64_t>(tid));
    json.key("args").begin_object().field(key, value).end_object().end_object();
}

class ChromeTraceWriter final : public ProfileWriter {
  public:
    Result<void> write(const model::Profile& profile, std::FILE* out) override {
        DisplayFrames display(profile);
        // The track already says which process and thread: no root pseudo-frames on it.
        const std::size_t roots =
            (profile.per_process_roots() ? 1 : 0) + (profile.display.per_thread_roots ? 1 : 0);
        const std::uint64_t period = profile.info.period_ns;
        std::vector<ThreadSlices> threads(profile.threads.size(), ThreadSlices(period));
        std::vector<DisplayFrames::Id> ids;
        for (const model::TimelineEntry& entry : profile.timeline) {
            if (entry.count == 0 || entry.thread >= threads.size()) continue;
            display.stack(entry.thread, entry.stack, entry.on_cpu, entry.wait, ids);
            ids.erase(ids.begin(),
                      ids.begin() + static_cast<std::ptrdiff_t>(std::min(roots, ids.size())));
            threads[entry.thread].add(ids, entry.start_ns, entry.start_ns + entry.weight_ns);
        }

        std::string buffer;
        JsonWriter json(buffer);
        json.begin_object().key("traceEvents").begin_array();
        std::string command = profile.info.command.empty() ? std::string("spyglass profile")
                                                           : join_words(profile.info.command);
        std::vector<pid_t> named;
        for (std::uint32_t t = 0; t < profile.threads.size(); ++t) {
            const model::ThreadInfo& thread = profile.threads[t];
            if (std::find(named.begin(), named.end(), thread.pid) == named.end()) {
                named.push_back(thread.pid);
                metadata(json, "process_name", thread.pid, thread.pid, "name",
                         named.size() == 1 ? command : process_root_label(thread.pid));
            }
            metadata(json, "thread_name", thread.pid, thread.tid, "name",
                     thread.name.empty() ? thread_root_label(thread) : thread.name);
            json.begin_object().field("ph", "M").field("name", "thread_sort_index");
            json.field("pid", static_cast<std::int64_t>(thread.pid))
                .field("tid", static_cast<std::int64_t>(thread.tid));
            json.key("args").begin_object().field("sort_index", t).end_object().end_object();
        }
        for (std::uint32_t t = 0; t < threads.size(); ++t) {
            const model::ThreadInfo& thread = profile.threads[t];
            for (const Slice& slice : threads[t].finish()) {
                const DisplayFrames::Entry& frame = display[slice.frame];
                json.begin_object().field("ph", "X").field("name", frame.label);
                json.field("cat", frame.wait.value != 0 ? "wait"
                                  : frame.off_cpu       ? "off-cpu"
                                  : frame.synthetic     ? "spyglass"
                                  : frame.file.empty()  ? "marker"
                                                        : "python");
                json.field("ts", microseconds(slice.start_ns));
                json.field("dur", microseconds(slice.end_ns - slice.start_ns));
                json.field("pid", static_cast<std::int64_t>(thread.pid));
                json.field("tid", static_cast<std::int64_t>(thread.tid));
                if (!frame.file.empty()) {
                    json.key("args").begin_object().field("file", frame.file);
                    if (frame.line > 0) json.field("line", frame.line);
                    json.end_object();
                } else if (frame.wait.value != 0) {
                    const model::Wait& wait = profile.frames->waits().get(frame.wait);
                    const model::StringTable& strings = profile.frames->strings();
                    json.key("args").begin_object().field("wait", model::wait_kind_name(wait.kind));
                    if (wait.syscall.value != 0) json.field("syscall", strings.view(wait.syscall));
                    if (wait.target.value != 0) json.field("target", strings.view(wait.target));
                    json.end_object();
                }
                json.end_object();
                if (buffer.size() >= (1 << 16)) {
                    if (auto written = write_bytes(out, buffer); !written) return written;
                    buffer.clear();
                }
            }
        }
        json.end_array();
        json.field("displayTimeUnit", "ms");
        json.key("otherData").begin_object();
        json.field("exporter", "spyglass").field("command", command);
        json.field("python", profile.totals.python_version);
        json.field("mode", profile.info.mode == model::SampleMode::cpu ? "cpu" : "wall");
        json.field("rate_hz", profile.info.rate_hz);
        json.field("start_unix_ns", profile.info.start_unix_ns);
        json.end_object().end_object();
        buffer.push_back('\n');
        if (auto written = write_bytes(out, buffer); !written) return written;
        return flush_output(out);
    }
};

} // namespace

std::unique_ptr<ProfileWriter> make_chrometrace_writer() {
    return std::make_unique<ChromeTraceWriter>();
}

} // namespace spyglass::output
