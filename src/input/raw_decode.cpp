// The records every raw format version reads alike, the block loop, and the choice of a
// version's decoder (raw_decode.hpp).
#include "raw_decode.hpp"

#include <algorithm>
#include <limits>

namespace spyglass::output::raw {

namespace {

constexpr std::uint64_t kMaxThreads = 1u << 20;
constexpr std::uint64_t kMaxStackDepth = 1u << 16;

bool string_id(const Decoder& d, std::uint64_t file_id, model::StringId& out) {
    if (file_id >= d.strings.size()) return false;
    out = d.strings[file_id];
    return true;
}

bool read_sample(Block& block, std::uint8_t tag) {
    Decoder& d = block.d;
    Cursor& in = block.in;
    model::Sample sample;
    sample.new_calls = d.version >= 5 ? 0 : model::kCallsUnknown; // older files do not say
    std::int64_t thread = d.thread + 1 + unzigzag(in.varint());
    if (thread < 0 || static_cast<std::uint64_t>(thread) >= d.threads) return false;
    sample.key.thread = static_cast<std::uint32_t>(thread);
    sample.key.on_cpu = tag & kOnCpu;
    sample.key.gil = tag & kGil;
    std::uint64_t time = d.time_ns;
    if (tag & kHasTime) time += static_cast<std::uint64_t>(unzigzag(in.varint()));
    std::uint32_t& last = d.last_stack[sample.key.thread];
    std::uint64_t stack = last;
    if (!(tag & kSameStack)) stack = in.varint();
    if (stack >= d.stack_ids.size()) return false;
    sample.key.stack = d.stack_ids[stack];
    sample.weight_ns = (tag & kSameWeight) ? d.weight_ns : in.varint();
    sample.cpu_ns = (tag & kHasCpu) ? in.varint() : 0;
    model::LabelSetId& labels = d.last_labels[sample.key.thread];
    sample.key.labels = labels;
    if (tag & kHasExtra) {
        std::uint8_t extra = in.byte();
        const std::uint8_t known = kStatusMask | kHasWait | (d.version >= 4 ? kHasLabels : 0) |
                                   (d.version >= 5 ? kHasNewCalls : 0);
        if ((extra & kStatusMask) > 2 || (extra & ~known)) return false;
        sample.status = static_cast<model::StackStatus>(extra & kStatusMask);
        if (extra & kHasWait) {
            std::uint64_t wait = in.varint();
            if (wait >= d.waits.size()) return false;
            sample.key.wait = d.waits[wait];
        }
        if (extra & kHasLabels) {
            std::uint64_t label_set = in.varint();
            if (label_set >= d.label_sets.size()) return false;
            sample.key.labels = d.label_sets[label_set];
        }
        if (extra & kHasNewCalls) {
            std::uint64_t calls = in.varint();
            if (calls >= model::kCallsUnknown) return false;
            sample.new_calls =
                calls == 0 ? model::kCallsUnknown : static_cast<std::uint16_t>(calls);
        }
    }
    if (!in.ok()) return false;
    sample.time_ns = time;
    last = static_cast<std::uint32_t>(stack);
    labels = sample.key.labels;
    d.thread = thread;
    d.time_ns = time;
    d.weight_ns = sample.weight_ns;
    block.events.push_back({Event::sample_event, 0, {}, sample});
    return true;
}

// What a block that does not check out must not change: the maps only grow within a block,
// unless it resets them (Block::before_reset), so their sizes are enough.
struct BeforeBlock {
    std::size_t strings, waits, frame_ids, stack_ids, label_sets;
    std::vector<std::uint32_t> last_stack;
    std::vector<model::LabelSetId> last_labels;
    std::uint64_t threads, time_ns, weight_ns;
    std::int64_t thread;

