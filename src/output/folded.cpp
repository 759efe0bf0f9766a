// Folded ("collapsed") stacks: "root;...;leaf count" per line, sorted, identical lines merged.
// What flamegraph.pl, inferno and speedscope read (docs/output-formats.md).
#include <map>

#include <fmt/format.h>

#include "spyglass/output/writer.hpp"

namespace spyglass::output {

namespace {

// A label as one folded field: ';' separates frames and a line is one stack, so ';' becomes
// ',' and control characters (newlines, tabs, and the C1 controls U+0080-U+009F, which a
// terminal reading `-o -` would act on) become spaces.
void append_field(std::string& out, std::string_view label) {
    for (std::size_t i = 0; i < label.size(); ++i) {
        char c = label[i];
        auto byte = static_cast<unsigned char>(c);
        if (c == ';') {
            c = ',';
        } else if (byte < 0x20 || byte == 0x7f) {
            c = ' ';
        } else if (byte == 0xC2 && i + 1 < label.size() &&
                   static_cast<unsigned char>(label[i + 1]) >= 0x80 &&
                   static_cast<unsigned char>(label[i + 1]) <= 0x9F) {
            c = ' ';
            ++i;
        }
        out.push_back(c);
    }
}

class FoldedWriter final : public ProfileWriter {
  public:
    Result<void> write(const model::Profile& profile, std::FILE* out) override {
        DisplayFrames display(profile);
        std::vector<std::string> fields; // per display id, made on first use
        auto field = [&](DisplayFrames::Id id) -> const std::string& {
            while (fields.size() <= id) {
                std::string text;
                append_field(text, display[static_cast<DisplayFrames::Id>(fields.size())].label);
                fields.push_back(std::move(text));
            }
            return fields[id];
        };
        // Merge by stack first (cheap), then by the text it becomes.
        struct Line {
            std::uint64_t count = 0, weight_ns = 0;
        };
        std::map<std::string, Line> lines;
        std::vector<DisplayFrames::Id> ids;
        std::string line;
        for (const model::AggregatedSample& sample : profile.samples) {
            if (sample.count == 0) continue;
            display.stack(sample.key.thread, sample.key.stack, sample.key.on_cpu, sample.key.wait,
                          ids);
            line.clear();
            for (std::size_t i = 0; i < ids.size(); ++i) {
                if (i != 0) line.push_back(';');
                line += field(ids[i]);
            }
            Line& total = lines[line];
            total.count += sample.count;
            total.weight_ns += sample.weight_ns;
        }
        std::string buffer;
        for (const auto& [stack, total] : lines) {
            buffer += stack;
            fmt::format_to(std::back_inserter(buffer), " {}\n",
                           profile.periods(total.weight_ns, total.count));
            if (buffer.size() >= 1 << 16) {
                if (auto written = write_bytes(out, buffer); !written) return written;
                buffer.clear();
            }
        }
        if (auto written = write_bytes(out, buffer); !written) return written;
        return flush_output(out);
    }
};

} // namespace

std::unique_ptr<ProfileWriter> make_folded_writer() {
    return std::make_unique<FoldedWriter>();
}

} // namespace spyglass::output
