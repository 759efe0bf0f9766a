// The raw file's reader: whole blocks only, each checked (CRC-32, sizes, a zstd stream that
// decodes to exactly the size the block says, records that refer only to what is defined)
// before any of its samples reach the sink. Everything read from the file is bounded.
#include "spyglass/input/raw_reader.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <optional>
#include <unordered_set>

#include <fmt/format.h>
#include <zlib.h>
#include <zstd.h>

#include "spyglass/input/profile_input.hpp"
#include "spyglass/output/raw_codec.hpp"

namespace spyglass::output {

namespace {

constexpr std::uint32_t kUnset = ~std::uint32_t{0};
constexpr std::uint64_t kMaxThreads = 1u << 20;
constexpr std::uint64_t kMaxStackDepth = 1u << 16;

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

// What a block's records do, kept until the whole block checks out.
struct Event {
    enum Kind : std::uint8_t { thread_event, sample_event, finish_event, process_event } kind;
    std::uint32_t index = 0; // a thread's; a process's in Decoder::processes
    model::ThreadInfo info;
    model::Sample sample;
};

// The decoding state that runs across blocks.
struct Decoder {
    model::FrameTable& frames;
    model::StackTable& stacks;
    std::uint16_t version;
    // File id -> table id, per kind.
    std::vector<model::StringId> strings;
    std::vector<model::WaitId> waits;
    std::vector<model::FrameId> frame_ids;
    std::vector<model::StackId> stack_ids;
    std::vector<std::uint32_t> last_stack; // per thread: file stack id
    std::uint64_t threads = 0;             // thread indexes defined: below this
    std::uint64_t time_ns = 0, weight_ns = 0;
    std::int64_t thread = -1;
    std::vector<model::FrameId> scratch;
    model::RecordingTotals totals;
    bool finished = false;
    std::vector<model::ProcessInfo> processes; // the block's process records (events refer)

