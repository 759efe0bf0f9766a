#include "spyglass/resolve/stack_resolve.hpp"

#include <algorithm>
#include <limits>

#include "spyglass/python/arg_slots.hpp"

namespace spyglass::sampling {

namespace {

constexpr std::size_t kMaxCachedCodes = 1u << 16;
constexpr std::size_t kMaxResolvedStacks = 1u << 14;

bool same_raw(const python::RawFrame& a, const python::RawFrame& b) noexcept {
    return a.code == b.code && a.offset == b.offset && a.flags == b.flags &&
           a.code_check == b.code_check;
}

std::uint64_t raw_key(std::span<const python::RawFrame> raw) noexcept {
    std::uint64_t key = 0xcbf29ce484222325ull ^ raw.size();
    for (const python::RawFrame& frame : raw) {
        key = (key ^ frame.code) * 0x100000001b3ull;
        key = (key ^ frame.code_check) * 0x100000001b3ull;
        key = (key ^ (static_cast<std::uint64_t>(static_cast<std::uint32_t>(frame.offset)) << 8 |
                      frame.flags)) *
              0x100000001b3ull;
    }
    return key;
}

} // namespace

StackResolver::StackResolver(std::shared_ptr<process::RemoteMemory> memory,
                             const python::TargetInfo& target, model::FrameTable& frames,
                             StackReadOptions options)
    : memory_(std::move(memory)), target_(target), frames_(frames), options_(options),
      truncated_marker_(frames.marker("<truncated>")),
      unknown_code_marker_(frames.marker("<code object gone before it was read>")) {}

const python::CodeInfo* StackResolver::code(process::Address address) const {
    auto it = codes_.find(address);
    return it == codes_.end() ? nullptr : &it->second.info;
}

StackResolver::CodeEntry* StackResolver::code_for(const python::RawFrame& raw) {
    auto it = codes_.find(raw.code);
    if (it != codes_.end()) {
        if (it->second.hash == raw.code_check || raw.code_check == 0) {
            CodeEntry& known = it->second;
            if (known.generation != generation_) {
                known.function = frames_.strings().intern(known.info.qualname);
                known.file = frames_.strings().intern(known.info.filename);
                known.generation = generation_;
            }
            return &known;
        }
        ++stats_.code_stale; // another code object now lives at that address
        codes_.erase(it);
        resolved_.clear();
    }
    ++stats_.code_misses;
    if (codes_.size() >= kMaxCachedCodes) {
        codes_.clear();
        resolved_.clear();
    }
    CodeEntry entry;
    if (!python::read_code(*memory_, target_.layout, target_.types, raw.code, entry.info)) {
        // Its header is still the one captured (read_code fills the fingerprint before the
        // fields it points to): the object is there and what it points to is not readable.
        if (raw.code_check == 0 ||
            python::fingerprint_hash(entry.info.fingerprint) != raw.code_check)
            return nullptr;
        python::CodeInfo& info = entry.info;
        info.qualname = info.name = kUnreadableCodeName;
        info.filename.clear();
        info.line_table.clear();
        info.first_line = 0;
        info.length = std::numeric_limits<std::int32_t>::max();
        info.first_traceable = 0;
        info.nlocals = 0;
        info.local_names = info.local_kinds = 0;
        entry.unreadable = true;
        ++stats_.code_unreadable;
    } else {
        entry.info.stable_args =
            python::read_stable_argument_slots(*memory_, target_.layout, raw.code, entry.info);
    }
    entry.hash = python::fingerprint_hash(entry.info.fingerprint);
    // Read after the capture: it must still be the object the capture saw.
    if (raw.code_check != 0 && entry.hash != raw.code_check) return nullptr;
    model::StringTable& strings = frames_.strings();
    entry.function = strings.intern(entry.info.qualname);
    entry.file = strings.intern(entry.info.filename);
    entry.generation = generation_;
    return &(codes_[raw.code] = std::move(entry));
}

void StackResolver::tables_reset() {
    ++generation_;
    resolved_.clear();
    truncated_marker_ = frames_.marker("<truncated>");
    unknown_code_marker_ = frames_.marker("<code object gone before it was read>");
}

std::int32_t StackResolver::line_of(CodeEntry& entry, std::int32_t offset) {
    auto it = entry.lines.find(offset);
    if (it != entry.lines.end()) return it->second;
    std::int32_t line = python::code_line(target_.layout, entry.info, offset);
    entry.lines.emplace(offset, line);
    return line;
}

model::StackStatus StackResolver::resolve(std::span<const python::RawFrame> raw, bool truncated,
                                          std::vector<model::FrameId>& out) {
    out.clear();
    kept_.clear();
    unreadable_ = false;
    const std::uint64_t key = raw_key(raw);
    if (!truncated) {
        auto hit = resolved_.find(key);
        if (hit != resolved_.end() && std::equal(hit->second.raw.begin(), hit->second.raw.end(),
                                                 raw.begin(), raw.end(), same_raw)) {
            ++stats_.resolved_hits;
            out = hit->second.frames;
            kept_ = hit->second.kept;
            unreadable_ = hit->second.unreadable;
            return model::StackStatus::ok;
        }
    }
    const bool interpreter_frames =
        target_.layout.frame_model == python::FrameModel::interpreter_frames;
    model::StackStatus status = truncated ? model::StackStatus::truncated : model::StackStatus::ok;
    for (std::uint32_t i = 0; i < raw.size(); ++i) {
        const python::RawFrame& frame = raw[i];
        CodeEntry* entry = code_for(frame);
        if (entry == nullptr || frame.offset >= entry->info.length) {
            // Freed (or replaced) between the capture and now: nothing true to show.
            ++stats_.code_gone;
            out.assign(1, unknown_code_marker_);
            kept_.clear();
            return model::StackStatus::torn;
        }
        bool generator = frame.flags & python::RawFrame::generator;
        // Pushed but not yet running its first instruction (3.11+): CPython hides these too.
        if (interpreter_frames && !generator &&
            (frame.offset < 0 || frame.offset < entry->info.first_traceable))
            continue;
        model::Frame resolved;
        resolved.function = entry->function;
        resolved.file = entry->file;
        resolved.first_line = entry->info.first_line;
        resolved.line = options_.no_lines || entry->unreadable ? 0
                        : options_.function_lines              ? entry->info.first_line
                                                               : line_of(*entry, frame.offset);
        unreadable_ = unreadable_ || entry->unreadable;
        out.push_back(frames_.intern(resolved));
        kept_.push_back(i);
    }
    if (truncated) {
        out.push_back(truncated_marker_);
        return status;
    }
    if (resolved_.size() >= kMaxResolvedStacks) resolved_.clear();
    ResolvedStack& entry = resolved_[key];
    entry.raw.assign(raw.begin(), raw.end());
    entry.frames = out;
    entry.kept = kept_;
    entry.unreadable = unreadable_;
    return status;
}

} // namespace spyglass::sampling
