// The walker of _PyInterpreterFrame chains (3.11+).
#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <unordered_map>

#include "chunk_prefetch.hpp"
#include "walker_internal.hpp"

#include "spyglass/process/checked.hpp"
#include "spyglass/process/remote_field.hpp"
#include "spyglass/python/debug_offsets.hpp"
#include "spyglass/python/interpreter.hpp"
#include "spyglass/python/stack_walker.hpp"

namespace spyglass::python::walker_detail {

namespace {

// ---------------------------------------------------------------------------------------------
// _PyInterpreterFrame chains (3.11+): the frames a thread owns live in its data-stack chunks,
// which are copied in one read each; generator frames live in heap objects and are read singly.
class InterpreterFrameWalker final : public StackWalker {
  public:
    InterpreterFrameWalker(process::RemoteMemory& memory, const TargetInfo& target)
        : memory_(memory), layout_(target.layout) {
        // A layout whose header does not fit is refused at attach; here it only reads nothing.
        frame_read_size_ = frame_header_size(layout_).value_or(0);
        if (frame_read_size_ > kMaxFrameHeaderBytes) frame_read_size_ = 0;
        single_.resize(frame_read_size_);
        has_cstack_owner_ = layout_.off.owner_cstack != kAbsent;
    }

    void walk(const ThreadRecord& thread, RawStack& out) override {
        const LayoutOffsets& o = layout_.off;
        out.clear();
        visited_.reset();
        chunks_.clear();
        buffer_used_ = 0;
        next_older_ = 0;

        // The innermost frame: tstate->current_frame, or (3.11/3.12) cframe->current_frame,
        // read again in the same call as the chunk: the frame the thread is in as the chunk is
        // copied, not the one it was in when the thread list was read.
        out.head_slot = thread.cframe != 0 && o.cframe_current_frame != kAbsent
                            ? field_address(thread.cframe, o.cframe_current_frame, 8).value_or(0)
                        : o.tstate_current_frame != kAbsent
                            ? field_address(thread.tstate, o.tstate_current_frame, 8).value_or(0)
                            : 0;
        out.head = thread.frame;
        // 3.11 / 3.12: a new eval loop publishes its cframe (tstate->cframe) before it sets
        // the cframe's current frame; only the outermost cframe may have none.
        const bool via_cframe = thread.cframe != 0 && o.cframe_current_frame != kAbsent;
        if (thread.frame == 0 && !via_cframe) return;
        if (frame_read_size_ == 0)
            return fail(out, StackEnd::corrupt, {Errc::unsupported, thread.frame});
        std::vector<Address>& outside = outside_frames(thread.tstate);
        speculated_.assign(outside.begin(), outside.end());
        Address outer_cframe = 0;
        if (!via_cframe && take_prefetched(thread)) {
            // Read with the thread state, after it: thread.frame is the head as read with it.
        } else if (auto fresh = copy_current_chunk(
                       thread, out.head_slot,
                       via_cframe && o.cframe_previous != kAbsent
                           ? field_address(thread.cframe, o.cframe_previous, 8).value_or(0)
                           : 0,
                       outer_cframe)) {
            out.head = *fresh;
        }
        Address frame = out.head;
        outside_frames_ -= outside.size();
        outside.clear(); // refilled with the frames this walk meets outside the chunks
        if (frame == 0 && outer_cframe != 0)
            return fail(out, StackEnd::inconsistent, {Errc::corrupt, thread.cframe});
        if (frame == 0) return;

        std::uint8_t* single = single_.data();
        bool entry_seen = false;
        while (frame != 0) {
            if (out.link_count == kMaxFrames)
                return fail(out, StackEnd::too_deep, {Errc::corrupt, frame});
            if (visited_.insert(frame)) return fail(out, StackEnd::cycle, {Errc::corrupt, frame});
            std::span<const std::uint8_t> local = local_span(frame);
            const std::uint8_t* bytes = local.data();
            bool in_chunk = bytes != nullptr;
            if (!in_chunk) {
                if (const std::uint8_t* known = speculated_outside(frame)) {
                    std::memcpy(single, known, frame_read_size_);
                } else if (auto status = memory_.read(frame, single, frame_read_size_); !status) {
                    return fail(out, StackEnd::read_failed, status.error());
                }
                outside.push_back(frame);
                ++outside_frames_;
                bytes = single;
                // A thread-owned frame outside the copied part of the chunks was pushed after
                // datastack_top was read (it is above it, in the current chunk), or is in an
                // older chunk (a deep stack). Generator frames live in heap objects.
                if (StructView(single, frame_read_size_).field<std::uint8_t>(o.iframe_owner) ==
                    o.owner_thread) {
                    auto data = checked_add(current_chunk_, o.chunk_data);
                    if (current_chunk_ != 0 && data && current_chunk_size_ > o.chunk_data &&
                        range_within(frame, frame_read_size_, *data,
                                     current_chunk_size_ - o.chunk_data)) {
                        in_chunk = true;
                    } else if (copy_older_chunk(frame)) {
                        local = local_span(frame);
                        if (local.data() != nullptr) {
                            bytes = local.data();
                            in_chunk = true;
                        }
                    }
                }
            }
            StructView header(bytes, frame_read_size_);
            auto owner_field = header.field<std::uint8_t>(o.iframe_owner);
            auto previous_field = header.field<std::uint64_t>(o.iframe_previous);
            auto code_field = header.field<std::uint64_t>(o.iframe_code);
            auto instr_field = header.field<std::uint64_t>(o.iframe_instr);
            if (!owner_field || !previous_field || !code_field || !instr_field || *owner_field > 4)
                return fail(out, StackEnd::corrupt, {Errc::corrupt, frame});
            std::uint8_t owner = *owner_field;
            Address previous = *previous_field;
            Address code_word = *code_field;
            out.links[out.link_count++] = {frame, previous, code_word};
            if (has_cstack_owner_ && owner >= o.owner_cstack) {
                // A shim or C-stack entry frame (3.12+): no Python code, but it closes the run
                // of frames of one eval-loop call, and it is a local of that call (its anchor).
                if (out.depth > 0 && !(out.frames[out.depth - 1].flags & RawFrame::entry)) {
                    out.frames[out.depth - 1].flags |= RawFrame::entry;
                    out.frames[out.depth - 1].anchor = frame;
                }
                frame = previous;
                continue;
            }
            // A thread-owned frame outside the thread's chunks is not one of its frames.
            if (owner == o.owner_thread && !in_chunk)
                return fail(out, StackEnd::corrupt, {Errc::corrupt, frame});
            Address code = code_word & ~layout_.code_tag_mask;
            Address instr = *instr_field;
            RawFrame& raw = out.frames[out.depth++];
            raw.code = code;
            raw.frame = frame;
            // Code units from the first instruction; before it (or from a code address whose
            // sum wraps): not started.
            auto into = checked_add(code, o.code_code_adaptive).and_then([&](Address first) {
                return checked_sub(instr, first);
            });
            raw.offset = !into ? -1
                               : static_cast<std::int32_t>(std::min<std::uint64_t>(
                                     *into / 2, std::numeric_limits<std::int32_t>::max()));
            raw.flags = owner == o.owner_generator ? RawFrame::generator : 0;
            raw.anchor = 0;
            hash_arguments(local, raw);
            if (o.iframe_is_entry != kAbsent &&
                header.field_or_zero<std::uint8_t>(o.iframe_is_entry) != 0) {
                // 3.11: the innermost run is the eval call of the thread's _PyCFrame.
                if (via_cframe && !has_cstack_owner_ && !entry_seen) raw.anchor = thread.cframe;
                entry_seen = true;
                raw.flags |= RawFrame::entry;
            }
            frame = previous;
        }
        if (out.depth > 0) out.frames[out.depth - 1].flags |= RawFrame::entry;
    }

