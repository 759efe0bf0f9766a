// pprof: a gzipped perftools.profiles.Profile protobuf, as `go tool pprof` and every pprof UI
// read. On/off-CPU, GIL, thread and pid are sample labels, not frames (docs/output-formats.md),
// and so is every label of the sample's label set.
#include <map>
#include <tuple>
#include <unordered_map>

#include "profile.pb.h"
#include <fmt/format.h>
#include <zlib.h>

#include "spyglass/output/writer.hpp"

namespace spyglass::output {

namespace {

namespace pb = perftools::profiles;

class Strings {
  public:
    explicit Strings(pb::Profile& profile) : profile_(profile) { (void)id(""); }
    std::int64_t id(std::string_view text) {
        auto it = index_.find(std::string(text));
        if (it != index_.end()) return it->second;
        auto next = static_cast<std::int64_t>(profile_.string_table_size());
        profile_.add_string_table(std::string(text));
        index_.emplace(std::string(text), next);
        return next;
    }

  private:
    pb::Profile& profile_;
    std::unordered_map<std::string, std::int64_t> index_;
};

void set_type(pb::ValueType* type, Strings& strings, std::string_view name, std::string_view unit) {
    type->set_type(strings.id(name));
    type->set_unit(strings.id(unit));
}

void add_label(pb::Sample* sample, std::int64_t key, std::int64_t str) {
    pb::Label* label = sample->add_label();
    label->set_key(key);
    label->set_str(str);
}

void add_num_label(pb::Sample* sample, std::int64_t key, std::int64_t num) {
    pb::Label* label = sample->add_label();
    label->set_key(key);
    label->set_num(num);
}

// Each label of the set, its key made on first use (a profile without labels has the strings
// it had).
void add_label_set(pb::Sample* sample, const model::FrameTable& frames, model::LabelSetId id,
                   Strings& strings) {
    if (id.value >= frames.label_sets().size()) return;
    const model::StringTable& text = frames.strings();
    for (const model::Label& label : frames.label_sets().get(id))
        add_label(sample, strings.id(text.view(label.key)), strings.id(text.view(label.value)));
}

// Functions by (name, file, first line), locations by (function, line).
class Locations {
  public:
    Locations(const model::Profile& profile, pb::Profile& out, Strings& strings)
        : profile_(profile), out_(out), strings_(strings), by_frame_(profile.frames->size(), 0) {}

    std::uint64_t location(model::FrameId id) {
        if (id.value >= by_frame_.size()) by_frame_.resize(profile_.frames->size(), 0);
        std::uint64_t& cached = by_frame_[id.value];
        if (cached != 0) return cached;
        const model::Frame& frame = profile_.frames->get(id);
        const model::StringTable& text = profile_.frames->strings();
        if (frame.kind == model::FrameKind::marker)
            return cached = add(text.view(frame.function), "", 0, 0);
        const bool native = frame.kind == model::FrameKind::native;
        std::uint64_t mapping = native ? native_mapping(frame) : 1;
        return cached = add(text.view(frame.function), text.view(frame.file), frame.first_line,
                            profile_.display.labels.line_numbers ? frame.line : 0, mapping,
                            native ? frame.address : 0);
    }

    // For samples without any Python frame, which pprof would leave out of every view.
    std::uint64_t no_frames() {
        if (no_frames_ == 0) no_frames_ = add(kNoFramesFrame, "", 0, 0);
        return no_frames_;
    }

