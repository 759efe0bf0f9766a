// Fuzz targets over the files `spyglass report` and `spyglass diff` read, end to end in memory:
// the bytes go through the same reader, selection, projection and aggregation as the commands
// (report_command.cpp, diff_command.cpp), then into a writer (a memory stream). Each input
// edits a real file (a raw recording, a pprof protobuf, folded stacks), so that most of them
// get past the first checks; or is taken as it is.
#include "cli_inputs.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "raw_fixture.hpp"
#include <zlib.h>

#include "spyglass/analysis/diff.hpp"
#include "spyglass/input/profile_input.hpp"
#include "spyglass/input/raw_reader.hpp"
#include "spyglass/model/aggregator.hpp"
#include "spyglass/model/projector.hpp"
#include "spyglass/model/select.hpp"
#include "spyglass/output/diff_flamegraph.hpp"
#include "spyglass/output/writer.hpp"

namespace spyglass::fuzz {

namespace {

// What a writer makes, into memory; a failure must be an error, never a crash.
template <class Write>
void into_memory(Write write) {
    char* buffer = nullptr;
    std::size_t size = 0;
    std::FILE* out = ::open_memstream(&buffer, &size);
    if (out == nullptr) return;
    (void)write(out);
    std::fclose(out);
    std::free(buffer);
}

std::string gzipped(const std::string& bytes, int window_bits) {
    z_stream z{};
    if (deflateInit2(&z, 1, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY) != Z_OK) return {};
    std::string out(deflateBound(&z, bytes.size()), '\0');
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
    z.avail_in = static_cast<uInt>(bytes.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    deflate(&z, Z_FINISH);
    out.resize(z.total_out);
    deflateEnd(&z);
    return out;
}

std::string gunzipped(const std::string& bytes) {
    z_stream z{};
    if (inflateInit2(&z, 31) != Z_OK) return {};
    std::string out(1 << 22, '\0');
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
    z.avail_in = static_cast<uInt>(bytes.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    inflate(&z, Z_FINISH);
    out.resize(z.total_out);
    inflateEnd(&z);
    return out;
}

// The real files the inputs edit, made once.
struct Seeds {
    std::string raw, pprof, folded;
    std::vector<std::size_t> blocks; // the raw file's block offsets
    std::unique_ptr<output::LoadedProfile> base;
};

const Seeds& seeds() {
    static const Seeds made = [] {
        Seeds s;
        s.raw = rawtest::make_raw_recording(150, true, 5, 40'000'000).bytes;
        s.blocks = rawtest::raw_block_offsets(s.raw);
        auto loaded = output::load_profile_bytes("seed", s.raw, false, {});
        if (!loaded) std::abort();
        std::string gz;
        char* buffer = nullptr;
        std::size_t size = 0;
        for (auto [format, into] : {std::pair{output::Format::pprof, &gz},
                                    std::pair{output::Format::folded, &s.folded}}) {
            std::FILE* out = ::open_memstream(&buffer, &size);
            (void)output::make_writer(format)->write((*loaded)->profile, out);
            std::fclose(out);
            into->assign(buffer, size);
            std::free(buffer);
        }
        s.pprof = gunzipped(gz);
        if (s.pprof.empty() || s.folded.empty()) std::abort();
        s.base = std::move(*loaded);
        return s;
    }();
    return made;
}

// `seed` with the input's edits: cut at a place it picks, bytes flipped where it says.
std::string edited(const std::string& seed, std::span<const std::uint8_t> data) {
    // One input in four cuts the file (most of a cut pprof or gzip is refused at once).
    const auto cut = static_cast<std::size_t>(data[1] | data[2] << 8);
    std::string bytes = (data[1] & 3) == 3 ? seed.substr(0, cut * seed.size() / 65536) : seed;
    // A few edits: a file with hundreds of them is refused at its first check.
    const std::size_t edits = data.size() > 5 ? data[4] % 6 : 0;
    for (std::size_t i = 5; i + 1 < data.size() && i < 5 + 2 * edits && !bytes.empty(); i += 2) {
        std::size_t at = (data[i] | (data[i + 1] & 0x7f) << 8) % bytes.size();
        bytes[at] = static_cast<char>(bytes[at] ^ data[i + 1] ^ 0x5a);
    }
    return bytes;
}

void fix_block_crcs(std::string& bytes, const std::vector<std::size_t>& blocks) {
    for (std::size_t block : blocks)
        spyglass::rawtest::set_block_crc(bytes, block);
}

// spyglass report FILE [--from/--to] [--mode cpu] [--gil] [-F] [--nolineno] [-t] -f FORMAT
// (-f calls: -o calls.txt, .json or .svg).
void report(const std::string& bytes, std::uint8_t options) {
    auto opened = output::RawReader::from_memory(bytes, "input");
    if (!opened) return;
    output::RawReader& reader = **opened;
    model::Selection selection;
    if (options & 1) selection.from_ns = 40'000'000ull * (options >> 5);
    if (options & 2) selection.to_ns = 40'000'000ull * (1 + (options >> 4));
    selection.cpu_only = options & 4;
    selection.gil_only = options & 8;
    std::vector<std::vector<std::string>> names;
    if (options & 16) {
        selection.threads = {"worker", "2"};
        names = reader.thread_names();
    }
    // Every format (calls in each of its styles, by the slice's bits).
    const auto format = static_cast<output::Format>(options % output::kFormats.size());
    model::DisplayOptions display;
    display.per_thread_roots = options & 32;
    display.labels.line_numbers = !(options & 64);
    display.calls_style = static_cast<model::CallsStyle>((options >> 1) % 3);
    model::FrameTransform transform{(options & 128) != 0, (options & 64) != 0};
    output::SelectedProfile selected(reader, std::move(selection), std::move(names), transform,
                                     output::needs_timeline(format));
    if (output::needs_calls(format)) selected.track_calls(display.per_thread_roots);
    output::RawReadStatus status = selected.replay();
    if (status.good_bytes > bytes.size() || selected.kept() > status.samples) __builtin_trap();
    model::Profile profile = selected.profile(display);
    into_memory([&](std::FILE* out) { return output::make_writer(format)->write(profile, out); });
}

// spyglass diff SEED FILE [--mode cpu] [--top N] [-o diff.svg].
void diff(const std::string& bytes, std::uint8_t options) {
    model::DisplayOptions display;
    display.labels.full_filenames = options & 1;
    const bool cpu = options & 2;
    auto loaded = output::load_profile_bytes("input", bytes, cpu, display, 1 << 20);
    if (!loaded) return;
    const model::Profile& base = seeds().base->profile;
    output::ProfileDiff changes = output::diff_profiles(base, (*loaded)->profile);
    (void)output::diff_table(changes, 1 + options / 8);
    if ((options & 12) == 12)
        into_memory([&](std::FILE* out) {
            return output::write_diff_flamegraph(base, (*loaded)->profile, "fuzz", out);
        });
}

} // namespace

void cli_inputs(std::span<const std::uint8_t> data) {
    if (data.size() < 4) return;
    const Seeds& s = seeds();
    const std::uint8_t options = data[3];
    // By the size (the first bytes are often zeros: the generator's words).
    switch (data.size() % 5) {
    case 0: { // a raw recording: report's path
        std::string bytes = edited(s.raw, data);
        if (data[0] & 8) fix_block_crcs(bytes, s.blocks);
        report(bytes, options);
        break;
    }
    case 1: // a pprof profile (protobuf), as it is or gzipped: diff's path
        diff((data[0] & 8) ? gzipped(edited(s.pprof, data), 31) : edited(s.pprof, data), options);
        break;
    case 2: // folded stacks
        diff(edited(s.folded, data), options);
        break;
    case 3: // a raw recording: diff's path
        diff(edited(s.raw, data), options);
        break;
    default: // the input's own bytes, as they are or gzipped
        diff((data[0] & 8) ? gzipped(std::string(data.begin(), data.end()), 31)
                           : std::string(data.begin(), data.end()),
             options);
        break;
    }
}

} // namespace spyglass::fuzz