    explicit BeforeBlock(const Decoder& d)
        : strings(d.strings.size()), waits(d.waits.size()), frame_ids(d.frame_ids.size()),
          stack_ids(d.stack_ids.size()), label_sets(d.label_sets.size()), last_stack(d.last_stack),
          last_labels(d.last_labels), threads(d.threads), time_ns(d.time_ns),
          weight_ns(d.weight_ns), thread(d.thread) {}
};

// Puts the decoder back as it was before the block, and drops the block's events.
bool give_up(Block& block, const BeforeBlock& before) {
    Decoder& d = block.d;
    if (block.before_reset) {
        d.strings = std::move(block.before_reset->strings);
        d.waits = std::move(block.before_reset->waits);
        d.frame_ids = std::move(block.before_reset->frame_ids);
        d.stack_ids = std::move(block.before_reset->stack_ids);
        d.label_sets = std::move(block.before_reset->label_sets);
    }
    d.strings.resize(before.strings);
    d.waits.resize(before.waits);
    d.frame_ids.resize(before.frame_ids);
    d.stack_ids.resize(before.stack_ids);
    d.label_sets.resize(before.label_sets);
    d.last_stack = before.last_stack;
    d.last_labels = before.last_labels;
    d.threads = before.threads;
    d.time_ns = before.time_ns;
    d.weight_ns = before.weight_ns;
    d.thread = before.thread;
    d.finished = false;
    d.processes.clear();
    block.events.clear();
    return false;
}

} // namespace

void Decoder::reset_ids() {
    strings.assign(1, frames.strings().intern(""));
    waits.assign(1, model::WaitId{});
    frame_ids.clear();
    stack_ids.assign(1, stacks.intern({}));
    label_sets.assign(1, model::LabelSetId{});
    std::fill(last_stack.begin(), last_stack.end(), kUnsetStack);
    std::fill(last_labels.begin(), last_labels.end(), model::LabelSetId{});
}

RecordDecoder record_decoder(std::uint16_t version) noexcept {
    switch (version) {
    case 1:
        return decode_record_v1;
    case 2:
        return decode_record_v2;
    case 3:
        return decode_record_v3;
    case 4:
        return decode_record_v4;
    case 5:
        return decode_record_v5;
    default:
        return nullptr;
    }
}

bool decode_block(Decoder& d, RecordDecoder decode_record, std::string_view bytes,
                  std::vector<Event>& events) {
    const BeforeBlock before(d);
    d.processes.clear();
    Block block{d, Cursor(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size()),
                events, std::nullopt};
    while (!block.in.at_end()) {
        if (d.finished) return give_up(block, before); // nothing comes after the end record
        std::uint8_t tag = block.in.byte();
        bool ok = (tag & kSample) ? read_sample(block, tag) : decode_record(block, tag);
        if (!ok) return give_up(block, before);
    }
    return block.in.ok() || give_up(block, before);
}

bool read_string(Block& block) {
    std::string_view text = block.in.string();
    if (!block.in.ok()) return false;
    block.d.strings.push_back(block.d.frames.strings().intern(text));
    return true;
}

bool read_wait(Block& block) {
    Decoder& d = block.d;
    model::Wait wait;
    std::uint8_t kind = block.in.byte();
    if (kind > static_cast<std::uint8_t>(model::WaitKind::syscall)) return false;
    wait.kind = static_cast<model::WaitKind>(kind);
    if (!string_id(d, block.in.varint(), wait.syscall) ||
        !string_id(d, block.in.varint(), wait.target) || !block.in.ok())
        return false;
    d.waits.push_back(d.frames.waits().intern(wait));
    return true;
}

bool read_frame(Block& block, FrameFields fields) {
    Decoder& d = block.d;
    Cursor& in = block.in;
    model::Frame frame;
    if (!string_id(d, in.varint(), frame.function) || !string_id(d, in.varint(), frame.file))
        return false;
    std::int64_t line = unzigzag(in.varint());
    std::int64_t first = unzigzag(in.varint());
    std::uint8_t kind = in.byte();
    if (!in.ok() || kind > static_cast<std::uint8_t>(model::FrameKind::marker) ||
        line < INT32_MIN || line > INT32_MAX || first < INT32_MIN || first > INT32_MAX)
        return false;
    frame.line = static_cast<std::int32_t>(line);
    frame.first_line = static_cast<std::int32_t>(first);
    frame.kind = static_cast<model::FrameKind>(kind);
    if (fields == FrameFields::with_module && !string_id(d, in.varint(), frame.module))
        return false;
    d.frame_ids.push_back(d.frames.intern(frame));
    return true;
}

bool read_build_id(Block& block) {
    Decoder& d = block.d;
    model::StringId module, build_id;
    if (!string_id(d, block.in.varint(), module) || !string_id(d, block.in.varint(), build_id))
        return false;
    d.frames.set_build_id(module, d.frames.strings().view(build_id));
    return true;
}

bool read_stack(Block& block) {
    Decoder& d = block.d;
    Cursor& in = block.in;
    std::uint64_t depth = in.varint();
    if (depth > kMaxStackDepth || depth > in.left()) return false;
    d.scratch.clear();
    for (std::uint64_t i = 0; i < depth; ++i) {
        std::uint64_t id = in.varint();
        if (id >= d.frame_ids.size()) return false;
        d.scratch.push_back(d.frame_ids[id]);
    }
    if (!in.ok()) return false;
    d.stack_ids.push_back(d.stacks.intern(d.scratch));
    return true;
}

bool read_thread(Block& block) {
    Decoder& d = block.d;
    Cursor& in = block.in;
    Event event{Event::thread_event, 0, {}, {}};
    std::uint64_t index = in.varint();
    event.info.pid = static_cast<pid_t>(in.varint());
    event.info.tid = static_cast<pid_t>(in.varint());
    event.info.thread_id = in.varint();
    event.info.name = std::string(in.string());
    if (!in.ok() || index >= kMaxThreads) return false;
    event.index = static_cast<std::uint32_t>(index);
    d.threads = std::max(d.threads, index + 1);
    if (d.last_stack.size() < d.threads) d.last_stack.resize(d.threads, kUnsetStack);
    if (d.last_labels.size() < d.threads) d.last_labels.resize(d.threads);
    block.events.push_back(std::move(event));
    return true;
}

bool read_process(Block& block) {
    Decoder& d = block.d;
    Cursor& in = block.in;
    model::ProcessInfo process;
    std::uint64_t pid = in.varint();
    process.python_version = std::string(in.string());
    process.interpreter = std::string(in.string());
    constexpr auto kMaxPid = static_cast<std::uint64_t>(std::numeric_limits<pid_t>::max());
    if (!in.ok() || pid > kMaxPid) return false;
    process.pid = static_cast<pid_t>(pid);
    block.events.push_back(
        {Event::process_event, static_cast<std::uint32_t>(d.processes.size()), {}, {}});
    d.processes.push_back(std::move(process));
    return true;
}

bool read_reset(Block& block) {
    if (!block.before_reset) block.before_reset.emplace(block.d);
    block.d.reset_ids();
    return true;
}

bool read_finish(Block& block) {
    Cursor& in = block.in;
    model::RecordingTotals& t = block.d.totals;
    std::uint8_t end = in.byte();
    if (end > static_cast<std::uint8_t>(model::RecordingEnd::targets_exited)) return false;
    t.end = static_cast<model::RecordingEnd>(end);
    for (std::uint64_t* v :
         {&t.elapsed_ns, &t.ticks, &t.late_ticks, &t.samples, &t.errors, &t.dropped})
        *v = in.varint();
    t.found_interpreter = in.byte() & 1;
    t.python_version = std::string(in.string());
    std::uint64_t pids = in.varint();
    if (pids > in.left()) return false;
    t.pids.clear();
    for (std::uint64_t i = 0; i < pids; ++i)
        t.pids.push_back(static_cast<pid_t>(in.varint()));
    model::PauseSummary& p = t.pauses;
    for (std::uint64_t* v :
         {&p.pauses, &p.failed, &p.timed_out, &p.refused, &p.p50_ns, &p.p99_ns, &p.max_ns})
        *v = in.varint();
    p.refusal = std::string(in.string());
    if (!in.ok()) return false;
    block.d.finished = true;
    block.events.push_back({Event::finish_event, 0, {}, {}});
    return true;
}

} // namespace spyglass::output::raw