  private:
    // One mapping per native module, with its path and build-id, so that a pprof UI names
    // the library and a symbol server could be asked; its functions are already named. Its
    // Locations' addresses are the module's own (ELF virtual) addresses, the same in every
    // process that maps it: the memory range and file offset stay 0, which pprof reads as
    // addresses needing no relocation (elfexec.GetBase).
    std::uint64_t native_mapping(const model::Frame& frame) {
        const model::StringTable& text = profile_.frames->strings();
        std::string_view path = text.view(frame.module.value != 0 ? frame.module : frame.file);
        auto [it, fresh] = mappings_.try_emplace(std::string(path), 0);
        if (fresh) {
            pb::Mapping* mapping = out_.add_mapping();
            it->second = static_cast<std::uint64_t>(out_.mapping_size());
            mapping->set_id(it->second);
            mapping->set_filename(strings_.id(path));
            if (frame.module.value != 0)
                mapping->set_build_id(strings_.id(profile_.frames->build_id(frame.module)));
            mapping->set_has_functions(true);
            mapping->set_has_filenames(true);
            mapping->set_has_line_numbers(true);
        }
        return it->second;
    }

    // `address`: a native instruction's, in its mapping (0: none, as for Python frames).
    std::uint64_t add(std::string_view name, std::string_view file, std::int64_t first_line,
                      std::int64_t line, std::uint64_t mapping = 1, std::uint64_t address = 0) {
        std::int64_t name_id = strings_.id(name), file_id = strings_.id(file);
        auto [fn, fresh] =
            functions_.try_emplace({name_id, file_id, first_line}, out_.function_size() + 1);
        if (fresh) {
            pb::Function* function = out_.add_function();
            function->set_id(fn->second);
            function->set_name(name_id);
            // No system name: pprof would "demangle" a name equal to it as C++ and cut
            // "<module>" or "<lambda>" out of it.
            function->set_system_name(0);
            function->set_filename(file_id);
            function->set_start_line(first_line);
        }
        auto [loc, added] =
            locations_.try_emplace({fn->second, line, mapping}, out_.location_size() + 1);
        if (added) {
            pb::Location* location = out_.add_location();
            location->set_id(loc->second);
            location->set_mapping_id(mapping);
            if (address != 0) location->set_address(address);
            pb::Line* entry = location->add_line();
            entry->set_function_id(fn->second);
            entry->set_line(line);
        }
        return loc->second;
    }