    // The part of each copied chunk that holds walked frames, in one region per chunk, and each
    // heap (generator) frame on its own.
    void add_verification(const RawStack& stack, VerifyBatch& batch) const override {
        link_region_.assign(stack.link_count, -1);
        chunk_span_.assign(chunks_.size(), {~Address{0}, 0});
        for (std::uint32_t i = 0; i < stack.link_count; ++i) {
            Address frame = stack.links[i].frame;
            int chunk = chunk_of(frame);
            if (chunk < 0) continue;
            auto& [low, high] = chunk_span_[static_cast<std::size_t>(chunk)];
            low = std::min(low, frame);
            high = std::max(high, frame + frame_read_size_); // holds() checked: no wrap
        }
        std::vector<int>& chunk_region = chunk_region_;
        chunk_region.assign(chunks_.size(), -1);
        for (std::size_t c = 0; c < chunks_.size(); ++c) {
            auto [low, high] = chunk_span_[c];
            if (high == 0) continue;
            chunk_region[c] = static_cast<int>(batch.regions.size());
            batch.add(low, static_cast<std::uint32_t>(high - low));
        }
        for (std::uint32_t i = 0; i < stack.link_count; ++i) {
            int chunk = chunk_of(stack.links[i].frame);
            if (chunk >= 0) {
                link_region_[i] = chunk_region[static_cast<std::size_t>(chunk)];
            } else {
                link_region_[i] = static_cast<int>(batch.regions.size());
                batch.add(stack.links[i].frame, static_cast<std::uint32_t>(frame_read_size_));
            }
        }
    }

