#include "spyglass/python/stack_walker.hpp"

#include <algorithm>
#include <cstring>
#include <limits>

#include "spyglass/python/interpreter.hpp"

namespace spyglass::python {

namespace {

template <class T>
T load(const std::uint8_t* at) {
    T value;
    std::memcpy(&value, at, sizeof value);
    return value;
}

// A set of frame addresses seen in this walk. Generation stamps make clearing free.
class VisitedSet {
  public:
    void reset() noexcept {
        if (++generation_ == 0) {
            slots_.fill({});
            generation_ = 1;
        }
    }
    // True if `address` was already inserted in this walk.
    bool insert(Address address) noexcept {
        std::size_t i = (address * 0x9E3779B97F4A7C15ull) >> (64 - kBits);
        for (;;) {
            Slot& slot = slots_[i];
            if (slot.generation != generation_) {
                slot = {address, generation_};
                return false;
            }
            if (slot.address == address) return true;
            i = (i + 1) & (kSize - 1);
        }
    }

  private:
    static constexpr unsigned kBits = 13; // 8192 slots for at most 4096 frames
    static constexpr std::size_t kSize = std::size_t{1} << kBits;
    struct Slot {
        Address address = 0;
        std::uint32_t generation = 0;
    };
    std::array<Slot, kSize> slots_{};
    std::uint32_t generation_ = 0;
};

void fail(RawStack& out, StackEnd end, ReadError error) {
    out.end = end;
    out.error = error;
}

// ---------------------------------------------------------------------------------------------
// PyFrameObject chains (2.7 - 3.10): one read per frame, of the frame's header.
class ObjectFrameWalker final : public StackWalker {
  public:
    ObjectFrameWalker(process::RemoteMemory& memory, const TargetInfo& target)
        : memory_(memory), layout_(target.layout), frame_type_(target.types.frame) {
        const LayoutOffsets& o = layout_.off;
        read_size_ = std::max({o.frame_back, o.frame_code, o.frame_lasti}) + 8;
    }

    void walk(const ThreadRecord& thread, RawStack& out) override {
        const LayoutOffsets& o = layout_.off;
        out.clear();
        out.head_slot = thread.tstate + o.tstate_frame;
        out.head = thread.frame;
        visited_.reset();
        std::uint8_t header[512];
        for (Address frame = thread.frame; frame != 0;) {
            if (out.depth == kMaxFrames)
                return fail(out, StackEnd::too_deep, {Errc::corrupt, frame});
            if (visited_.insert(frame)) return fail(out, StackEnd::cycle, {Errc::corrupt, frame});
            if (auto status = memory_.read(frame, header, read_size_); !status)
                return fail(out, StackEnd::read_failed, status.error());
            if (frame_type_ != 0 && load<std::uint64_t>(header + o.object_type) != frame_type_)
                return fail(out, StackEnd::corrupt, {Errc::corrupt, frame});
            RawFrame& raw = out.frames[out.depth++];
            raw.code = load<std::uint64_t>(header + o.frame_code);
            raw.frame = frame;
            auto lasti = load<std::int32_t>(header + o.frame_lasti);
            raw.offset = lasti < 0 ? -1 : lasti * layout_.lasti_scale;
            raw.flags = RawFrame::entry; // every frame is its own eval-loop call
            frame = load<std::uint64_t>(header + o.frame_back);
        }
    }

    void add_verification(const RawStack& stack, VerifyBatch& batch) const override {
        const LayoutOffsets& o = layout_.off;
        batch.checks.push_back({stack.head_slot, stack.head});
        // Each frame must still link to the same parent and run the same code.
        for (std::uint32_t i = 0; i < stack.depth; ++i) {
            const RawFrame& frame = stack.frames[i];
            Address parent = i + 1 < stack.depth ? stack.frames[i + 1].frame : 0;
            if (i + 1 < stack.depth || stack.end == StackEnd::complete)
                batch.checks.push_back({frame.frame + o.frame_back, parent});
            batch.checks.push_back({frame.frame + o.frame_code, frame.code});
        }
    }

