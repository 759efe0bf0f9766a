#include "spyglass/python/interpreter.hpp"

#include <algorithm>
#include <cstring>

#include "spyglass/process/checked.hpp"
#include "spyglass/process/remote_field.hpp"
#include "spyglass/python/struct_view.hpp"

namespace spyglass::python {

namespace {

using process::checked_add;
using process::checked_load;
using process::checked_sub;

// A span of the GIL's words read in one go per pass, at most: the two words are a few bytes
// apart in every layout (at most 256 with a _Py_DebugOffsets).
constexpr std::uint64_t kMaxGilSpan = 512;

std::size_t max_present(std::initializer_list<std::uint32_t> offsets) {
    std::uint64_t end = 0;
    for (std::uint32_t offset : offsets)
        if (offset != kAbsent) end = std::max(end, std::uint64_t{offset} + 8);
    return static_cast<std::size_t>(end);
}

} // namespace

std::string thread_list_fault_text(ThreadListFault fault, std::size_t threads) {
    switch (fault) {
    case ThreadListFault::loops:
        return fmt::format("its list of thread states points back into itself after {} of them "
                           "(corrupt memory): the threads past that point cannot be read",
                           threads);
    case ThreadListFault::empty:
        return "its interpreter lists no thread states (corrupt memory, or it is shutting down)";
    case ThreadListFault::none:
        break;
    }
    return {};
}

PythonProcess::PythonProcess(std::shared_ptr<process::RemoteMemory> memory, TargetInfo target)
    : memory_(std::move(memory)), target_(std::move(target)) {
    walker_ = make_stack_walker(*memory_, target_);
    const LayoutOffsets& o = target_.layout.off;
    tstate_read_size_ =
        max_present({o.tstate_next, o.tstate_interp, o.tstate_frame, o.tstate_cframe,
                     o.tstate_current_frame, o.tstate_thread_id, o.tstate_native_thread_id,
                     o.tstate_datastack_chunk, o.tstate_datastack_top, o.tstate_status});
    tstate_buffer_.resize(tstate_read_size_);
    if (target_.nested_pid_namespace)
        namespace_tids_ = std::make_unique<process::NamespaceTids>(target_.pid);
}

PythonProcess::~PythonProcess() = default;

process::ReadStatus PythonProcess::read_interpreters(std::vector<Address>& out) {
    out.clear();
    auto head = memory_->read_value<std::uint64_t>(target_.interp_head_slot);
    if (!head) return std::unexpected(head.error());
    for (Address interp = *head; interp != 0 && out.size() < kMaxInterpreters;) {
        if (std::find(out.begin(), out.end(), interp) != out.end()) break; // a cycle
        out.push_back(interp);
        auto next =
            process::read_field<std::uint64_t>(*memory_, interp, target_.layout.off.interp_next);
        if (!next) return std::unexpected(next.error());
        interp = *next;
    }
    return {};
}

void PythonProcess::decode_tstate(StructView bytes, Address tstate, Address interp,
                                  std::uint32_t index, ThreadRecord& record) {
    const LayoutOffsets& o = target_.layout.off;
    auto u64 = [&](std::uint32_t offset) { return bytes.field_or_zero<std::uint64_t>(offset); };
    record = ThreadRecord{};
    record.tstate = tstate;
    record.interp = interp;
    record.interp_index = index;
    record.thread_id = u64(o.tstate_thread_id);
    if (o.tstate_frame != kAbsent) record.frame = u64(o.tstate_frame);
    if (o.tstate_current_frame != kAbsent) record.frame = u64(o.tstate_current_frame);
    if (o.tstate_cframe != kAbsent) record.cframe = u64(o.tstate_cframe);
    if (o.tstate_datastack_chunk != kAbsent) {
        record.datastack_chunk = u64(o.tstate_datastack_chunk);
        record.datastack_top = u64(o.tstate_datastack_top);
    }
    if (o.tstate_status != kAbsent && o.tstate_holds_gil_bit != kAbsent) {
        auto status_word = bytes.field_or_zero<std::uint32_t>(o.tstate_status);
        record.holds_gil = static_cast<std::int8_t>((status_word >> o.tstate_holds_gil_bit) & 1);
    }
    if (o.tstate_native_thread_id != kAbsent)
        record.tid = static_cast<pid_t>(u64(o.tstate_native_thread_id));
    else
        record.tid = tid_for(tstate, record.thread_id);
    if (namespace_tids_) record.tid = namespace_tids_->to_host(record.tid);
}

std::optional<PythonProcess::GilAddresses> PythonProcess::gil_words(Address locked,
                                                                    Address holder) {
    // Both words whole: the 4 bytes of `locked`, the 8 of the holder.
    if (!checked_add(locked, 4) || !checked_add(holder, 8)) return std::nullopt;
    return GilAddresses{locked, holder};
}

std::optional<PythonProcess::GilAddresses>
PythonProcess::gil_addresses(Address base, std::uint32_t locked, std::uint32_t holder) {
    auto locked_at = checked_add(base, locked);
    auto holder_at = checked_add(base, holder);
    if (!locked_at || !holder_at) return std::nullopt;
    return gil_words(*locked_at, *holder_at);
}

std::optional<PythonProcess::GilAddresses> PythonProcess::known_gil(Address interp) const {
    const LayoutOffsets& o = target_.layout.off;
    switch (target_.layout.gil_model) {
    case GilModel::runtime_gil:
        if (target_.runtime == 0) return std::nullopt;
        return gil_addresses(target_.runtime, o.runtime_gil_locked, o.runtime_gil_last_holder);
    case GilModel::interpreter_gil: {
        auto it = gil_of_interp_.find(interp);
        if (it == gil_of_interp_.end()) return std::nullopt;
        return gil_addresses(it->second, o.gil_locked, o.gil_last_holder);
    }
    case GilModel::thread_state_current:
    case GilModel::static_globals:
        break;
    }
    return std::nullopt;
}

PythonProcess::GilSpan PythonProcess::covering(const GilAddresses& at) {
    Address low = std::min(at.locked, at.holder);
    // gil_addresses made sure that neither word's end wraps.
    Address end = std::max(at.locked + 4, at.holder + 8);
    return GilSpan{low, end - low};
}

std::optional<Address> PythonProcess::holder_in(std::span<const std::uint8_t> bytes, Address at,
                                                const GilAddresses& gil) {
    auto locked_offset = checked_sub(gil.locked, at);
    auto holder_offset = checked_sub(gil.holder, at);
    if (!locked_offset || !holder_offset) return std::nullopt;
    auto locked = checked_load<std::int32_t>(bytes, *locked_offset);
    auto holder = checked_load<std::uint64_t>(bytes, *holder_offset);
    if (!locked || !holder) return std::nullopt;
    // last_holder stays set after the GIL is released: only `locked` says it is held.
    return *locked == 1 ? *holder : Address{0};
}

PythonProcess::GilSpan PythonProcess::gil_span(Address interp) {
    if (target_.layout.gil_model == GilModel::thread_state_current)
        return target_.tstate_current ? GilSpan{target_.tstate_current, 8} : GilSpan{};
    // 3.6's gil_locked / gil_last_holder are two statics, not one span: the slow path reads
    // them. A GIL whose words' addresses wrap is not read at all.
    auto at = known_gil(interp);
    if (!at) return GilSpan{};
    GilSpan span = covering(*at);
    return span.length <= kMaxGilSpan ? span : GilSpan{};
}

std::int8_t PythonProcess::decode_gil(const std::uint8_t* bytes, const GilSpan& span,
                                      Address interp, Address tstate) const {
    std::span<const std::uint8_t> read(bytes, span.length);
    if (target_.layout.gil_model == GilModel::thread_state_current) {
        auto current = checked_load<std::uint64_t>(read, 0);
        return !current ? -1 : *current == tstate ? 1 : 0;
    }
    auto at = known_gil(interp);
    if (!at) return -1;
    auto holder = holder_in(read, span.at, *at);
    if (!holder) return -1;
    return *holder == tstate ? 1 : 0;
}

process::ReadStatus PythonProcess::read_threads(std::vector<ThreadRecord>& out,
                                                const ThreadRefresh* refresh) {
    if (!cached_.interps.empty()) {
        if (read_threads_fast(out, refresh)) {
            ++fast_reads_;
            cached_.records = out;
            return {};
        }
        ++slow_reads_;
    }
    walker_->prefetch_done(false);
    auto status = read_threads_slowly(out);
    if (status)
        remember(out);
    else
        cached_ = {};
    return status;
}

process::ReadStatus PythonProcess::read_threads_settled(std::vector<ThreadRecord>& out,
                                                        int attempts) {
    process::ReadStatus status;
    for (int attempt = 0; attempt < attempts; ++attempt) {
        status = read_threads(out);
        if (status ||
            (status.error().code != Errc::bad_address && status.error().code != Errc::corrupt))
            break;
    }
    return status;
}

process::ReadStatus PythonProcess::read_threads_slowly(std::vector<ThreadRecord>& out) {
    out.clear();
    if (namespace_tids_) namespace_tids_->invalidate();
    const LayoutOffsets& o = target_.layout.off;
    list_fault_ = ThreadListFault::none;
    if (auto status = read_interpreters(interps_); !status) return status;
    std::uint8_t* buffer = tstate_buffer_.data();
    for (std::size_t index = 0; index < interps_.size(); ++index) {
        Address interp = interps_[index];
        auto head = process::read_field<std::uint64_t>(*memory_, interp, o.interp_threads_head);
        if (!head) return std::unexpected(head.error());
        std::size_t first = out.size();
        for (Address tstate = *head; tstate != 0 && out.size() < kMaxThreads;) {
            bool seen = false;
            for (std::size_t i = first; i < out.size() && !seen; ++i)
                seen = out[i].tstate == tstate;
            if (seen) {
                list_fault_ = ThreadListFault::loops;
                break;
            }
            if (auto status = memory_->read(tstate, buffer, tstate_read_size_); !status)
                return status;
            StructView tstate_view(buffer, tstate_read_size_);
            if (tstate_view.field<std::uint64_t>(o.tstate_interp) != interp)
                return std::unexpected(ReadError{Errc::corrupt, tstate});
            decode_tstate(tstate_view, tstate, interp, static_cast<std::uint32_t>(index),
                          out.emplace_back());
            tstate = tstate_view.field_or_zero<std::uint64_t>(o.tstate_next);
        }
        Address holder = 0;
        bool gil_known = false;
        for (std::size_t i = first; i < out.size(); ++i) {
            ThreadRecord& record = out[i];
            if (record.cframe != 0 && o.cframe_current_frame != kAbsent) {
                auto frame = process::read_field<std::uint64_t>(*memory_, record.cframe,
                                                                o.cframe_current_frame);
                if (!frame) return std::unexpected(frame.error());
                record.frame = *frame;
            }
            if (record.holds_gil >= 0) continue;
            if (!gil_known) {
                auto found = gil_holder(interp);
                gil_known = true;
                holder = found ? *found : 0;
                if (!found) continue;
            }
            record.holds_gil = holder == record.tstate ? 1 : 0;
        }
    }
    if (out.empty()) list_fault_ = ThreadListFault::empty;
    return {};
}

process::ReadStatus PythonProcess::reread_thread(ThreadRecord& record) {
    const LayoutOffsets& o = target_.layout.off;
    walker_->prefetch_forget(record.tstate); // its chunk was read before its state is now
    std::uint8_t* buffer = tstate_buffer_.data();
    if (auto status = memory_->read(record.tstate, buffer, tstate_read_size_); !status)
        return status;
    StructView tstate_view(buffer, tstate_read_size_);
    if (tstate_view.field<std::uint64_t>(o.tstate_interp) != record.interp)
        return std::unexpected(ReadError{Errc::corrupt, record.tstate});
    std::int8_t holds_gil = record.holds_gil;
    decode_tstate(tstate_view, record.tstate, record.interp, record.interp_index, record);
    if (record.holds_gil < 0) record.holds_gil = holds_gil;
    if (record.cframe != 0 && o.cframe_current_frame != kAbsent) {
        auto frame =
            process::read_field<std::uint64_t>(*memory_, record.cframe, o.cframe_current_frame);
        if (!frame) return std::unexpected(frame.error());
        record.frame = *frame;
    }
    return {};
}

void PythonProcess::remember(const std::vector<ThreadRecord>& records) {
    cached_ = {};
    cached_.records = records;
    cached_.interps = interps_;
    cached_.thread_counts.assign(interps_.size(), 0);
    for (const ThreadRecord& record : records) {
        ++cached_.thread_counts[record.interp_index];
        cached_.tstates.push_back(record.tstate);
        cached_.cframes.push_back(record.cframe);
    }
}

// One read_many for the head, every interpreter, every thread state, each 3.11/3.12 cframe's
// current frame and the GIL; then check that the lists still link up exactly as remembered.
bool PythonProcess::read_threads_fast(std::vector<ThreadRecord>& out,
                                      const ThreadRefresh* refresh) {
    const LayoutOffsets& o = target_.layout.off;
    Cached& c = cached_;
    const std::uint32_t interp_low = std::min(o.interp_next, o.interp_threads_head);
    const std::uint32_t interp_span =
        std::max(o.interp_next, o.interp_threads_head) + 8 - interp_low;
    const bool cframes = o.tstate_cframe != kAbsent && o.cframe_current_frame != kAbsent;

    std::vector<GilSpan>& gils = fast_gils_;
    gils.resize(c.interps.size());
    std::size_t size = 8 + c.interps.size() * interp_span + c.tstates.size() * tstate_read_size_ +
                       (cframes ? c.tstates.size() * 8 : 0);
    for (std::size_t i = 0; i < c.interps.size(); ++i) {
        gils[i] = gil_span(c.interps[i]);
        size += gils[i].length;
    }
    if (batch_bytes_.size() < size) batch_bytes_.resize(size);
    batch_.clear();
    std::uint8_t* at = batch_bytes_.data();
    auto add = [&](Address address, std::size_t length) {
        batch_.push_back({address, at, length});
        std::uint8_t* start = at;
        at += length;
        return start;
    };
    const std::uint8_t* head = add(target_.interp_head_slot, 8);
    auto& [interp_bytes, gil_bytes, tstate_bytes, cframe_bytes] = fast_bytes_;
    interp_bytes.clear();
    gil_bytes.clear();
    tstate_bytes.clear();
    cframe_bytes.clear();
    for (std::size_t i = 0; i < c.interps.size(); ++i) {
        auto span_at = process::field_address(c.interps[i], interp_low, interp_span);
        if (!span_at) return false; // the walk of the lists says why
        interp_bytes.push_back(add(*span_at, interp_span));
        gil_bytes.push_back(gils[i].length ? add(gils[i].at, gils[i].length) : nullptr);
    }
    read_tstates_.clear();
    for (std::size_t i = 0; i < c.tstates.size(); ++i) {
        if (refresh != nullptr && i < c.records.size() && c.records[i].tid != 0 &&
            !refresh->stale(c.records[i].tid)) {
            tstate_bytes.push_back(nullptr); // kept from the previous read
            cframe_bytes.push_back(nullptr);
            continue;
        }
        tstate_bytes.push_back(add(c.tstates[i], tstate_read_size_));
        read_tstates_.push_back(c.tstates[i]);
        auto cframe_at = cframes && c.cframes[i] != 0
                             ? process::field_address(c.cframes[i], o.cframe_current_frame, 8)
                             : std::nullopt;
        cframe_bytes.push_back(cframe_at ? add(*cframe_at, 8) : nullptr);
    }
    const std::size_t own_reads = batch_.size();
    walker_->add_prefetch(read_tstates_, batch_);
    if (!memory_->read_many(batch_)) {
        // A prefetched chunk that is gone (its thread exited) must not cost the thread list.
        walker_->prefetch_done(false);
        if (batch_.size() == own_reads) return false;
        batch_.resize(own_reads);
        if (!memory_->read_many(batch_)) return false;
    } else {
        walker_->prefetch_done(true);
    }

    // The shape must be exactly the remembered one.
    if (StructView(head, 8).field<std::uint64_t>(0) != c.interps.front()) return false;
    std::size_t t = 0;
    out.clear();
    for (std::size_t i = 0; i < c.interps.size(); ++i) {
        StructView interp(interp_bytes[i], interp_span, interp_low);
        auto next = interp.field<std::uint64_t>(o.interp_next);
        if (next != (i + 1 < c.interps.size() ? c.interps[i + 1] : 0)) return false;
        Address expected = c.thread_counts[i] ? c.tstates[t] : 0;
        if (interp.field<std::uint64_t>(o.interp_threads_head) != expected) return false;
        for (std::uint32_t k = 0; k < c.thread_counts[i]; ++k, ++t) {
            if (tstate_bytes[t] == nullptr) {
                ThreadRecord& kept = out.emplace_back(c.records[t]);
                if (gil_bytes[i] != nullptr && o.tstate_holds_gil_bit == kAbsent)
                    kept.holds_gil = decode_gil(gil_bytes[i], gils[i], c.interps[i], kept.tstate);
                continue;
            }
            Address following = k + 1 < c.thread_counts[i] ? c.tstates[t + 1] : 0;
            StructView bytes(tstate_bytes[t], tstate_read_size_);
            if (bytes.field<std::uint64_t>(o.tstate_next) != following ||
                bytes.field<std::uint64_t>(o.tstate_interp) != c.interps[i])
                return false;
            ThreadRecord& record = out.emplace_back();
            decode_tstate(bytes, c.tstates[t], c.interps[i], static_cast<std::uint32_t>(i), record);
            if (cframes && record.cframe != 0) {
                if (record.cframe == c.cframes[t] && cframe_bytes[t] != nullptr) {
                    record.frame = StructView(cframe_bytes[t], 8).field_or_zero<std::uint64_t>(0);
                } else {
                    // A new eval loop on the C stack (3.12: a generator sent to from C) has
                    // its own cframe: read where it points, and batch it from now on.
                    auto frame = process::read_field<std::uint64_t>(*memory_, record.cframe,
                                                                    o.cframe_current_frame);
                    if (!frame) return false;
                    record.frame = *frame;
                    cached_.cframes[t] = record.cframe;
                }
            }
            if (record.holds_gil < 0 && gil_bytes[i] != nullptr)
                record.holds_gil = decode_gil(gil_bytes[i], gils[i], c.interps[i], record.tstate);
        }
    }
    // 3.6's GIL statics are not in the batch.
    if (target_.layout.gil_model == GilModel::static_globals) {
        for (std::size_t i = 0, first = 0; i < c.interps.size(); first += c.thread_counts[i], ++i) {
            auto holder = gil_holder(c.interps[i]);
            for (std::size_t k = first; k < first + c.thread_counts[i]; ++k)
                out[k].holds_gil = holder ? (*holder == out[k].tstate ? 1 : 0) : -1;
        }
    }
    return true;
}

pid_t PythonProcess::tid_for(Address tstate, std::uint64_t thread_id) {
    auto it = tid_cache_.find(tstate);
    if (it != tid_cache_.end() && it->second.thread_id == thread_id) return it->second.tid;
    if (target_.pthread_tid_offset < 0 || thread_id == 0) return 0;
    auto tid = process::read_field<std::int32_t>(
        *memory_, thread_id, static_cast<std::uint64_t>(target_.pthread_tid_offset));
    if (!tid || *tid <= 0) return 0;
    if (tid_cache_.size() > 4 * kMaxThreads) tid_cache_.clear();
    tid_cache_[tstate] = {thread_id, *tid};
    return *tid;
}

std::expected<Address, ReadError> PythonProcess::gil_holder(Address interp) {
    const Layout& layout = target_.layout;
    const LayoutOffsets& o = layout.off;
    // Both words in one read when they are close; a pair whose addresses wrap is no GIL.
    auto read_pair = [&](std::optional<GilAddresses> at) -> std::expected<Address, ReadError> {
        if (!at) return std::unexpected(ReadError{Errc::corrupt, 0});
        GilSpan span = covering(*at);
        std::uint8_t bytes[64];
        if (span.length > sizeof bytes) {
            auto locked = memory_->read_value<std::int32_t>(at->locked);
            if (!locked) return std::unexpected(locked.error());
            if (*locked != 1) return Address{0};
            auto holder = memory_->read_value<std::uint64_t>(at->holder);
            if (!holder) return std::unexpected(holder.error());
            return *holder;
        }
        if (auto status = memory_->read(span.at, bytes, span.length); !status)
            return std::unexpected(status.error());
        auto holder = holder_in(std::span<const std::uint8_t>(bytes, span.length), span.at, *at);
        if (!holder) return std::unexpected(ReadError{Errc::corrupt, span.at});
        return *holder;
    };

    switch (layout.gil_model) {
    case GilModel::thread_state_current:
        if (target_.tstate_current == 0) return Address{0};
        return memory_->read_value<std::uint64_t>(target_.tstate_current);
    case GilModel::static_globals: {
        if (target_.gil_locked != 0 && target_.gil_last_holder != 0) {
            auto locked = memory_->read_value<std::int32_t>(target_.gil_locked);
            if (!locked) return std::unexpected(locked.error());
            // -1: the GIL was never created (one thread); then the current tstate says it.
            if (*locked >= 0)
                return read_pair(gil_words(target_.gil_locked, target_.gil_last_holder));
        }
        if (target_.tstate_current == 0) return Address{0};
        return memory_->read_value<std::uint64_t>(target_.tstate_current);
    }
    case GilModel::runtime_gil:
        if (target_.runtime == 0) return std::unexpected(ReadError{Errc::not_found, 0});
        return read_pair(
            gil_addresses(target_.runtime, o.runtime_gil_locked, o.runtime_gil_last_holder));
    case GilModel::interpreter_gil: {
        auto it = gil_of_interp_.find(interp);
        Address gil = 0;
        if (it != gil_of_interp_.end()) {
            gil = it->second;
        } else {
            auto pointer = process::read_field<std::uint64_t>(*memory_, interp, o.interp_ceval_gil);
            if (!pointer) return std::unexpected(pointer.error());
            gil = *pointer;
            if (gil == 0) return Address{0};
            // A pointer from the target: only one whose words can be read is kept.
            if (!gil_addresses(gil, o.gil_locked, o.gil_last_holder))
                return std::unexpected(ReadError{Errc::corrupt, gil});
            gil_of_interp_[interp] = gil;
        }
        return read_pair(gil_addresses(gil, o.gil_locked, o.gil_last_holder));
    }
    }
    return Address{0};
}

} // namespace spyglass::python
