// The raw file's reader: whole blocks only, each checked (CRC-32, sizes, a zstd stream that
// decodes to exactly the size the block says, records that refer only to what is defined)
// before any of its samples reach the sink. Everything read from the file is bounded.
#include "spyglass/input/raw_reader.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <unordered_set>

#include "raw_decode.hpp"
#include <fmt/format.h>
#include <zlib.h>
#include <zstd.h>

#include "spyglass/input/profile_input.hpp"
#include "spyglass/output/raw_codec.hpp"

namespace spyglass::output {

namespace {

std::uint32_t block_crc(const unsigned char* header, std::string_view payload) {
    uLong crc = crc32(0L, header, 12);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(payload.data()),
                static_cast<uInt>(payload.size()));
    return static_cast<std::uint32_t>(crc);
}

// Reads exactly n bytes (fewer only at the end of the file).
std::size_t read_fully(std::FILE* file, void* into, std::size_t n) {
    return std::fread(into, 1, n, file);
}

} // namespace

bool looks_like_raw(std::string_view bytes) noexcept {
    return bytes.size() >= sizeof raw::kMagic &&
           std::memcmp(bytes.data(), raw::kMagic, sizeof raw::kMagic) == 0;
}

RawReader::~RawReader() {
    if (file_ != nullptr) std::fclose(file_);
}

Result<std::unique_ptr<RawReader>> RawReader::open(const std::string& path,
                                                   std::uint64_t max_stream_bytes) {
    auto input = InputFile::open(path);
    if (!input) return std::unexpected(input.error());
    if (!input->regular()) {
        // Whether it is a raw recording at all, before reading it whole.
        auto head = input->read_head(path, sizeof raw::kMagic);
        if (!head) return std::unexpected(head.error());
        if (!looks_like_raw(*head))
            return fail(Errc::invalid_argument, "{} is not a spyglass raw recording", path);
        auto bytes = input->read_all(path, max_stream_bytes, "a raw recording read from a pipe",
                                     std::move(*head));
        if (!bytes) return std::unexpected(bytes.error());
        return from_memory(*bytes, path);
    }
    std::unique_ptr<RawReader> reader(new RawReader());
    reader->file_ = ::fdopen(input->fd(), "rb");
    if (reader->file_ == nullptr)
        return fail(Errc::io, "cannot read {}: {}", path, std::strerror(errno));
    input->release();
    if (auto ok = reader->read_headers(path); !ok) return std::unexpected(ok.error());
    return reader;
}

Result<std::unique_ptr<RawReader>> RawReader::from_memory(std::string_view bytes,
                                                          const std::string& name) {
    std::unique_ptr<RawReader> reader(new RawReader());
    reader->memory_.assign(bytes.begin(), bytes.end());
    reader->memory_.push_back('\0'); // fmemopen wants a non-empty buffer
    reader->file_ = ::fmemopen(reader->memory_.data(), bytes.size() == 0 ? 1 : bytes.size(), "rb");
    if (reader->file_ == nullptr)
        return fail(Errc::io, "cannot read {}: {}", name, std::strerror(errno));
    if (auto ok = reader->read_headers(name); !ok) return std::unexpected(ok.error());
    return reader;
}

