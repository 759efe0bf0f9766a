// The raw file's writer: definitions of strings, label sets, waits, frames and stacks as they
// first appear, samples as small delta-coded records, one zstd stream flushed at every block
// boundary (a block decodes with the ones before it, and compresses like one long stream).
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include "spyglass/output/raw.hpp"
#include "spyglass/output/raw_codec.hpp"

namespace spyglass::output {

namespace {

constexpr std::size_t kBlockTarget = 128u << 10;        // uncompressed bytes per block
constexpr std::uint64_t kBlockInterval = 1'000'000'000; // at most a second of recording
constexpr std::uint32_t kNoStack = ~std::uint32_t{0};

} // namespace

struct RawWriter::Impl {
    ZSTD_CCtx* zstd = nullptr;
    std::string records;    // the block being filled
    std::string compressed; // scratch
    // How much of each table the file defines so far (ids below are known to a reader).
    std::size_t strings = 1, waits = 1, frames = 0, stacks = 1, build_ids = 0, label_sets = 1;
    std::uint64_t block_start_ns = 0;
    bool block_started = false;
    // The previous sample, for deltas.
    std::uint64_t time_ns = 0, weight_ns = 0;
    std::int64_t thread = -1;
    std::vector<std::uint32_t> last_stack;  // per thread
    std::vector<std::uint32_t> last_labels; // per thread: its label set until one says otherwise
    ~Impl() { ZSTD_freeCCtx(zstd); }
};

Result<std::unique_ptr<RawWriter>> RawWriter::open(const std::string& path,
                                                   const model::FrameTable& frames,
                                                   const model::StackTable& stacks,
                                                   RawHeader header) {
    int fd = path == "-" ? STDOUT_FILENO
                         : ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return fail(Errc::io, "cannot write the raw recording to {}: {}", path,
                    std::strerror(errno));
    std::unique_ptr<RawWriter> writer(new RawWriter(path, fd, frames, stacks, std::move(header)));
    if (writer->impl_->zstd == nullptr)
        return fail(Errc::io, "cannot write the raw recording: zstd has no memory");
    return writer;
}

Result<std::unique_ptr<RawWriter>> RawWriter::to_descriptor(int fd, std::string shown,
                                                            const model::FrameTable& frames,
                                                            const model::StackTable& stacks,
                                                            RawHeader header) {
    std::unique_ptr<RawWriter> writer(
        new RawWriter(std::move(shown), fd, frames, stacks, std::move(header)));
    writer->owns_fd_ = false;
    if (writer->impl_->zstd == nullptr)
        return fail(Errc::io, "cannot write the raw recording: zstd has no memory");
    return writer;
}

RawWriter::RawWriter(std::string path, int fd, const model::FrameTable& frames,
                     const model::StackTable& stacks, RawHeader header)
    : path_(std::move(path)), fd_(fd), frames_(frames), stacks_(stacks), header_(std::move(header)),
      impl_(std::make_unique<Impl>()) {
    impl_->zstd = ZSTD_createCCtx();
    if (impl_->zstd != nullptr) {
        ZSTD_CCtx_setParameter(impl_->zstd, ZSTD_c_compressionLevel, 3);
        // A reader holds this much history: 1 MiB is plenty for repeated samples.
        ZSTD_CCtx_setParameter(impl_->zstd, ZSTD_c_windowLog, 20);
    }
}

RawWriter::~RawWriter() {
    if (owns_fd_ && fd_ >= 0 && fd_ != STDOUT_FILENO) ::close(fd_);
}

void RawWriter::write_block(std::uint8_t type, std::uint8_t codec, std::string_view payload,
                            std::size_t raw_size) {
    if (error_) return;
    std::string block;
    block.reserve(raw::kBlockHeaderSize + payload.size());
    block.push_back(static_cast<char>(type));
    block.push_back(static_cast<char>(codec));
    raw::put_u16(block, 0);
    raw::put_u32(block, static_cast<std::uint32_t>(payload.size()));
    raw::put_u32(block, static_cast<std::uint32_t>(raw_size));
    uLong crc = crc32(0L, reinterpret_cast<const Bytef*>(block.data()), 12);
    crc = crc32(crc, reinterpret_cast<const Bytef*>(payload.data()),
                static_cast<uInt>(payload.size()));
    raw::put_u32(block, static_cast<std::uint32_t>(crc));
    block.append(payload);
    // One write per block: what reaches the disk is whole blocks and at most one cut one.
    std::size_t done = 0;
    while (done < block.size()) {
        ssize_t n = ::write(fd_, block.data() + done, block.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            error_ = Error{Errc::io, fmt::format("writing the raw recording {} failed: {}", path_,
                                                 std::strerror(n < 0 ? errno : ENOSPC))};
            return;
        }
        done += static_cast<std::size_t>(n);
    }
    bytes_written_ += block.size();
}

void RawWriter::start(const model::RecordingInfo& info) {
    std::string file_header(raw::kMagic, sizeof raw::kMagic);
    raw::put_u16(file_header, header_.format_version);
    raw::put_u16(file_header, 0);
    raw::put_u32(file_header, static_cast<std::uint32_t>(crc32(
                                  0L, reinterpret_cast<const Bytef*>(file_header.data()), 12)));
    std::string payload;
    raw::put_string(payload, header_.spyglass_version);
    raw::put_string(payload, header_.host);
    raw::put_varint(payload, static_cast<std::uint64_t>(header_.target_pid));
    raw::put_varint(payload, info.command.size());
    for (const std::string& word : info.command)
        raw::put_string(payload, word);
    payload.push_back(static_cast<char>(info.mode == model::SampleMode::cpu ? 1 : 0));
    payload.push_back(static_cast<char>((info.gil_only ? 1 : 0) | (info.subprocesses ? 2 : 0)));
    raw::put_f64(payload, info.rate_hz);
    raw::put_varint(payload, info.period_ns);
    raw::put_varint(payload, info.start_unix_ns);
    // The file header and the info block go out at once: a reader can tell what the file is
    // from its first second.
    std::size_t done = 0;
    while (!error_ && done < file_header.size()) {
        ssize_t n = ::write(fd_, file_header.data() + done, file_header.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
            error_ = Error{Errc::io, fmt::format("writing the raw recording {} failed: {}", path_,
                                                 std::strerror(n < 0 ? errno : ENOSPC))};
        else
            done += static_cast<std::size_t>(n);
    }
    bytes_written_ += done;
    write_block(raw::kInfoBlock, raw::kStored, payload, payload.size());
}

void RawWriter::define_new_entries() {
    Impl& s = *impl_;
    const model::StringTable& strings = frames_.strings();
    for (; s.strings < strings.size(); ++s.strings) {
        s.records.push_back(static_cast<char>(raw::kString));
        raw::put_string(s.records, strings.view(static_cast<model::StringId>(s.strings)));
    }
    const model::LabelSetTable& label_sets = frames_.label_sets();
    for (; header_.format_version >= 4 && s.label_sets < label_sets.size(); ++s.label_sets) {
        std::span<const model::Label> labels =
            label_sets.get(static_cast<model::LabelSetId>(s.label_sets));
        s.records.push_back(static_cast<char>(raw::kLabelSet));
        raw::put_varint(s.records, labels.size());
        for (const model::Label& label : labels) {
            raw::put_varint(s.records, label.key.value);
            raw::put_varint(s.records, label.value.value);
        }
    }
    const model::WaitTable& waits = frames_.waits();
    for (; s.waits < waits.size(); ++s.waits) {
        const model::Wait& wait = waits.get(static_cast<model::WaitId>(s.waits));
        s.records.push_back(static_cast<char>(raw::kWait));
        s.records.push_back(static_cast<char>(wait.kind));
        raw::put_varint(s.records, wait.syscall.value);
        raw::put_varint(s.records, wait.target.value);
    }
    for (; s.frames < frames_.size(); ++s.frames) {
        const model::Frame& frame = frames_.get(static_cast<model::FrameId>(s.frames));
        s.records.push_back(static_cast<char>(raw::kFrame));
        raw::put_varint(s.records, frame.function.value);
        raw::put_varint(s.records, frame.file.value);
        raw::put_varint(s.records, raw::zigzag(frame.line));
        raw::put_varint(s.records, raw::zigzag(frame.first_line));
        s.records.push_back(static_cast<char>(frame.kind));
        if (header_.format_version >= 2) raw::put_varint(s.records, frame.module.value);
    }
    for (; header_.format_version >= 2 && s.build_ids < frames_.build_ids().size(); ++s.build_ids) {
        auto [module, build_id] = frames_.build_ids()[s.build_ids];
        s.records.push_back(static_cast<char>(raw::kBuildId));
        raw::put_varint(s.records, module.value);
        raw::put_varint(s.records, build_id.value);
    }
    for (; s.stacks < stacks_.size(); ++s.stacks) {
        std::span<const model::FrameId> ids = stacks_.get(static_cast<model::StackId>(s.stacks));
        s.records.push_back(static_cast<char>(raw::kStack));
        raw::put_varint(s.records, ids.size());
        for (model::FrameId id : ids)
            raw::put_varint(s.records, id.value);
    }
}

void RawWriter::flush_block() {
    Impl& s = *impl_;
    s.block_started = false;
    if (s.records.empty() || error_) {
        s.records.clear();
        return;
    }
    s.compressed.resize(ZSTD_compressBound(s.records.size()) + 64);
    ZSTD_inBuffer in{s.records.data(), s.records.size(), 0};
    ZSTD_outBuffer out{s.compressed.data(), s.compressed.size(), 0};
    std::size_t left = 1;
    while (left != 0) {
        left = ZSTD_compressStream2(s.zstd, &out, &in, ZSTD_e_flush);
        if (ZSTD_isError(left)) {
            error_ = Error{Errc::io, fmt::format("compressing the raw recording failed: {}",
                                                 ZSTD_getErrorName(left))};
            return;
        }
        if (left != 0) {
            s.compressed.resize(s.compressed.size() * 2);
            out.dst = s.compressed.data();
            out.size = s.compressed.size();
        }
    }
    write_block(raw::kRecordBlock, raw::kZstd, std::string_view(s.compressed.data(), out.pos),
                s.records.size());
    s.records.clear();
}

void RawWriter::process(const model::ProcessInfo& info) {
    if (header_.format_version < 3) return; // (a writer of an older version, for tests)
    Impl& s = *impl_;
    s.records.push_back(static_cast<char>(raw::kProcess));
    raw::put_varint(s.records, static_cast<std::uint64_t>(info.pid));
    raw::put_string(s.records, info.python_version);
    raw::put_string(s.records, info.interpreter);
}

void RawWriter::thread(std::uint32_t index, const model::ThreadInfo& info) {
    Impl& s = *impl_;
    s.records.push_back(static_cast<char>(raw::kThread));
    raw::put_varint(s.records, index);
    raw::put_varint(s.records, static_cast<std::uint64_t>(info.pid));
    raw::put_varint(s.records, static_cast<std::uint64_t>(info.tid));
    raw::put_varint(s.records, info.thread_id);
    raw::put_string(s.records, info.name);
    if (s.last_stack.size() <= index) s.last_stack.resize(index + 1, kNoStack);
}

void RawWriter::sample(const model::Sample& sample) {
    Impl& s = *impl_;
    define_new_entries();
    if (!s.block_started) {
        s.block_started = true;
        s.block_start_ns = sample.time_ns;
    }
    const model::SampleKey& key = sample.key;
    if (s.last_stack.size() <= key.thread) s.last_stack.resize(key.thread + 1, kNoStack);
    std::uint8_t flags = raw::kSample;
    if (key.on_cpu) flags |= raw::kOnCpu;
    if (key.gil) flags |= raw::kGil;
    if (s.last_stack[key.thread] == key.stack.value) flags |= raw::kSameStack;
    if (sample.weight_ns == s.weight_ns) flags |= raw::kSameWeight;
    if (sample.cpu_ns != 0) flags |= raw::kHasCpu;
    std::uint8_t extra = static_cast<std::uint8_t>(sample.status);
    if (key.wait.value != 0) extra |= raw::kHasWait;
    // (A writer of an older version, for tests, leaves the labels out.)
    if (s.last_labels.size() <= key.thread) s.last_labels.resize(key.thread + 1, 0);
    const bool new_labels =
        header_.format_version >= 4 && key.labels.value != s.last_labels[key.thread];
    if (new_labels) extra |= raw::kHasLabels;
    const bool new_calls = header_.format_version >= 5 && sample.new_calls != 0;
    if (new_calls) extra |= raw::kHasNewCalls;
    if (extra != 0) flags |= raw::kHasExtra;
    if (sample.time_ns != s.time_ns) flags |= raw::kHasTime;
    s.records.push_back(static_cast<char>(flags));
    raw::put_varint(s.records, raw::zigzag(static_cast<std::int64_t>(key.thread) - s.thread - 1));
    if (flags & raw::kHasTime)
        raw::put_varint(s.records, raw::zigzag(static_cast<std::int64_t>(sample.time_ns) -
                                               static_cast<std::int64_t>(s.time_ns)));
    if (!(flags & raw::kSameStack)) raw::put_varint(s.records, key.stack.value);
    if (!(flags & raw::kSameWeight)) raw::put_varint(s.records, sample.weight_ns);
    if (flags & raw::kHasCpu) raw::put_varint(s.records, sample.cpu_ns);
    if (flags & raw::kHasExtra) {
        s.records.push_back(static_cast<char>(extra));
        if (extra & raw::kHasWait) raw::put_varint(s.records, key.wait.value);
        if (new_labels) raw::put_varint(s.records, key.labels.value);
        if (new_calls)
            raw::put_varint(s.records,
                            sample.new_calls == model::kCallsUnknown ? 0 : sample.new_calls);
    }
    if (new_labels) s.last_labels[key.thread] = key.labels.value;
    s.thread = key.thread;
    s.time_ns = sample.time_ns;
    s.weight_ns = sample.weight_ns;
    s.last_stack[key.thread] = key.stack.value;
    if (s.records.size() >= kBlockTarget || sample.time_ns - s.block_start_ns >= kBlockInterval)
        flush_block();
}

void RawWriter::advance(std::uint64_t time_ns) {
    Impl& s = *impl_;
    if (s.block_started && time_ns - s.block_start_ns >= kBlockInterval) flush_block();
    if (!s.block_started && !s.records.empty()) {
        // Thread records with no sample after them yet: out within the second too.
        s.block_started = true;
        s.block_start_ns = time_ns;
    }
}

void RawWriter::tables_reset() {
    Impl& s = *impl_;
    define_new_entries(); // (nothing new can be pending: every sample defined its own)
    s.records.push_back(static_cast<char>(raw::kReset));
    s.strings = 1;
    s.waits = 1;
    s.frames = 0;
    s.stacks = 1;
    s.build_ids = 0;
    s.label_sets = 1;
    std::fill(s.last_labels.begin(), s.last_labels.end(), 0);
    std::fill(s.last_stack.begin(), s.last_stack.end(), kNoStack);
}

void RawWriter::finish(const model::RecordingTotals& totals) {
    Impl& s = *impl_;
    define_new_entries();
    std::string& r = s.records;
    r.push_back(static_cast<char>(raw::kFinish));
    r.push_back(static_cast<char>(totals.end));
    for (std::uint64_t v : {totals.elapsed_ns, totals.ticks, totals.late_ticks, totals.samples,
                            totals.errors, totals.dropped})
        raw::put_varint(r, v);
    r.push_back(static_cast<char>(totals.found_interpreter ? 1 : 0));
    raw::put_string(r, totals.python_version);
    raw::put_varint(r, totals.pids.size());
    for (pid_t pid : totals.pids)
        raw::put_varint(r, static_cast<std::uint64_t>(pid));
    const model::PauseSummary& p = totals.pauses;
    for (std::uint64_t v :
         {p.pauses, p.failed, p.timed_out, p.refused, p.p50_ns, p.p99_ns, p.max_ns})
        raw::put_varint(r, v);
    raw::put_string(r, p.refusal);
    flush_block();
    if (!error_ && fd_ != STDOUT_FILENO && ::fsync(fd_) != 0 && errno != EINVAL)
        error_ = Error{Errc::io, fmt::format("writing the raw recording {} failed: {}", path_,
                                             std::strerror(errno))};
}

} // namespace spyglass::output
