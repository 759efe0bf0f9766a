#include "spyglass/delivery/continuous.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include "spyglass/delivery/atomic_file.hpp"
#include "spyglass/signals.hpp"

#ifndef SPYGLASS_VERSION
#define SPYGLASS_VERSION "0.0.0"
#endif

namespace spyglass::delivery {

namespace {

// With --window the session's tables are emptied past this many frames, stacks or strings
// (Resolver::bound_tables): about 10 MB at most. An emptying is cheap (the code objects read
// stay, only their names are interned again), so the bound can be far below what a window
// may use. Tests set a small one with SPYGLASS_TABLE_LIMIT to see it happen.
constexpr std::size_t kTableLimit = 50'000;

std::string host_name() {
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) != 0) return "unknown";
    return name;
}

void warn(const std::string& text) {
    std::fprintf(stderr, "spyglass: warning: %s\n", text.c_str());
}

} // namespace

// The profile of the whole recording, written when SIGUSR1 asks (without --window).
class RecordExtras::FlushWhole final : public model::SampleSink {
  public:
    FlushWhole(RecordExtras& extras, model::Aggregator& whole, const std::atomic<int>& requests)
        : extras_(extras), whole_(whole), requests_(requests) {}
    void start(const model::RecordingInfo& info) override { whole_.start(info); }
    void process(const model::ProcessInfo& info) override { whole_.process(info); }
    void thread(std::uint32_t index, const model::ThreadInfo& info) override {
        whole_.thread(index, info);
    }
    void sample(const model::Sample& sample) override {
        whole_.sample(sample);
        check(sample.time_ns);
    }
    void advance(std::uint64_t time_ns) override { check(time_ns); }
    void finish(const model::RecordingTotals& totals) override { whole_.finish(totals); }

  private:
    void check(std::uint64_t time_ns) {
        last_ns_ = std::max(last_ns_, time_ns);
        int requests = requests_.load(std::memory_order_relaxed);
        if (requests == seen_) return;
        seen_ = requests;
        extras_.elapsed_ns_ = last_ns_;
        extras_.flush_whole(whole_);
    }
    RecordExtras& extras_;
    model::Aggregator& whole_;
    const std::atomic<int>& requests_;
    // Requests are counted from the handler's installation, before the attach: one that came
    // while spyglass attached is answered at the first sample, not lost.
    int seen_ = 0;
    std::uint64_t last_ns_ = 0;
};