    void add_prefetch(std::span<const Address> tstates,
                      std::vector<process::ReadOp>& ops) override {
        prefetch_.add(
            tstates, ops, frame_read_size_,
            [&](Address tstate) -> const std::vector<Address>& { return outside_frames(tstate); });
    }

    void prefetch_done(bool read) override { prefetch_.done(read); }
    void prefetch_forget(Address tstate) override { prefetch_.forget(tstate); }

    bool verify(const RawStack& stack, const VerifyBatch& batch) const override {
        const LayoutOffsets& o = layout_.off;
        if (link_region_.size() != stack.link_count) return false;
        for (std::uint32_t i = 0; i < stack.link_count; ++i) {
            StructView bytes = region_view_at(batch, static_cast<std::size_t>(link_region_[i]),
                                              stack.links[i].frame);
            if (bytes.field<std::uint64_t>(o.iframe_previous) != stack.links[i].previous ||
                bytes.field<std::uint64_t>(o.iframe_code) != stack.links[i].code)
                return false;
        }
        return true;
    }

  private:
    struct Chunk {
        Address base;
        std::size_t length; // bytes copied from base
        std::size_t at;     // where they are in buffer_
    };
    static constexpr std::size_t kMaxChunkBytes = 64u << 20;
    static constexpr std::size_t kChunkSlack = 2048; // room for frames pushed meanwhile
    static constexpr std::size_t kMaxChunks = 256;

    // Copies `length` bytes of a chunk; the copies of one walk take kMaxChunkBytes in all.
    bool copy(Address base, std::size_t length) {
        if (length > kMaxChunkBytes - std::min(buffer_used_, kMaxChunkBytes) ||
            chunks_.size() == kMaxChunks)
            return false;
        if (buffer_.size() < buffer_used_ + length) buffer_.resize(buffer_used_ + length);
        if (!memory_.read(base, buffer_.data() + buffer_used_, length)) return false;
        chunks_.push_back({base, length, buffer_used_});
        next_older_ = StructView(buffer_.data() + buffer_used_, length)
                          .field_or_zero<std::uint64_t>(layout_.off.chunk_previous);
        buffer_used_ += length;
        return true;
    }

    // Frames of the last walk of a thread that were outside its chunks: the C-stack entry frames
    // of 3.12+ and generator frames. They are read again with the chunk, in the same call.
    std::vector<Address>& outside_frames(Address tstate) {
        if (outside_.size() > kMaxRememberedThreads || outside_frames_ > kMaxRememberedFrames) {
            outside_.clear();
            outside_frames_ = 0;
        }
        return outside_[tstate];
    }

    const std::uint8_t* speculated_outside(Address frame) const {
        if (!speculated_read_) return nullptr;
        for (std::size_t i = 0; i < speculated_.size(); ++i)
            if (speculated_[i] == frame) return speculated_bytes_.data() + i * frame_read_size_;
        return nullptr;
    }