Result<void> RawReader::read_headers(const std::string& name) {
    unsigned char head[raw::kFileHeaderSize];
    std::size_t got = read_fully(file_, head, sizeof head);
    if (got < sizeof raw::kMagic || std::memcmp(head, raw::kMagic, sizeof raw::kMagic) != 0)
        return fail(Errc::invalid_argument, "{} is not a spyglass raw recording", name);
    if (got < sizeof head)
        return fail(Errc::invalid_argument, "{} is cut short: it ends inside its file header",
                    name);
    if (raw::get_u32(head + 12) != static_cast<std::uint32_t>(crc32(0L, head, 12)))
        return fail(Errc::invalid_argument, "{} is damaged: its file header fails its checksum",
                    name);
    header_.format_version = raw::get_u16(head + 8);
    if (raw::record_decoder(header_.format_version) == nullptr)
        return fail(Errc::invalid_argument,
                    "{} is a raw recording of format version {}, newer than this spyglass "
                    "reads (version {}): read it with a newer spyglass",
                    name, header_.format_version, kRawFormatVersion);
    unsigned char block[raw::kBlockHeaderSize];
    if (read_fully(file_, block, sizeof block) != sizeof block || block[0] != raw::kInfoBlock ||
        block[1] != raw::kStored)
        return fail(Errc::invalid_argument, "{} is cut short or damaged: no recording header",
                    name);
    std::uint32_t size = raw::get_u32(block + 4);
    if (size > raw::kMaxStored || raw::get_u32(block + 8) != size)
        return fail(Errc::invalid_argument, "{} is damaged: its recording header is {} bytes", name,
                    size);
    std::string payload(size, '\0');
    if (read_fully(file_, payload.data(), size) != size ||
        raw::get_u32(block + 12) != block_crc(block, payload))
        return fail(Errc::invalid_argument,
                    "{} is cut short or damaged: its recording header does not check out", name);
    raw::Cursor in(reinterpret_cast<const unsigned char*>(payload.data()), payload.size());
    header_.spyglass_version = std::string(in.string());
    header_.host = std::string(in.string());
    header_.target_pid = static_cast<pid_t>(in.varint());
    std::uint64_t words = in.varint();
    if (words > in.left()) in.fail();
    for (std::uint64_t i = 0; i < words && in.ok(); ++i)
        info_.command.emplace_back(in.string());
    std::uint8_t mode = in.byte(), flags = in.byte();
    info_.mode = mode == 1 ? model::SampleMode::cpu : model::SampleMode::wall;
    info_.gil_only = flags & 1;
    info_.subprocesses = flags & 2;
    info_.rate_hz = in.f64();
    info_.period_ns = in.varint();
    info_.start_unix_ns = in.varint();
    if (!in.ok() || mode > 1)
        return fail(Errc::invalid_argument, "{} is damaged: its recording header does not decode",
                    name);
    data_offset_ = raw::kFileHeaderSize + raw::kBlockHeaderSize + size;
    return {};
}