Result<std::unique_ptr<RecordExtras>> RecordExtras::open(const RecordDeliveryOptions& options,
                                                         output::Format format,
                                                         const std::string& output_path,
                                                         const model::FrameTable& frames,
                                                         const model::StackTable& stacks) {
    std::unique_ptr<RecordExtras> extras(new RecordExtras());
    extras->options_ = options;
    extras->format_ = format;
    extras->output_path_ = output_path;
    extras->display_ = options.display;
    extras->whole_frames_ = &frames;
    extras->whole_stacks_ = &stacks;
    const bool windowed = options.window > 0;
    if (!windowed) {
        if (!options.keep.empty())
            return fail(Errc::invalid_argument, "--keep deletes old window files: it needs "
                                                "--window SECONDS");
        if (!options.push.empty())
            return fail(Errc::invalid_argument,
                        "--push sends each window: give --window SECONDS too (e.g. --window 15)");
    }
    if (options.push.empty() &&
        (!options.app.empty() || !options.tags.empty() || !options.push_headers.empty()))
        return fail(Errc::invalid_argument, "--app, --tag and --push-header go with --push URL");
    const auto window_ns = static_cast<std::uint64_t>(options.window * 1e9);
    std::uint64_t keep_ns = 0;
    if (windowed) {
        if (output_path == "-")
            return fail(Errc::invalid_argument,
                        "--window writes one file per window: -o must be a file name pattern, "
                        "not standard output");
        if (!output_path.empty())
            if (auto ok = check_window_pattern(output_path, window_ns); !ok)
                return std::unexpected(ok.error());
        if (!options.keep.empty()) {
            keep_ns = options.keep_ns;
            if (keep_ns < window_ns)
                return fail(Errc::invalid_argument,
                            "--keep {} is shorter than one window (--window {}): nothing would "
                            "be kept",
                            options.keep, options.window);
        }
    }
    if (!options.raw.empty()) {
        if (options.raw == output_path)
            return fail(Errc::invalid_argument, "--raw and -o name the same file {}",
                        output_path == "-" ? "(standard output)" : output_path);
        output::RawHeader header;
        header.spyglass_version = SPYGLASS_VERSION;
        header.host = host_name();
        header.target_pid = options.pid;
        // Written beside its destination and renamed over it at the end, as every output: an
        // old recording is never damaged and a partial one never takes the real name (after
        // SIGKILL or a full disk the temporary file stays, readable to its last whole block).
        auto file = OutputFile::open(options.raw, OutputFile::Role::raw_recording);
        if (!file) return std::unexpected(file.error());
        extras->raw_file_.emplace(std::move(*file));
        auto fd = extras->raw_file_->begin_write_descriptor();
        if (!fd) return std::unexpected(fd.error());
        auto raw =
            output::RawWriter::to_descriptor(*fd, options.raw, frames, stacks, std::move(header));
        if (!raw) return std::unexpected(raw.error());
        extras->raw_ = std::move(*raw);
        extras->tee_.add(*extras->raw_);
    }
    if (!options.push.empty()) {
        PushOptions push;
        push.url = options.push;
        push.app = options.app;
        push.labels = options.tags;
        push.labels.push_back("hostname=" + host_name());
        push.headers = options.push_headers;
        push.timeout_s = options.push_timeout;
        push.rate_hz = options.rate;
        auto pusher = Pusher::start(std::move(push));
        if (!pusher) return std::unexpected(pusher.error());
        extras->pusher_ = std::move(*pusher);
    }
    extras->flush_requests_ = &install_flush_handler();
    model::FrameTransform transform{options.function, options.nolineno};
    if (windowed) {
        extras->windows_ = std::make_unique<WindowOutputs>(output_path, format, extras->display_,
                                                           keep_ns, extras->pusher_.get());
        WindowOutputs* outputs = extras->windows_.get();
        extras->cutter_ = std::make_unique<model::WindowCutter>(
            frames, stacks, window_ns, transform, output::needs_timeline(format),
            [outputs](std::unique_ptr<model::Window> window) {
                outputs->submit(std::move(window));
            },
            extras->flush_requests_,
            [outputs](const model::Window& window) { outputs->snapshot(window); });
        extras->tee_.add(*extras->cutter_);
    } else if (extras->raw_ && (transform.function_lines || transform.no_lines)) {
        // The raw file keeps every line: the whole profile shows --function / --nolineno.
        extras->projector_ = std::make_unique<model::ProjectingSink>(frames, stacks, transform);
        extras->whole_frames_ = &extras->projector_->frames();
        extras->whole_stacks_ = &extras->projector_->stacks();
    }
    return extras;
}

RecordExtras::~RecordExtras() = default;

std::size_t RecordExtras::table_limit() const {
    if (!cutter_) return 0;
    if (const char* limit = std::getenv("SPYGLASS_TABLE_LIMIT"))
        return std::max<std::size_t>(16, std::strtoul(limit, nullptr, 10));
    return kTableLimit;
}

model::SampleSink& RecordExtras::sink(model::Aggregator& whole) {
    if (!cutter_) {
        flush_ = std::make_unique<FlushWhole>(*this, whole, *flush_requests_);
        if (projector_) {
            projector_->forward_to(*flush_);
            tee_.add(*projector_);
        } else {
            tee_.add(*flush_);
        }
    }
    return tee_;
}