  private:
    process::RemoteMemory& memory_;
    const Layout& layout_;
    Address frame_type_;
    std::size_t read_size_;
    VisitedSet visited_;
};

// ---------------------------------------------------------------------------------------------
// _PyInterpreterFrame chains (3.11+): the frames a thread owns live in its data-stack chunks,
// which are copied in one read each; generator frames live in heap objects and are read singly.
class InterpreterFrameWalker final : public StackWalker {
  public:
    InterpreterFrameWalker(process::RemoteMemory& memory, const TargetInfo& target)
        : memory_(memory), layout_(target.layout) {
        const LayoutOffsets& o = layout_.off;
        frame_read_size_ = std::max({o.iframe_code, o.iframe_previous, o.iframe_instr}) + 8;
        frame_read_size_ = std::max<std::size_t>(frame_read_size_, o.iframe_owner + 1);
        if (o.iframe_is_entry != kAbsent)
            frame_read_size_ = std::max<std::size_t>(frame_read_size_, o.iframe_is_entry + 1);
        has_cstack_owner_ = o.owner_cstack != kAbsent;
    }

    void walk(const ThreadRecord& thread, RawStack& out) override {
        const LayoutOffsets& o = layout_.off;
        out.clear();
        visited_.reset();
        chunks_.clear();
        buffer_used_ = 0;
        next_older_ = 0;

        Address frame = 0;
        if (o.tstate_current_frame != kAbsent) {
            out.head_slot = thread.tstate + o.tstate_current_frame;
            frame = thread.frame;
        } else {
            // read_threads already followed tstate->cframe->current_frame.
            out.cframe_slot = thread.tstate + o.tstate_cframe;
            out.cframe = thread.cframe;
            if (thread.cframe == 0) return;
            out.head_slot = thread.cframe + o.cframe_current_frame;
            frame = thread.frame;
        }
        out.head = frame;
        if (frame == 0) return;
        copy_current_chunk(thread);

        std::uint8_t single[256];
        while (frame != 0) {
            if (out.depth == kMaxFrames)
                return fail(out, StackEnd::too_deep, {Errc::corrupt, frame});
            if (visited_.insert(frame)) return fail(out, StackEnd::cycle, {Errc::corrupt, frame});
            const std::uint8_t* bytes = find_local(frame);
            bool in_chunk = bytes != nullptr;
            if (!in_chunk) {
                if (auto status = memory_.read(frame, single, frame_read_size_); !status)
                    return fail(out, StackEnd::read_failed, status.error());
                bytes = single;
                // A thread-owned frame outside the copied chunks is in an older chunk (a deep
                // stack); generator frames live in heap objects and are read singly.
                if (single[o.iframe_owner] == o.owner_thread && copy_older_chunk(frame)) {
                    if (const std::uint8_t* copied = find_local(frame)) {
                        bytes = copied;
                        in_chunk = true;
                    }
                }
            }
            std::uint8_t owner = bytes[o.iframe_owner];
            Address previous = load<std::uint64_t>(bytes + o.iframe_previous);
            if (owner > 4) return fail(out, StackEnd::corrupt, {Errc::corrupt, frame});
            if (has_cstack_owner_ && owner >= o.owner_cstack) {
                // A shim or C-stack entry frame (3.12+): no Python code, but it closes the run
                // of frames of one eval-loop call.
                if (out.depth > 0) out.frames[out.depth - 1].flags |= RawFrame::entry;
                frame = previous;
                continue;
            }
            // A thread-owned frame outside the thread's chunks is not one of its frames.
            if (owner == o.owner_thread && !in_chunk)
                return fail(out, StackEnd::corrupt, {Errc::corrupt, frame});
            Address code = load<std::uint64_t>(bytes + o.iframe_code) & ~layout_.code_tag_mask;
            Address instr = load<std::uint64_t>(bytes + o.iframe_instr);
            RawFrame& raw = out.frames[out.depth++];
            raw.code = code;
            raw.frame = frame;
            auto delta = static_cast<std::int64_t>(instr - (code + o.code_code_adaptive));
            raw.offset = delta < 0 ? -1
                                   : static_cast<std::int32_t>(std::min<std::int64_t>(
                                         delta / 2, std::numeric_limits<std::int32_t>::max()));
            raw.flags = owner == o.owner_generator ? RawFrame::generator : 0;
            if (o.iframe_is_entry != kAbsent && bytes[o.iframe_is_entry] != 0)
                raw.flags |= RawFrame::entry;
            frame = previous;
        }
        if (out.depth > 0) out.frames[out.depth - 1].flags |= RawFrame::entry;
    }