    void reset_ids() {
        strings.assign(1, frames.strings().intern(""));
        waits.assign(1, model::WaitId{});
        frame_ids.clear();
        stack_ids.assign(1, stacks.intern({}));
        std::fill(last_stack.begin(), last_stack.end(), kUnset);
    }
};

// Decodes one block's records into `events`; false (and the decoder's state as it was) when
// anything in it does not check out.
bool decode_records(Decoder& d, std::string_view bytes, std::vector<Event>& events) {
    // To undo the block: the maps only grow within a block, unless it resets them.
    const std::size_t n_strings = d.strings.size(), n_waits = d.waits.size(),
                      n_frames = d.frame_ids.size(), n_stacks = d.stack_ids.size();
    const std::vector<std::uint32_t> last_stack = d.last_stack;
    const std::uint64_t threads = d.threads, time_ns = d.time_ns, weight_ns = d.weight_ns;
    const std::int64_t previous_thread = d.thread;
    std::optional<Decoder> before_reset;
    raw::Cursor in(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
    d.processes.clear();
    auto give_up = [&] {
        if (before_reset) {
            d.strings = std::move(before_reset->strings);
            d.waits = std::move(before_reset->waits);
            d.frame_ids = std::move(before_reset->frame_ids);
            d.stack_ids = std::move(before_reset->stack_ids);
        }
        d.strings.resize(n_strings);
        d.waits.resize(n_waits);
        d.frame_ids.resize(n_frames);
        d.stack_ids.resize(n_stacks);
        d.last_stack = last_stack;
        d.threads = threads;
        d.time_ns = time_ns;
        d.weight_ns = weight_ns;
        d.thread = previous_thread;
        d.finished = false;
        d.processes.clear();
        events.clear();
        return false;
    };
    auto string_id = [&](std::uint64_t file_id, model::StringId& out) {
        if (file_id >= d.strings.size()) return false;
        out = d.strings[file_id];
        return true;
    };
    while (!in.at_end()) {
        if (d.finished) return give_up(); // nothing comes after the end record
        std::uint8_t tag = in.byte();
        if (tag & raw::kSample) {
            model::Sample sample;
            std::int64_t thread = d.thread + 1 + raw::unzigzag(in.varint());
            if (thread < 0 || static_cast<std::uint64_t>(thread) >= d.threads) return give_up();
            sample.key.thread = static_cast<std::uint32_t>(thread);
            sample.key.on_cpu = tag & raw::kOnCpu;
            sample.key.gil = tag & raw::kGil;
            std::uint64_t time = d.time_ns;
            if (tag & raw::kHasTime) time += static_cast<std::uint64_t>(raw::unzigzag(in.varint()));
            std::uint32_t& last = d.last_stack[sample.key.thread];
            std::uint64_t stack = last;
            if (!(tag & raw::kSameStack)) stack = in.varint();
            if (stack >= d.stack_ids.size()) return give_up();
            sample.key.stack = d.stack_ids[stack];
            sample.weight_ns = (tag & raw::kSameWeight) ? d.weight_ns : in.varint();
            sample.cpu_ns = (tag & raw::kHasCpu) ? in.varint() : 0;
            if (tag & raw::kHasExtra) {
                std::uint8_t extra = in.byte();
                if ((extra & raw::kStatusMask) > 2 || (extra & ~(raw::kStatusMask | raw::kHasWait)))
                    return give_up();
                sample.status = static_cast<model::StackStatus>(extra & raw::kStatusMask);
                if (extra & raw::kHasWait) {
                    std::uint64_t wait = in.varint();
                    if (wait >= d.waits.size()) return give_up();
                    sample.key.wait = d.waits[wait];
                }
            }
            if (!in.ok()) return give_up();
            sample.time_ns = time;
            last = static_cast<std::uint32_t>(stack);
            d.thread = thread;
            d.time_ns = time;
            d.weight_ns = sample.weight_ns;
            events.push_back({Event::sample_event, 0, {}, sample});
            continue;
        }
        switch (tag) {
        case raw::kString: {
            std::string_view text = in.string();
            if (!in.ok()) return give_up();
            d.strings.push_back(d.frames.strings().intern(text));
            break;
        }
        case raw::kWait: {
            model::Wait wait;
            std::uint8_t kind = in.byte();
            if (kind > static_cast<std::uint8_t>(model::WaitKind::syscall)) return give_up();
            wait.kind = static_cast<model::WaitKind>(kind);
            if (!string_id(in.varint(), wait.syscall) || !string_id(in.varint(), wait.target) ||
                !in.ok())
                return give_up();
            d.waits.push_back(d.frames.waits().intern(wait));
            break;
        }
        case raw::kFrame: {
            model::Frame frame;
            if (!string_id(in.varint(), frame.function) || !string_id(in.varint(), frame.file))
                return give_up();
            std::int64_t line = raw::unzigzag(in.varint());
            std::int64_t first = raw::unzigzag(in.varint());
            std::uint8_t kind = in.byte();
            if (!in.ok() || kind > static_cast<std::uint8_t>(model::FrameKind::marker) ||
                line < INT32_MIN || line > INT32_MAX || first < INT32_MIN || first > INT32_MAX)
                return give_up();
            frame.line = static_cast<std::int32_t>(line);
            frame.first_line = static_cast<std::int32_t>(first);
            frame.kind = static_cast<model::FrameKind>(kind);
            if (d.version >= 2 && !string_id(in.varint(), frame.module)) return give_up();
            d.frame_ids.push_back(d.frames.intern(frame));
            break;
        }
        case raw::kBuildId: {
            model::StringId module, build_id;
            if (d.version < 2 || !string_id(in.varint(), module) ||
                !string_id(in.varint(), build_id))
                return give_up();
            d.frames.set_build_id(module, d.frames.strings().view(build_id));
            break;
        }
        case raw::kStack: {
            std::uint64_t depth = in.varint();
            if (depth > kMaxStackDepth || depth > in.left()) return give_up();
            d.scratch.clear();
            for (std::uint64_t i = 0; i < depth; ++i) {
                std::uint64_t id = in.varint();
                if (id >= d.frame_ids.size()) return give_up();
                d.scratch.push_back(d.frame_ids[id]);
            }
            if (!in.ok()) return give_up();
            d.stack_ids.push_back(d.stacks.intern(d.scratch));
            break;
        }
        case raw::kThread: {
            Event event{Event::thread_event, 0, {}, {}};
            std::uint64_t index = in.varint();
            event.info.pid = static_cast<pid_t>(in.varint());
            event.info.tid = static_cast<pid_t>(in.varint());
            event.info.thread_id = in.varint();
            event.info.name = std::string(in.string());
            if (!in.ok() || index >= kMaxThreads) return give_up();
            event.index = static_cast<std::uint32_t>(index);
            d.threads = std::max(d.threads, index + 1);
            if (d.last_stack.size() < d.threads) d.last_stack.resize(d.threads, kUnset);
            events.push_back(std::move(event));
            break;
        }
        case raw::kProcess: {
            model::ProcessInfo process;
            std::uint64_t pid = in.varint();
            process.python_version = std::string(in.string());
            process.interpreter = std::string(in.string());
            constexpr auto kMaxPid = static_cast<std::uint64_t>(std::numeric_limits<pid_t>::max());
            if (d.version < 3 || !in.ok() || pid > kMaxPid) return give_up();
            process.pid = static_cast<pid_t>(pid);
            events.push_back(
                {Event::process_event, static_cast<std::uint32_t>(d.processes.size()), {}, {}});
            d.processes.push_back(std::move(process));
            break;
        }
        case raw::kReset:
            if (!before_reset) before_reset.emplace(d);
            d.reset_ids();
            break;
        case raw::kFinish: {
            model::RecordingTotals& t = d.totals;
            std::uint8_t end = in.byte();
            if (end > static_cast<std::uint8_t>(model::RecordingEnd::targets_exited))
                return give_up();
            t.end = static_cast<model::RecordingEnd>(end);
            for (std::uint64_t* v :
                 {&t.elapsed_ns, &t.ticks, &t.late_ticks, &t.samples, &t.errors, &t.dropped})
                *v = in.varint();
            t.found_interpreter = in.byte() & 1;
            t.python_version = std::string(in.string());
            std::uint64_t pids = in.varint();
            if (pids > in.left()) return give_up();
            t.pids.clear();
            for (std::uint64_t i = 0; i < pids; ++i)
                t.pids.push_back(static_cast<pid_t>(in.varint()));
            model::PauseSummary& p = t.pauses;
            for (std::uint64_t* v :
                 {&p.pauses, &p.failed, &p.timed_out, &p.refused, &p.p50_ns, &p.p99_ns, &p.max_ns})
                *v = in.varint();
            p.refusal = std::string(in.string());
            if (!in.ok()) return give_up();
            d.finished = true;
            events.push_back({Event::finish_event, 0, {}, {}});
            break;
        }
        default:
            return give_up();
        }
    }
    return in.ok() || give_up();
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
    if (header_.format_version > kRawFormatVersion || header_.format_version == 0)
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
    Decoder d{frames_, stacks_, header_.format_version, {}, {}, {}, {}, {}, 0, 0, 0, -1, {}, {},
              false,   {}};
    d.reset_ids();
    ZSTD_DCtx* zstd = ZSTD_createDCtx();
    std::fseek(file_, static_cast<long>(data_offset_), SEEK_SET);
    std::uint64_t offset = data_offset_;
    status.good_bytes = offset;
    sink.start(info_);
    std::string payload, decoded;
    std::vector<Event> events;
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
        if (!decode_records(d, records, events)) {
            status.damaged = true;
            status.problem = fmt::format("block {} at byte {} does not decode: damaged",
                                         status.blocks + 1, offset);
            break;
        }
        for (const Event& event : events) {
            if (event.kind == Event::process_event) {
                const model::ProcessInfo& process = d.processes[event.index];
                if (!first_version) first_version = process.python_version;
                if (seen_pids.insert(process.pid).second) pids.push_back(process.pid);
                sink.process(process);
            } else if (event.kind == Event::thread_event) {
                if (threads.size() <= event.index) threads.resize(event.index + 1);
                threads[event.index] = event.info;
                sink.thread(event.index, event.info);
            } else if (event.kind == Event::sample_event) {
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