    const model::Profile& profile_;
    pb::Profile& out_;
    Strings& strings_;
    std::vector<std::uint64_t> by_frame_; // FrameId -> location id, 0 until first used
    std::uint64_t no_frames_ = 0;
    std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, std::uint64_t> functions_;
    std::map<std::tuple<std::uint64_t, std::int64_t, std::uint64_t>, std::uint64_t> locations_;
    std::unordered_map<std::string, std::uint64_t> mappings_; // native module path -> id
};

// Compresses `data` with gzip framing straight into `out`.
Result<void> write_gzip(std::FILE* out, const std::string& data) {
    z_stream z{};
    if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return fail(Errc::io, "cannot compress the profile: zlib: {}",
                    z.msg != nullptr ? z.msg : "deflateInit2 failed");
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
    z.avail_in = static_cast<uInt>(data.size());
    std::string chunk(1 << 16, '\0');
    Result<void> status;
    int rc = Z_OK;
    while (rc != Z_STREAM_END) {
        z.next_out = reinterpret_cast<Bytef*>(chunk.data());
        z.avail_out = static_cast<uInt>(chunk.size());
        rc = deflate(&z, Z_FINISH);
        if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) {
            status = fail(Errc::io, "cannot compress the profile: zlib error {}", rc);
            break;
        }
        status = write_bytes(out, std::string_view(chunk.data(), chunk.size() - z.avail_out));
        if (!status) break;
    }
    deflateEnd(&z);
    if (!status) return status;
    return flush_output(out);
}

class PprofWriter final : public ProfileWriter {
  public:
    Result<void> write(const model::Profile& profile, std::FILE* out) override {
        const model::RecordingInfo& info = profile.info;
        const model::RecordingTotals& totals = profile.totals;
        pb::Profile pprof;
        Strings strings(pprof);
        set_type(pprof.add_sample_type(), strings, "samples", "count");
        set_type(pprof.add_sample_type(), strings, "wall", "nanoseconds");
        set_type(pprof.add_sample_type(), strings, "cpu", "nanoseconds");
        set_type(pprof.mutable_period_type(), strings, "wall", "nanoseconds");
        pprof.set_period(static_cast<std::int64_t>(info.period_ns));
        pprof.set_time_nanos(static_cast<std::int64_t>(info.start_unix_ns));
        pprof.set_duration_nanos(static_cast<std::int64_t>(totals.elapsed_ns));
        pprof.set_default_sample_type(
            strings.id(info.mode == model::SampleMode::cpu ? "cpu" : "wall"));
        if (!info.command.empty())
            pprof.add_comment(strings.id("command: " + join_words(info.command)));
        if (!totals.python_version.empty())
            pprof.add_comment(strings.id("python: " + totals.python_version));
        pprof.add_comment(strings.id(
            fmt::format("mode: {}{}", info.mode == model::SampleMode::cpu ? "cpu" : "wall",
                        info.gil_only ? ", gil only" : "")));

        std::int64_t state = strings.id("state"), on = strings.id("on-cpu"),
                     off = strings.id("off-cpu"), thread = strings.id("thread"),
                     thread_id = strings.id("thread_id"), pid = strings.id("pid"),
                     gil = strings.id("gil"), yes = strings.id("true"), no = strings.id("false");
        // Mapping 1 holds the Python functions, all named: nothing to symbolize. Each native
        // module gets its own (Locations).
        pb::Mapping* mapping = pprof.add_mapping();
        mapping->set_id(1);
        mapping->set_filename(strings.id(info.command.empty() ? std::string_view("python")
                                                              : std::string_view(info.command[0])));
        mapping->set_has_functions(true);
        mapping->set_has_filenames(true);
        mapping->set_has_line_numbers(true);
        Locations locations(profile, pprof, strings);
        for (const model::AggregatedSample& sample : profile.samples) {
            if (sample.count == 0) continue;
            pb::Sample* entry = pprof.add_sample();
            std::span<const model::FrameId> frames = profile.stacks->get(sample.key.stack);
            for (model::FrameId frame : frames) // leaf first
                entry->add_location_id(locations.location(frame));
            if (frames.empty()) entry->add_location_id(locations.no_frames());
            entry->add_value(static_cast<std::int64_t>(sample.count));
            entry->add_value(static_cast<std::int64_t>(sample.weight_ns));
            entry->add_value(static_cast<std::int64_t>(sample.cpu_ns));
            add_label(entry, state, sample.key.on_cpu ? on : off);
            if (sample.key.thread < profile.threads.size()) {
                const model::ThreadInfo& t = profile.threads[sample.key.thread];
                if (!t.name.empty()) add_label(entry, thread, strings.id(t.name));
                add_num_label(entry, thread_id, t.tid);
                add_num_label(entry, pid, t.pid);
            }
            add_label(entry, gil, sample.key.gil ? yes : no);
            if (sample.key.wait.value != 0 &&
                sample.key.wait.value < profile.frames->waits().size()) {
                const model::Wait& wait = profile.frames->waits().get(sample.key.wait);
                const model::StringTable& text = profile.frames->strings();
                // Keys made on first use: a profile without waits has the strings it had.
                add_label(entry, strings.id("wait"), strings.id(model::wait_kind_name(wait.kind)));
                if (wait.syscall.value != 0)
                    add_label(entry, strings.id("wait_syscall"),
                              strings.id(text.view(wait.syscall)));
                if (wait.target.value != 0)
                    add_label(entry, strings.id("wait_target"), strings.id(text.view(wait.target)));
            }
            add_label_set(entry, *profile.frames, sample.key.labels, strings);
        }
        std::string bytes;
        if (!pprof.SerializeToString(&bytes))
            return fail(Errc::io, "cannot encode the pprof profile");
        return write_gzip(out, bytes);
    }
};

} // namespace

std::unique_ptr<ProfileWriter> make_pprof_writer() {
    return std::make_unique<PprofWriter>();
}

} // namespace spyglass::output
