#include "spyglass/python/interpreter.hpp"

#include <algorithm>
#include <cstring>

namespace spyglass::python {

namespace {

template <class T>
T load(const std::uint8_t* at) {
    T value;
    std::memcpy(&value, at, sizeof value);
    return value;
}

std::uint32_t max_present(std::initializer_list<std::uint32_t> offsets) {
    std::uint32_t end = 0;
    for (std::uint32_t offset : offsets)
        if (offset != kAbsent) end = std::max(end, offset + 8);
    return end;
}

} // namespace

PythonProcess::PythonProcess(std::shared_ptr<process::RemoteMemory> memory, TargetInfo target)
    : memory_(std::move(memory)), target_(std::move(target)) {
    walker_ = make_stack_walker(*memory_, target_);
    const LayoutOffsets& o = target_.layout.off;
    tstate_read_size_ =
        max_present({o.tstate_next, o.tstate_interp, o.tstate_frame, o.tstate_cframe,
                     o.tstate_current_frame, o.tstate_thread_id, o.tstate_native_thread_id,
                     o.tstate_datastack_chunk, o.tstate_datastack_top, o.tstate_status});
    tstate_buffer_.resize(tstate_read_size_);
}

PythonProcess::~PythonProcess() = default;

process::ReadStatus PythonProcess::read_interpreters(std::vector<Address>& out) {
    out.clear();
    auto head = memory_->read_value<std::uint64_t>(target_.interp_head_slot);
    if (!head) return std::unexpected(head.error());
    for (Address interp = *head; interp != 0 && out.size() < kMaxInterpreters;) {
        if (std::find(out.begin(), out.end(), interp) != out.end()) break; // a cycle
        out.push_back(interp);
        auto next = memory_->read_value<std::uint64_t>(interp + target_.layout.off.interp_next);
        if (!next) return std::unexpected(next.error());
        interp = *next;
    }
    return {};
}

process::ReadStatus PythonProcess::read_threads(std::vector<ThreadRecord>& out) {
    out.clear();
    const LayoutOffsets& o = target_.layout.off;
    if (auto status = read_interpreters(interps_); !status) return status;
    std::uint8_t* buffer = tstate_buffer_.data();
    for (std::size_t index = 0; index < interps_.size(); ++index) {
        Address interp = interps_[index];
        auto head = memory_->read_value<std::uint64_t>(interp + o.interp_threads_head);
        if (!head) return std::unexpected(head.error());
        std::size_t first = out.size();
        for (Address tstate = *head; tstate != 0 && out.size() < kMaxThreads;) {
            bool seen = false;
            for (std::size_t i = first; i < out.size() && !seen; ++i)
                seen = out[i].tstate == tstate;
            if (seen) break;
            if (auto status = memory_->read(tstate, buffer, tstate_read_size_); !status)
                return status;
            if (load<std::uint64_t>(buffer + o.tstate_interp) != interp)
                return std::unexpected(ReadError{Errc::corrupt, tstate});
            ThreadRecord& record = out.emplace_back();
            record.tstate = tstate;
            record.interp = interp;
            record.interp_index = static_cast<std::uint32_t>(index);
            record.thread_id = load<std::uint64_t>(buffer + o.tstate_thread_id);
            if (o.tstate_frame != kAbsent)
                record.frame = load<std::uint64_t>(buffer + o.tstate_frame);
            if (o.tstate_current_frame != kAbsent)
                record.frame = load<std::uint64_t>(buffer + o.tstate_current_frame);
            if (o.tstate_cframe != kAbsent)
                record.cframe = load<std::uint64_t>(buffer + o.tstate_cframe);
            if (o.tstate_datastack_chunk != kAbsent) {
                record.datastack_chunk = load<std::uint64_t>(buffer + o.tstate_datastack_chunk);
                record.datastack_top = load<std::uint64_t>(buffer + o.tstate_datastack_top);
            }
            if (o.tstate_status != kAbsent && o.tstate_holds_gil_bit != kAbsent) {
                auto status_word = load<std::uint32_t>(buffer + o.tstate_status);
                record.holds_gil =
                    static_cast<std::int8_t>((status_word >> o.tstate_holds_gil_bit) & 1);
            }
            if (o.tstate_native_thread_id != kAbsent)
                record.tid =
                    static_cast<pid_t>(load<std::uint64_t>(buffer + o.tstate_native_thread_id));
            else
                record.tid = tid_for(tstate, record.thread_id);
            tstate = load<std::uint64_t>(buffer + o.tstate_next);
        }
    }
    return {};
}

pid_t PythonProcess::tid_for(Address tstate, std::uint64_t thread_id) {
    auto it = tid_cache_.find(tstate);
    if (it != tid_cache_.end() && it->second.thread_id == thread_id) return it->second.tid;
    if (target_.pthread_tid_offset < 0 || thread_id == 0) return 0;
    auto tid = memory_->read_value<std::int32_t>(thread_id + target_.pthread_tid_offset);
    if (!tid || *tid <= 0) return 0;
    if (tid_cache_.size() > 4 * kMaxThreads) tid_cache_.clear();
    tid_cache_[tstate] = {thread_id, *tid};
    return *tid;
}

std::expected<Address, ReadError> PythonProcess::gil_holder(Address interp) {
    const Layout& layout = target_.layout;
    const LayoutOffsets& o = layout.off;
    auto read_pair = [&](Address locked_at,
                         Address holder_at) -> std::expected<Address, ReadError> {
        Address low = std::min(locked_at, holder_at);
        std::uint8_t bytes[64];
        std::size_t span = std::max(locked_at, holder_at) + 8 - low;
        if (span > sizeof bytes) {
            auto locked = memory_->read_value<std::int32_t>(locked_at);
            if (!locked) return std::unexpected(locked.error());
            if (*locked != 1) return Address{0};
            auto holder = memory_->read_value<std::uint64_t>(holder_at);
            if (!holder) return std::unexpected(holder.error());
            return *holder;
        }
        if (auto status = memory_->read(low, bytes, span); !status)
            return std::unexpected(status.error());
        if (load<std::int32_t>(bytes + (locked_at - low)) != 1) return Address{0};
        return load<std::uint64_t>(bytes + (holder_at - low));
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
            if (*locked >= 0) return read_pair(target_.gil_locked, target_.gil_last_holder);
        }
        if (target_.tstate_current == 0) return Address{0};
        return memory_->read_value<std::uint64_t>(target_.tstate_current);
    }
    case GilModel::runtime_gil:
        return read_pair(target_.runtime + o.runtime_gil_locked,
                         target_.runtime + o.runtime_gil_last_holder);
    case GilModel::interpreter_gil: {
        auto it = gil_of_interp_.find(interp);
        Address gil = 0;
        if (it != gil_of_interp_.end()) {
            gil = it->second;
        } else {
            auto pointer = memory_->read_value<std::uint64_t>(interp + o.interp_ceval_gil);
            if (!pointer) return std::unexpected(pointer.error());
            gil = *pointer;
            if (gil == 0) return Address{0};
            gil_of_interp_[interp] = gil;
        }
        return read_pair(gil + o.gil_locked, gil + o.gil_last_holder);
    }
    }
    return Address{0};
}

} // namespace spyglass::python
