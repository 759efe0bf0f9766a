// The walker of PyFrameObject chains (2.7 - 3.10).
#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <unordered_map>

#include "walker_internal.hpp"

#include "spyglass/process/checked.hpp"
#include "spyglass/process/remote_field.hpp"
#include "spyglass/python/debug_offsets.hpp"
#include "spyglass/python/interpreter.hpp"
#include "spyglass/python/stack_walker.hpp"
#include "spyglass/python/struct_view.hpp"

namespace spyglass::python::walker_detail {

namespace {

// ---------------------------------------------------------------------------------------------
// PyFrameObject chains (2.7 - 3.10): one read per frame, of the frame's header.
class ObjectFrameWalker final : public StackWalker {
  public:
    ObjectFrameWalker(process::RemoteMemory& memory, const TargetInfo& target)
        : memory_(memory), layout_(target.layout), frame_type_(target.types.frame) {
        const LayoutOffsets& o = layout_.off;
        // A layout whose header does not fit is refused at attach; here it only reads nothing.
        read_size_ = frame_header_size(layout_).value_or(0);
        if (read_size_ > kMaxFrameObjectHeaderBytes) read_size_ = 0;
        single_.resize(read_size_);
        // ob_refcnt (just before ob_type), f_back and f_code: what the check after the walk
        // reads again of each frame.
        refcnt_ = o.object_type >= 8 ? o.object_type - 8 : 0;
        link_low_ = std::min({refcnt_, o.frame_back, o.frame_code});
        link_span_ = std::max(o.frame_back, o.frame_code) + 8 - link_low_;
    }

    void walk(const ThreadRecord& thread, RawStack& out) override {
        const LayoutOffsets& o = layout_.off;
        out.clear();
        visited_.reset();
        out.tstate = thread.tstate;
        out.head_slot = field_address(thread.tstate, o.tstate_frame, 8).value_or(0);
        out.head = thread.frame;
        if (read_size_ == 0 && thread.frame != 0)
            return fail(out, StackEnd::corrupt, {Errc::unsupported, thread.frame});
        std::vector<Address>& previous_chain = remembered(thread.tstate);
        // The head pointer is read again with the previous walk's frames: the walk starts
        // where the thread is as they are copied, and the check after it has a short window.
        bool speculated = speculate(previous_chain, out.head_slot, out.head);
        std::size_t expected = 0; // where the next frame should be in previous_chain
        std::uint8_t* single = single_.data();
        for (Address frame = out.head; frame != 0;) {
            if (out.depth == kMaxFrames) {
                // Cut at the limit, as it will be next time: remember the frames read.
                fail(out, StackEnd::too_deep, {Errc::corrupt, frame});
                break;
            }
            if (visited_.insert(frame)) return fail(out, StackEnd::cycle, {Errc::corrupt, frame});
            const std::uint8_t* copied =
                speculated ? speculative_header(previous_chain, frame, expected) : nullptr;
            if (copied == nullptr) {
                if (auto status = memory_.read(frame, single, read_size_); !status)
                    return fail(out, StackEnd::read_failed, status.error());
                copied = single;
            }
            StructView header(copied, read_size_);
            auto type = header.field<std::uint64_t>(o.object_type);
            auto code = header.field<std::uint64_t>(o.frame_code);
            auto lasti = header.field<std::int32_t>(o.frame_lasti);
            auto back = header.field<std::uint64_t>(o.frame_back);
            if (!code || !lasti || !back || (frame_type_ != 0 && type != frame_type_))
                return fail(out, StackEnd::corrupt, {Errc::corrupt, frame});
            RawFrame& raw = out.frames[out.depth++];
            raw.code = *code;
            raw.frame = frame;
            raw.offset = *lasti < 0 ? -1
                                    : static_cast<std::int32_t>(std::min<std::int64_t>(
                                          std::int64_t{*lasti} * layout_.lasti_scale,
                                          std::numeric_limits<std::int32_t>::max()));
            raw.flags = RawFrame::entry; // every frame is its own eval-loop call
            raw.anchor = 0;              // which one: not known from memory (names tell)
            out.links[out.link_count++] = {frame, *back, raw.code};
            frame = *back;
        }
        remembered_frames_ -= previous_chain.size();
        previous_chain.clear();
        for (std::uint32_t i = 0; i < out.link_count; ++i)
            previous_chain.push_back(out.links[i].frame);
        remembered_frames_ += previous_chain.size();
    }

    // The thread's head pointer, then each frame object again: same parent, same code, and
    // whether it is still alive.
    void add_verification(const RawStack& stack, VerifyBatch& batch) const override {
        batch.add(stack.head_slot, 8);
        // The walk read read_size_ bytes at each frame, which hold these: no sum wraps.
        for (std::uint32_t i = 0; i < stack.link_count; ++i)
            batch.add(stack.links[i].frame + link_low_, link_span_);
    }