    void add_verification(const RawStack& stack, VerifyBatch& batch) const override {
        if (stack.cframe_slot != 0) batch.checks.push_back({stack.cframe_slot, stack.cframe});
        if (stack.head_slot != 0) batch.checks.push_back({stack.head_slot, stack.head});
    }

  private:
    struct Chunk {
        Address base;
        std::size_t length; // bytes copied from base
        std::size_t at;     // where they are in buffer_
    };
    static constexpr std::size_t kMaxChunkBytes = 64u << 20;
    static constexpr std::size_t kMaxChunks = 256;

    bool copy(Address base, std::size_t length) {
        if (length > kMaxChunkBytes || chunks_.size() == kMaxChunks) return false;
        if (buffer_.size() < buffer_used_ + length) buffer_.resize(buffer_used_ + length);
        if (!memory_.read(base, buffer_.data() + buffer_used_, length)) return false;
        chunks_.push_back({base, length, buffer_used_});
        next_older_ =
            load<std::uint64_t>(buffer_.data() + buffer_used_ + layout_.off.chunk_previous);
        buffer_used_ += length;
        return true;
    }

    void copy_current_chunk(const ThreadRecord& thread) {
        Address chunk = thread.datastack_chunk;
        Address top = thread.datastack_top;
        if (chunk == 0 || top <= chunk) return;
        copy(chunk, top - chunk);
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
            // `top` of a chunk that is not the current one counts pointer slots from data[0].
            std::uint64_t used = header[o.chunk_top / 8] * 8 + o.chunk_data;
            if (frame >= chunk + o.chunk_data && frame < chunk + size) {
                if (used > size) return false;
                return copy(chunk, used);
            }
            chunk = previous;
        }
        return false;
    }

    const std::uint8_t* find_local(Address frame) const {
        for (const Chunk& chunk : chunks_) {
            if (frame >= chunk.base + layout_.off.chunk_data &&
                frame + frame_read_size_ <= chunk.base + chunk.length)
                return buffer_.data() + chunk.at + (frame - chunk.base);
        }
        return nullptr;
    }

    process::RemoteMemory& memory_;
    const Layout& layout_;
    std::size_t frame_read_size_;
    bool has_cstack_owner_;
    Address next_older_ = 0; // the chunk before the oldest one copied so far
    VisitedSet visited_;
    std::vector<Chunk> chunks_;
    std::vector<std::uint8_t> buffer_;
    std::size_t buffer_used_ = 0;
};

} // namespace

const char* stack_end_name(StackEnd end) noexcept {
    switch (end) {
    case StackEnd::complete:
        return "complete";
    case StackEnd::read_failed:
        return "read failed";
    case StackEnd::cycle:
        return "cycle";
    case StackEnd::too_deep:
        return "too deep";
    case StackEnd::corrupt:
        return "corrupt";
    }
    return "?";
}

std::unique_ptr<StackWalker> make_stack_walker(process::RemoteMemory& memory,
                                               const TargetInfo& target) {
    if (target.layout.frame_model == FrameModel::object_frames)
        return std::make_unique<ObjectFrameWalker>(memory, target);
    return std::make_unique<InterpreterFrameWalker>(memory, target);
}

bool verification_holds(const VerifyBatch& batch) noexcept {
    if (batch.words.size() != batch.checks.size()) return false;
    for (std::size_t i = 0; i < batch.checks.size(); ++i)
        if (batch.words[i] != batch.checks[i].expected) return false;
    return true;
}

} // namespace spyglass::python