    // The head pointer, the used part of the current chunk (and a little more, for frames
    // pushed since the thread list was read), and the frames of the previous walk that were
    // outside the chunks, in one call. Returns the head as read with the chunk.
    std::optional<Address> copy_current_chunk(const ThreadRecord& thread, Address head_slot,
                                              Address outer_cframe_slot, Address& outer_cframe) {
        outer_cframe = 0;
        Address chunk = thread.datastack_chunk;
        Address top = thread.datastack_top;
        current_chunk_ = current_chunk_size_ = 0;
        speculated_read_ = false;
        // A chunk too short for its own header is not one (a torn or foreign read).
        if (chunk == 0 || top < chunk || top - chunk < layout_.off.chunk_data ||
            top - chunk > kMaxChunkBytes)
            return std::nullopt;
        std::size_t length = top - chunk;
        if (auto known = chunk_sizes_.find(chunk);
            known != chunk_sizes_.end() && known->second > length)
            length += std::min<std::size_t>(kChunkSlack, known->second - length);
        if (buffer_.size() < length) buffer_.resize(length);
        speculated_bytes_.resize(speculated_.size() * frame_read_size_);
        Address head = 0;
        ops_.clear();
        if (head_slot != 0) ops_.push_back({head_slot, &head, sizeof head});
        if (outer_cframe_slot != 0)
            ops_.push_back({outer_cframe_slot, &outer_cframe, sizeof outer_cframe});
        ops_.push_back({chunk, buffer_.data(), length});
        for (std::size_t i = 0; i < speculated_.size(); ++i)
            ops_.push_back({speculated_[i], speculated_bytes_.data() + i * frame_read_size_,
                            frame_read_size_});
        bool have_head = false;
        const std::size_t head_ops =
            (head_slot != 0 ? 1u : 0u) + (outer_cframe_slot != 0 ? 1u : 0u) + 1u;
        if (memory_.read_many(ops_)) {
            speculated_read_ = true;
            have_head = head_slot != 0;
        } else if (memory_.read_many(std::span(ops_).first(head_ops))) {
            have_head = head_slot != 0;
        } else {
            outer_cframe = 0;
            length = top - chunk;
            if (!memory_.read(chunk, buffer_.data(), length)) return std::nullopt;
        }
        adopt_current_chunk(thread, chunk, length);
        if (!have_head) return std::nullopt;
        return head;
    }

    // The current chunk as copied into buffer_ (from 0): the first of the walk's chunks.
    void adopt_current_chunk(const ThreadRecord& thread, Address chunk, std::size_t length) {
        chunks_.push_back({chunk, length, 0});
        StructView chunk_header(buffer_.data(), length);
        next_older_ = chunk_header.field_or_zero<std::uint64_t>(layout_.off.chunk_previous);
        buffer_used_ = length;
        current_chunk_ = chunk;
        current_chunk_size_ = chunk_header.field_or_zero<std::uint64_t>(layout_.off.chunk_size);
        if (current_chunk_size_ < length || current_chunk_size_ > kMaxChunkBytes)
            current_chunk_size_ = length;
        if (chunk_sizes_.size() > kMaxRememberedThreads) chunk_sizes_.clear();
        chunk_sizes_[chunk] = current_chunk_size_;
        // 3.11/3.12 re-read the head through the cframe with the chunk: not prefetched.
        if (thread.cframe == 0) prefetch_.walked(thread.tstate, chunk, length);
    }

    // The current chunk and the outside frames as read with the thread state, if they cover
    // what the state now says is in use.
    bool take_prefetched(const ThreadRecord& thread) {
        const Address chunk = thread.datastack_chunk;
        const Address top = thread.datastack_top;
        current_chunk_ = current_chunk_size_ = 0;
        speculated_read_ = false;
        if (chunk == 0 || top < chunk || top - chunk < layout_.off.chunk_data ||
            top - chunk > kMaxChunkBytes)
            return false;
        ChunkPrefetch::Slot* slot = prefetch_.take(thread.tstate, chunk, top - chunk);
        if (slot == nullptr) return false;
        std::swap(buffer_, slot->chunk_bytes);
        speculated_.swap(slot->outside);
        std::swap(speculated_bytes_, slot->outside_bytes);
        speculated_read_ = true;
        adopt_current_chunk(thread, chunk, slot->length);
        return true;
    }

