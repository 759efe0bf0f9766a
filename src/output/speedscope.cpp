// speedscope's own file format (https://www.speedscope.app/file-format-schema.json): shared
// frames and one "sampled" profile per thread, in time order when the recording kept a
// timeline (docs/output-formats.md).
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "spyglass/output/json_writer.hpp"
#include "spyglass/output/writer.hpp"

namespace spyglass::output {

namespace {

using Ids = std::vector<DisplayFrames::Id>;

// Each distinct root-first frame list once: a long timeline costs a few bytes per entry.
class UniqueStacks {
  public:
    std::uint32_t id(const Ids& ids) {
        auto [it, fresh] = index_.try_emplace(ids, static_cast<std::uint32_t>(stacks_.size()));
        if (fresh) stacks_.push_back(&it->first);
        return it->second;
    }
    [[nodiscard]] const Ids& get(std::uint32_t id) const { return *stacks_[id]; }

  private:
    std::map<Ids, std::uint32_t> index_;
    std::vector<const Ids*> stacks_;
};

struct ThreadProfile {
    std::uint32_t thread = 0;
    std::vector<std::pair<std::uint32_t, std::uint64_t>> samples; // unique stack, weight (ns)
    std::uint64_t start_ns = 0, end_ns = 0;
    std::uint64_t total = 0; // weight (ns)
};

// Per thread, in the order of Profile::threads: the timeline in time order (consecutive
// identical stacks merged), else the aggregated samples merged and sorted by their frames'
// labels.
std::vector<ThreadProfile> collect(const model::Profile& profile, DisplayFrames& display,
                                   UniqueStacks& unique) {
    std::vector<ThreadProfile> threads(profile.threads.size());
    for (std::uint32_t i = 0; i < threads.size(); ++i)
        threads[i].thread = i;
    Ids ids;
    if (!profile.timeline.empty()) {
        for (const model::TimelineEntry& entry : profile.timeline) {
            if (entry.count == 0 || entry.thread >= threads.size()) continue;
            ThreadProfile& thread = threads[entry.thread];
            display.stack(entry.thread, entry.stack, entry.on_cpu, entry.wait, ids);
            std::uint32_t id = unique.id(ids);
            if (thread.total == 0) thread.start_ns = entry.start_ns;
            thread.end_ns = std::max(thread.end_ns, entry.start_ns + entry.weight_ns);
            thread.total += entry.weight_ns;
            if (!thread.samples.empty() && thread.samples.back().first == id)
                thread.samples.back().second += entry.weight_ns;
            else
                thread.samples.emplace_back(id, entry.weight_ns);
        }
    } else {
        std::vector<std::map<std::uint32_t, std::uint64_t>> merged(threads.size());
        for (const model::AggregatedSample& sample : profile.samples) {
            if (sample.count == 0 || sample.key.thread >= threads.size()) continue;
            display.stack(sample.key.thread, sample.key.stack, sample.key.on_cpu, sample.key.wait,
                          ids);
            merged[sample.key.thread][unique.id(ids)] += sample.weight_ns;
        }
        auto by_label = [&](const auto& a, const auto& b) {
            const Ids &x = unique.get(a.first), &y = unique.get(b.first);
            return std::lexicographical_compare(
                x.begin(), x.end(), y.begin(), y.end(),
                [&](auto i, auto j) { return display[i].label < display[j].label; });
        };
        for (std::size_t t = 0; t < threads.size(); ++t) {
            ThreadProfile& thread = threads[t];
            thread.samples.assign(merged[t].begin(), merged[t].end());
            std::sort(thread.samples.begin(), thread.samples.end(), by_label);
            for (const auto& sample : thread.samples)
                thread.total += sample.second;
            thread.end_ns = thread.total;
        }
    }
    std::erase_if(threads, [](const ThreadProfile& t) { return t.total == 0; });
    return threads;
}

double seconds(std::uint64_t ns) {
    return static_cast<double>(ns) / 1e9;
}

class SpeedscopeWriter final : public ProfileWriter {
  public:
    Result<void> write(const model::Profile& profile, std::FILE* out) override {
        DisplayFrames display(profile);
        UniqueStacks unique;
        std::vector<ThreadProfile> threads = collect(profile, display, unique);
        std::size_t active = 0;
        for (std::size_t i = 0; i < threads.size(); ++i)
            if (threads[i].total > threads[active].total) active = i;

        std::string buffer;
        JsonWriter json(buffer);
        auto drain = [&]() -> Result<void> {
            if (buffer.size() < (1 << 16)) return {};
            auto written = write_bytes(out, buffer);
            buffer.clear();
            return written;
        };
        json.begin_object();
        json.field("$schema", "https://www.speedscope.app/file-format-schema.json");
        json.field("exporter", "spyglass");
        json.field("name", profile.info.command.empty() ? std::string("spyglass profile")
                                                        : join_words(profile.info.command));
        json.field("activeProfileIndex", static_cast<std::uint64_t>(active));
        json.key("shared").begin_object().key("frames").begin_array();
        for (std::size_t id = 0; id < display.size(); ++id) {
            const DisplayFrames::Entry& frame = display[static_cast<DisplayFrames::Id>(id)];
            json.begin_object().field("name", frame.label);
            if (!frame.file.empty()) json.field("file", frame.file);
            if (frame.line > 0) json.field("line", frame.line);
            json.end_object();
            if (auto drained = drain(); !drained) return drained;
        }
        json.end_array().end_object();
        json.key("profiles").begin_array();
        for (const ThreadProfile& thread : threads) {
            const model::ThreadInfo& info = profile.threads[thread.thread];
            std::string name = thread_root_label(info);
            if (profile.per_process_roots()) name += fmt::format(" (process {})", info.pid);
            json.begin_object();
            json.field("type", "sampled");
            json.field("name", name);
            json.field("unit", "seconds");
            json.field("startValue", seconds(thread.start_ns));
            json.field("endValue", seconds(thread.end_ns));
            json.key("samples").begin_array();
            for (const auto& sample : thread.samples) {
                json.begin_array();
                for (DisplayFrames::Id id : unique.get(sample.first))
                    json.value(static_cast<std::uint64_t>(id));
                json.end_array();
                if (auto drained = drain(); !drained) return drained;
            }
            json.end_array();
            json.key("weights").begin_array();
            for (const auto& sample : thread.samples) {
                json.value(seconds(sample.second));
                if (auto drained = drain(); !drained) return drained;
            }
            json.end_array();
            json.end_object();
        }
        json.end_array();
        json.end_object();
        buffer.push_back('\n');
        if (auto written = write_bytes(out, buffer); !written) return written;
        return flush_output(out);
    }
};

} // namespace

std::unique_ptr<ProfileWriter> make_speedscope_writer() {
    return std::make_unique<SpeedscopeWriter>();
}

} // namespace spyglass::output