void RecordExtras::set_target(pid_t pid) {
    if (pusher_ && pid > 0) pusher_->add_label(fmt::format("pid={}", pid));
}

void RecordExtras::flush_whole(const model::Aggregator& whole) {
    model::Profile profile = whole.profile(display_);
    profile.totals.elapsed_ns = elapsed_ns_;
    profile.totals.samples = whole.kept_samples();
    for (const model::ThreadInfo& thread : profile.threads)
        if (thread.pid != 0 && std::find(profile.totals.pids.begin(), profile.totals.pids.end(),
                                         thread.pid) == profile.totals.pids.end())
            profile.totals.pids.push_back(thread.pid);
    auto writer = output::make_writer(format_);
    auto written = write_file_atomically(
        output_path_, [&](std::FILE* out) { return writer->write(profile, out); });
    if (written) {
        ++flushes_;
        std::fprintf(stderr, "spyglass: SIGUSR1: wrote the recording so far (%s) to %s\n",
                     output::count_of(profile.totals.samples, "sample").c_str(),
                     output_path_.c_str());
    } else {
        warn("SIGUSR1: " + written.error().message);
    }
}

bool RecordExtras::finish(double recording_s) {
    bool ok = true;
    if (windows_) {
        WindowOutputStats stats = windows_->stop();
        if (!stats.error.empty()) {
            warn(stats.error);
            ok = false;
        }
        if (stats.dropped != 0)
            warn(fmt::format("{} could not be written: the disk fell behind",
                             output::count_of(stats.dropped, "window")));
        if (!output_path_.empty())
            std::fprintf(stderr, "spyglass: wrote %s (%s every %g s)%s%s%s\n",
                         output::count_of(stats.written - stats.snapshots, "window file").c_str(),
                         output::format_name(format_), options_.window,
                         stats.last_file.empty() ? "" : ", the last to ", stats.last_file.c_str(),
                         stats.deleted == 0
                             ? ""
                             : fmt::format("; deleted {} older than --keep {}",
                                           output::count_of(stats.deleted, "file"), options_.keep)
                                   .c_str());
    }
    if (pusher_) {
        // A dead backend may hold the last windows: wait for them one request's time at most.
        PushStats stats = pusher_->stop(options_.push_timeout + 1);
        std::fprintf(stderr, "spyglass: push: %s sent to %s; %s failed, %s dropped (%s attempts)\n",
                     output::count_of(stats.sent, "window").c_str(),
                     redacted(options_.push).c_str(), output::with_commas(stats.failed).c_str(),
                     output::with_commas(stats.dropped).c_str(),
                     output::with_commas(stats.attempts).c_str());
        if (stats.failed + stats.dropped != 0)
            warn(fmt::format("{} not pushed ({} after retries, {} dropped from the queue); last "
                             "error: {}",
                             output::count_of(stats.failed + stats.dropped, "window"), stats.failed,
                             stats.dropped, stats.last_error));
    }
    if (raw_) {
        std::optional<Error> error = raw_->error();
        if (!error && raw_file_) {
            if (auto committed = raw_file_->commit(); !committed) error = committed.error();
        }
        if (error) {
            std::string kept = raw_file_ ? raw_file_->keep_partial() : std::string();
            warn(error->message +
                 (kept.empty() ? std::string(" (the file is readable up to its last whole block)")
                               : fmt::format("; kept as {}, readable up to its last whole block "
                                             "(spyglass report {}); {} is unchanged",
                                             kept, kept, raw_->path())));
            ok = false;
        } else {
            std::fprintf(stderr, "spyglass: wrote the raw recording to %s (%s, %.1f KB/s)\n",
                         raw_->path() == "-" ? "standard output" : raw_->path().c_str(),
                         output::count_of(raw_->bytes_written(), "byte").c_str(),
                         recording_s > 0
                             ? static_cast<double>(raw_->bytes_written()) / 1e3 / recording_s
                             : 0.0);
        }
    }
    return ok;
}

} // namespace spyglass::delivery