    // Older chunks hold the outer frames of a deep stack; copy the one holding `frame`.
    bool copy_older_chunk(Address frame) {
        const LayoutOffsets& o = layout_.off;
        Address chunk = next_older_;
        for (std::size_t hops = 0; chunk != 0 && hops < kMaxChunks; ++hops) {
            std::uint64_t header[3];
            if (!memory_.read(chunk, header, sizeof header)) return false;
            Address previous = header[o.chunk_previous / 8];
            std::uint64_t size = header[o.chunk_size / 8];
            if (size > kMaxChunkBytes || size <= o.chunk_data) return false;
            auto data = checked_add(chunk, o.chunk_data);
            if (data && range_within(frame, 1, *data, size - o.chunk_data)) {
                // `top` of a chunk that is not the current one counts pointer slots from
                // data[0].
                std::uint64_t slots = header[o.chunk_top / 8];
                if (slots > (size - o.chunk_data) / 8) return false;
                return copy(chunk, slots * 8 + o.chunk_data);
            }
            chunk = previous;
        }
        return false;
    }

    // Whether a whole frame header at `frame` lies in the copied part of `chunk`, past its
    // header. `frame` comes from the target: no sum here may wrap.
    bool holds(const Chunk& chunk, Address frame) const noexcept {
        std::uint64_t data = layout_.off.chunk_data;
        auto start = process::checked_add(chunk.base, data);
        return start && chunk.length > data &&
               range_within(frame, frame_read_size_, *start, chunk.length - data);
    }

    int chunk_of(Address frame) const {
        for (std::size_t c = 0; c < chunks_.size(); ++c)
            if (holds(chunks_[c], frame)) return static_cast<int>(c);
        return -1;
    }

    // The copied bytes from `frame` to the end of its chunk's copy; empty when no chunk holds
    // it.
    std::span<const std::uint8_t> local_span(Address frame) const {
        for (const Chunk& chunk : chunks_)
            if (holds(chunk, frame))
                return {buffer_.data() + chunk.at + (frame - chunk.base),
                        chunk.length - (frame - chunk.base)};
        return {};
    }

    const std::uint8_t* find_local(Address frame) const { return local_span(frame).data(); }

    // A byte of a hash of each of the first three local slots, where the frame's arguments
    // are, when the copy holds them: what tells one call from the next at the same address.
    void hash_arguments(std::span<const std::uint8_t> local, RawFrame& raw) const {
        if (layout_.off.iframe_localsplus == kAbsent) return;
        StructView view(local.data(), local.size());
        for (std::uint64_t slot = 0; slot < 3; ++slot) {
            auto word =
                view.field<std::uint64_t>(std::uint64_t{layout_.off.iframe_localsplus} + 8 * slot);
            if (!word) return;
            raw.arg_hash[slot] = static_cast<std::uint8_t>((*word * 0x9E3779B97F4A7C15ull) >> 56);
        }
        raw.flags |= RawFrame::args;
    }

    process::RemoteMemory& memory_;
    const Layout& layout_;
    std::size_t frame_read_size_;
    std::vector<std::uint8_t> single_; // one frame header read on its own
    bool has_cstack_owner_;
    Address next_older_ = 0;    // the chunk before the oldest one copied so far
    Address current_chunk_ = 0; // tstate->datastack_chunk, when copied
    std::unordered_map<Address, std::uint64_t> chunk_sizes_;    // from their headers
    std::unordered_map<Address, std::vector<Address>> outside_; // per thread state
    std::size_t outside_frames_ = 0;                            // in outside_, in all
    std::vector<Address> speculated_; // outside frames of the previous walk
    std::vector<std::uint8_t> speculated_bytes_;
    bool speculated_read_ = false;
    std::vector<process::ReadOp> ops_;
    std::uint64_t current_chunk_size_ = 0; // its size, from its header
    mutable std::vector<int> link_region_; // per link of the last walk
    mutable std::vector<int> chunk_region_;
    mutable std::vector<std::pair<Address, Address>> chunk_span_; // walked part of each chunk
    VisitedSet visited_;
    ChunkPrefetch prefetch_;
    std::vector<Chunk> chunks_;
    std::vector<std::uint8_t> buffer_;
    std::size_t buffer_used_ = 0;
};

} // namespace

std::unique_ptr<StackWalker> make_interpreter_frame_walker(process::RemoteMemory& memory,
                                                           const TargetInfo& target) {
    return std::make_unique<InterpreterFrameWalker>(memory, target);
}

} // namespace spyglass::python::walker_detail