RawReadStatus RawReader::replay(model::SampleSink& sink) {
    RawReadStatus status;
    raw::Decoder d(frames_, stacks_, header_.format_version);
    const raw::RecordDecoder decode_record = raw::record_decoder(header_.format_version);
    ZSTD_DCtx* zstd = ZSTD_createDCtx();
    std::fseek(file_, static_cast<long>(data_offset_), SEEK_SET);
    std::uint64_t offset = data_offset_;
    status.good_bytes = offset;
    sink.start(info_);
    std::string payload, decoded;
    std::vector<raw::Event> events;
    std::vector<model::ThreadInfo> threads;
    // For a cut file's totals: the pids in the order they came, the first process's version.
    std::vector<pid_t> pids;
    std::unordered_set<pid_t> seen_pids;
    std::optional<std::string> first_version;
    for (;;) {
        unsigned char head[raw::kBlockHeaderSize];
        std::size_t got = read_fully(file_, head, sizeof head);
        if (got == 0) {
            if (!d.finished)
                status.problem = fmt::format(
                    "it ends after {} complete blocks with no end record: the recording was "
                    "cut (spyglass killed, or the disk full)",
                    status.blocks);
            break;
        }
        if (got < sizeof head) {
            status.problem = fmt::format("it is cut inside the header of block {} at byte {}",
                                         status.blocks + 1, offset);
            break;
        }
        std::uint32_t stored = raw::get_u32(head + 4), raw_size = raw::get_u32(head + 8);
        if (stored > raw::kMaxStored || raw_size > raw::kMaxRaw) {
            status.damaged = true;
            status.problem = fmt::format("block {} at byte {} claims {} bytes: damaged",
                                         status.blocks + 1, offset, stored);
            break;
        }
        payload.resize(stored);
        if (read_fully(file_, payload.data(), stored) != stored) {
            status.problem =
                fmt::format("it is cut inside block {} at byte {}", status.blocks + 1, offset);
            break;
        }
        if (raw::get_u32(head + 12) != block_crc(head, payload)) {
            status.damaged = true;
            status.problem = fmt::format("block {} at byte {} fails its checksum: damaged",
                                         status.blocks + 1, offset);
            break;
        }
        std::uint64_t next = offset + sizeof head + stored;
        if (head[0] != raw::kRecordBlock) {
            offset = next; // a block type of a later minor version: not ours to read
            status.good_bytes = offset;
            continue;
        }
        std::string_view records;
        if (head[1] == raw::kStored && raw_size == stored) {
            records = payload;
        } else if (head[1] == raw::kZstd && zstd != nullptr) {
            decoded.resize(raw_size);
            ZSTD_inBuffer in{payload.data(), payload.size(), 0};
            ZSTD_outBuffer out{decoded.data(), decoded.size(), 0};
            bool ok = true;
            while (ok && in.pos < in.size) {
                std::size_t rc = ZSTD_decompressStream(zstd, &out, &in);
                ok = !ZSTD_isError(rc) && !(out.pos == out.size && in.pos < in.size && rc != 0);
                if (ok && out.pos == out.size && in.pos < in.size) {
                    // Output full with input left: only a frame epilogue may remain.
                    std::size_t before = in.pos;
                    rc = ZSTD_decompressStream(zstd, &out, &in);
                    ok = !ZSTD_isError(rc) && in.pos != before;
                }
            }
            if (!ok || out.pos != raw_size) {
                status.damaged = true;
                status.problem = fmt::format("block {} at byte {} does not decompress: damaged",
                                             status.blocks + 1, offset);
                break;
            }
            records = std::string_view(decoded.data(), out.pos);
        } else {
            status.damaged = true;
            status.problem = fmt::format("block {} at byte {} has an unknown encoding {}",
                                         status.blocks + 1, offset, head[1]);
            break;
        }
        events.clear();
        if (!raw::decode_block(d, decode_record, records, events)) {
            status.damaged = true;
            status.problem = fmt::format("block {} at byte {} does not decode: damaged",
                                         status.blocks + 1, offset);
            break;
        }
        for (const raw::Event& event : events) {
            if (event.kind == raw::Event::process_event) {
                const model::ProcessInfo& process = d.processes[event.index];
                if (!first_version) first_version = process.python_version;
                if (seen_pids.insert(process.pid).second) pids.push_back(process.pid);
                sink.process(process);
            } else if (event.kind == raw::Event::thread_event) {
                if (threads.size() <= event.index) threads.resize(event.index + 1);
                threads[event.index] = event.info;
                sink.thread(event.index, event.info);
            } else if (event.kind == raw::Event::sample_event) {
                ++status.samples;
                status.last_time_ns = event.sample.time_ns;
                sink.sample(event.sample);
            }
        }
        ++status.blocks;
        offset = next;
        status.good_bytes = offset;
        if (d.finished) break;
    }
    ZSTD_freeDCtx(zstd);
    std::fseek(file_, 0, SEEK_END);
    long size = std::ftell(file_);
    status.file_bytes = size < 0 ? offset : static_cast<std::uint64_t>(size);
    status.complete = d.finished;
    if (d.finished && status.file_bytes > status.good_bytes)
        status.problem = fmt::format("{} bytes after its end record were ignored",
                                     status.file_bytes - status.good_bytes);
    if (!d.finished) {
        // Cut short: the totals from what was read.
        model::RecordingTotals& t = d.totals;
        t.end = model::RecordingEnd::stopped;
        t.elapsed_ns = status.last_time_ns;
        t.samples = status.samples;
        t.found_interpreter = !threads.empty() || first_version.has_value();
        // The first process's version, as the end record would have said (format 3).
        t.python_version = first_version.value_or("");
        for (const model::ThreadInfo& thread : threads)
            if (thread.pid != 0 && seen_pids.insert(thread.pid).second) pids.push_back(thread.pid);
        t.pids = std::move(pids);
    }
    sink.finish(d.totals);
    return status;
}

namespace {

class NameCollector final : public model::SampleSink {
  public:
    void thread(std::uint32_t index, const model::ThreadInfo& info) override {
        if (names.size() <= index) names.resize(index + 1);
        auto& known = names[index];
        if (std::find(known.begin(), known.end(), info.name) == known.end())
            known.push_back(info.name);
    }
    void sample(const model::Sample&) override {}
    std::vector<std::vector<std::string>> names;
};

} // namespace

std::vector<std::vector<std::string>> RawReader::thread_names() {
    NameCollector collector;
    replay(collector);
    return std::move(collector.names);
}

} // namespace spyglass::output