    // The chain stands if no link changed and every frame from where the thread is now down
    // to the bottom is alive: a frame that has returned has no references left (and on the
    // free list its f_back links free frames: a chain through it is no stack at all). The
    // frames above where the thread is now were its stack when the walk began (the head was
    // read with them). A thread now in a frame the walk did not see (it called deeper) needs
    // every frame alive and the chain to end at the thread's known bottom frame: a frame
    // being set up is alive before it has its caller, and a chain from it ends nowhere.
    bool verify(const RawStack& stack, const VerifyBatch& batch) const override {
        const LayoutOffsets& o = layout_.off;
        if (batch.regions.size() < stack.link_count + 1) return false;
        auto read_head = region_view(batch, 0, 0).field<std::uint64_t>(0);
        if (!read_head) return false;
        Address head = *read_head;
        std::uint32_t live_from = stack.link_count;
        for (std::uint32_t i = 0; i < stack.link_count && live_from == stack.link_count; ++i)
            if (stack.links[i].frame == head) live_from = i;
        if (live_from == stack.link_count) {
            if (stack.link_count == 0) return head == 0;
            auto root = roots_.find(stack.tstate);
            if (root == roots_.end() || root->second != stack.links[stack.link_count - 1].frame)
                return false;
            live_from = 0;
        }
        for (std::uint32_t i = 0; i < stack.link_count; ++i) {
            StructView bytes = region_view(batch, i + 1, link_low_);
            if (bytes.field<std::uint64_t>(o.frame_back) != stack.links[i].previous ||
                bytes.field<std::uint64_t>(o.frame_code) != stack.links[i].code)
                return false;
            auto refcnt = bytes.field<std::int64_t>(refcnt_);
            if (i >= live_from && (!refcnt || *refcnt <= 0)) return false;
        }
        // Still where it started: the bottom of this chain is the thread's bottom frame.
        if (head == stack.head && stack.end == StackEnd::complete && stack.link_count > 0) {
            if (roots_.size() > 4 * kMaxThreads) roots_.clear();
            roots_[stack.tstate] = stack.links[stack.link_count - 1].frame;
        }
        return true;
    }

  private:
    // The frames of a thread's previous walk. Below the frames that changed, a stack is mostly
    // the same frame objects at the same addresses: read them all in one call, then only the
    // new ones one by one.
    std::vector<Address>& remembered(Address tstate) {
        if (chains_.size() > kMaxRememberedThreads || remembered_frames_ > kMaxRememberedFrames) {
            chains_.clear();
            remembered_frames_ = 0;
        }
        return chains_[tstate];
    }

    bool speculate(const std::vector<Address>& chain, Address head_slot, Address& head) {
        if (chain.size() < 2 || head == 0) return false;
        speculative_.resize(chain.size() * read_size_);
        Address fresh = 0;
        ops_.clear();
        ops_.push_back({head_slot, &fresh, sizeof fresh});
        for (std::size_t i = 0; i < chain.size(); ++i)
            ops_.push_back({chain[i], speculative_.data() + i * read_size_, read_size_});
        if (!memory_.read_many(ops_)) return false;
        head = fresh;
        return true;
    }

    // Usually the frame is where the previous walk had it, or a few places off (frames pushed
    // or popped at the top).
    const std::uint8_t* speculative_header(const std::vector<Address>& chain, Address frame,
                                           std::size_t& expected) const {
        constexpr std::size_t kWindow = 8;
        std::size_t low = expected > kWindow ? expected - kWindow : 0;
        std::size_t high = std::min(chain.size(), expected + kWindow);
        for (std::size_t i = low; i < high; ++i) {
            if (chain[i] == frame) {
                expected = i + 1;
                return speculative_.data() + i * read_size_;
            }
        }
        return nullptr;
    }

    process::RemoteMemory& memory_;
    const Layout& layout_;
    Address frame_type_;
    std::size_t read_size_;
    std::vector<std::uint8_t> single_; // one frame header, read_size_ bytes
    std::uint32_t refcnt_ = 0;
    mutable std::unordered_map<Address, Address> roots_; // per thread state: its bottom frame
    std::uint32_t link_low_ = 0, link_span_ = 0;         // the bytes holding those fields
    VisitedSet visited_;
    std::unordered_map<Address, std::vector<Address>> chains_; // per thread state
    std::size_t remembered_frames_ = 0;                        // in chains_, in all
    std::vector<std::uint8_t> speculative_;
    std::vector<process::ReadOp> ops_;
};

} // namespace

std::unique_ptr<StackWalker> make_object_frame_walker(process::RemoteMemory& memory,
                                                      const TargetInfo& target) {
    return std::make_unique<ObjectFrameWalker>(memory, target);
}

} // namespace spyglass::python::walker_detail
