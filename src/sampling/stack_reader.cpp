#include "spyglass/sampling/stack_reader.hpp"

#include <algorithm>

namespace spyglass::sampling {

namespace {
constexpr std::size_t kMaxCachedCodes = 1u << 16;
constexpr std::size_t kMaxResolvedStacks = 1u << 14;
} // namespace

const char* stack_outcome_name(StackOutcome outcome) noexcept {
    switch (outcome) {
    case StackOutcome::ok:
        return "ok";
    case StackOutcome::truncated:
        return "truncated";
    case StackOutcome::torn:
        return "torn";
    case StackOutcome::gone:
        return "gone";
    }
    return "?";
}

StackReader::StackReader(python::PythonProcess& process, FrameTable& frames,
                         StackReadOptions options)
    : process_(process), frames_(frames), options_(options),
      truncated_marker_(frames.marker("<truncated>")) {}

const python::CodeInfo* StackReader::code(process::Address address) const {
    auto it = codes_.find(address);
    return it == codes_.end() ? nullptr : &it->second.info;
}

StackOutcome StackReader::read(python::ThreadRecord thread, std::vector<FrameId>& out,
                               Attempt how) {
    ++stats_.stacks;
    const int retries = how.retries >= 0 ? how.retries : options_.retries;
    StackOutcome outcome = StackOutcome::torn;
    for (int attempt = 0;; ++attempt) {
        ++stats_.attempts;
        process_.walker().walk(thread, raw_);
        outcome = resolve(out, how.thread_stopped);
        if (outcome == StackOutcome::ok || outcome == StackOutcome::gone) return outcome;
        // A stack deeper than the frame limit is cut the same way each time: not a race.
        if (raw_.end == python::StackEnd::too_deep) return outcome;
        ++stats_.torn_attempts;
        if (attempt >= retries) return outcome;
        // The thread moved on: read the pointers the walk starts from again.
        if (auto status = process_.reread_thread(thread); !status)
            return status.error().code == Errc::process_gone ? StackOutcome::gone : outcome;
    }
}

StackReader::CodeEntry* StackReader::load_code(process::Address address, ReadError& error) {
    ++stats_.code_misses;
    if (codes_.size() >= kMaxCachedCodes) {
        codes_.clear();
        forget_resolved();
    }
    CodeEntry entry;
    if (auto status = python::read_code(process_.memory(), process_.layout(),
                                        process_.target().types, address, entry.info);
        !status) {
        error = status.error();
        return nullptr;
    }
    StringTable& strings = frames_.strings();
    entry.function = strings.intern(entry.info.qualname);
    entry.file = strings.intern(entry.info.filename);
    return &(codes_[address] = std::move(entry));
}

std::int32_t StackReader::line_of(CodeEntry& entry, std::int32_t offset) {
    auto it = entry.lines.find(offset);
    if (it != entry.lines.end()) return it->second;
    std::int32_t line = python::code_line(process_.layout(), entry.info, offset);
    entry.lines.emplace(offset, line);
    return line;
}

StackOutcome StackReader::resolve(std::vector<FrameId>& out, bool thread_stopped) {
    out.clear();
    kept_.clear();
    process::RemoteMemory& memory = process_.memory();
    const python::Layout& layout = process_.layout();

    if (raw_.end == python::StackEnd::inconsistent) return torn(stats_.torn_changed);
    // One batched read: the walk's consistency words and the headers of the cached codes.
    batch_.clear();
    process_.walker().add_verification(raw_, batch_);
    unique_codes_.clear();
    for (std::uint32_t i = 0; i < raw_.depth; ++i) {
        process::Address code = raw_.frames[i].code;
        if (std::find(unique_codes_.begin(), unique_codes_.end(), code) == unique_codes_.end())
            unique_codes_.push_back(code);
    }
    std::size_t header_size = python::code_header_size(layout);
    headers_.resize(unique_codes_.size() * header_size);
    ops_.clear();
    for (const python::VerifyBatch::Region& region : batch_.regions)
        ops_.push_back({region.address, batch_.bytes.data() + region.offset, region.length});
    for (std::size_t i = 0; i < unique_codes_.size(); ++i)
        if (codes_.contains(unique_codes_[i]))
            ops_.push_back({unique_codes_[i], headers_.data() + i * header_size, header_size});
    if (auto status = memory.read_many(ops_); !status)
        return status.error().code == Errc::process_gone ? StackOutcome::gone
                                                         : torn(stats_.torn_unreadable);
    if (!process_.walker().verify(raw_, batch_)) return torn(stats_.torn_changed);

    for (std::size_t i = 0; i < unique_codes_.size(); ++i) {
        auto it = codes_.find(unique_codes_[i]);
        if (it == codes_.end()) continue;
        std::span<const std::uint8_t> header(headers_.data() + i * header_size, header_size);
        if (python::code_fingerprint(layout, header) != it->second.info.fingerprint) {
            ++stats_.code_stale;
            codes_.erase(it);
            forget_resolved();
        }
    }

    // Seen before, with every code object still valid: the same frames.
    std::uint64_t key = 0xcbf29ce484222325ull ^ raw_.depth;
    for (std::uint32_t i = 0; i < raw_.depth; ++i) {
        const python::RawFrame& raw = raw_.frames[i];
        key = (key ^ raw.code) * 0x100000001b3ull;
        key = (key ^ (static_cast<std::uint64_t>(static_cast<std::uint32_t>(raw.offset)) << 8 |
                      raw.flags)) *
              0x100000001b3ull;
    }
    // A generator or coroutine frame has a caller only while it runs: a chain that ends at one
    // was read across a yield (the generator's frame as suspended, the rest as running). A
    // stopped thread can be in such a state only up to 3.11, where a generator driven from C
    // on a thread with no Python frame has none; from 3.12 the C call pushes an entry frame
    // first, and a stopped thread whose chain still ends so was stopped while its new eval
    // loop's cframe->current_frame was not set yet (it points at a stale frame).
    const bool entry_frames_on_c_stack = layout.off.owner_cstack != python::kAbsent;
    // Frames outside the outermost one that is shown (not started yet) do not count as callers.
    auto suspended_at = [&](std::uint32_t index) {
        const python::RawFrame& raw = raw_.frames[index];
        if (raw.flags & python::RawFrame::generator) return true;
        auto it = codes_.find(raw.code);
        return it != codes_.end() && (it->second.info.flags & python::kGeneratorCodeFlags) != 0;
    };
    auto ends_suspended = [&](std::uint32_t outermost_kept) {
        if ((thread_stopped && !entry_frames_on_c_stack) || raw_.truncated() || raw_.depth == 0)
            return false;
        return suspended_at(raw_.depth - 1) || suspended_at(outermost_kept);
    };
    if (raw_.depth > 0 && ends_suspended(raw_.depth - 1)) return torn(stats_.torn_suspended);
    bool cacheable = !raw_.truncated();
    if (cacheable) {
        auto hit = resolved_.find(key);
        if (hit != resolved_.end() && hit->second.raw.size() == raw_.depth &&
            std::equal(
                hit->second.raw.begin(), hit->second.raw.end(), raw_.frames.begin(),
                [](const auto& cached, const python::RawFrame& raw) {
                    return cached.first == raw.code &&
                           cached.second ==
                               (static_cast<std::uint64_t>(static_cast<std::uint32_t>(raw.offset))
                                    << 8 |
                                raw.flags);
                })) {
            if (!hit->second.kept.empty() && ends_suspended(hit->second.kept.back()))
                return torn(stats_.torn_suspended);
            ++stats_.resolved_hits;
            out = hit->second.frames;
            kept_ = hit->second.kept;
            return StackOutcome::ok;
        }
    }

    bool interpreter_frames = layout.frame_model == python::FrameModel::interpreter_frames;
    for (std::uint32_t i = 0; i < raw_.depth; ++i) {
        const python::RawFrame& raw = raw_.frames[i];
        auto it = codes_.find(raw.code);
        CodeEntry* entry = it == codes_.end() ? nullptr : &it->second;
        if (entry == nullptr) {
            ReadError error{};
            entry = load_code(raw.code, error);
            if (entry == nullptr)
                return error.code == Errc::process_gone ? StackOutcome::gone
                                                        : torn(stats_.torn_bad_code);
        }
        if (raw.offset >= entry->info.length) return torn(stats_.torn_bad_offset);
        // Pushed but not yet running its first instruction (3.11+): CPython hides these too.
        if (interpreter_frames && !(raw.flags & python::RawFrame::generator) &&
            raw.offset < entry->info.first_traceable)
            continue;
        if (interpreter_frames && raw.offset < 0 && !(raw.flags & python::RawFrame::generator))
            continue;
        Frame frame;
        frame.function = entry->function;
        frame.file = entry->file;
        frame.first_line = entry->info.first_line;
        frame.line = options_.no_lines         ? 0
                     : options_.function_lines ? entry->info.first_line
                                               : line_of(*entry, raw.offset);
        out.push_back(frames_.intern(frame));
        kept_.push_back(i);
    }
    if (raw_.truncated()) {
        out.push_back(truncated_marker_);
        return StackOutcome::truncated;
    }
    if (!kept_.empty() && ends_suspended(kept_.back())) return torn(stats_.torn_suspended);
    if (resolved_.size() >= kMaxResolvedStacks) resolved_.clear();
    ResolvedStack& entry = resolved_[key];
    entry.raw.clear();
    for (std::uint32_t i = 0; i < raw_.depth; ++i)
        entry.raw.emplace_back(
            raw_.frames[i].code,
            static_cast<std::uint64_t>(static_cast<std::uint32_t>(raw_.frames[i].offset)) << 8 |
                raw_.frames[i].flags);
    entry.frames = out;
    entry.kept = kept_;
    return StackOutcome::ok;
}

} // namespace spyglass::sampling
