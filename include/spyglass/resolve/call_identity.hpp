// Which of a sample's calls are new: the resolver's half of "latency from samples"
// (docs/calls.md). A thread's consecutive samples share their root-side calls up to the first
// frame that is not the same call as the one at that depth before: another frame address, code
// object or code object header, or the same frame with another object in an argument slot that
// the function's code never writes. Everything inside that frame is new too.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include "spyglass/python/stack_walker.hpp"

namespace spyglass::sampling {

class CallIdentity {
  public:
    // The raw frames of a resolved capture and which of them the stack kept (StackResolver::
    // kept(), innermost first): how many of the kept ones, innermost first, are calls begun
    // since this thread's previous call to next(). The first call: all of them.
    // `stable_slots(code address)`: the code object's argument slots that only a new call
    // changes (CodeInfo::stable_args; 0 when not known).
    template <class StableSlots>
    std::uint16_t next(std::span<const python::RawFrame> raw, std::span<const std::uint32_t> kept,
                       StableSlots&& stable_slots) {
        now_.clear();
        for (std::size_t i = kept.size(); i-- > 0;)
            if (kept[i] < raw.size()) now_.push_back(raw[kept[i]]);
        std::size_t same = 0;
        const std::size_t common = std::min(last_.size(), now_.size());
        while (same < common && same_call(last_[same], now_[same], stable_slots))
            ++same;
        last_.swap(now_);
        return static_cast<std::uint16_t>(std::min<std::size_t>(
            last_.size() - same, std::numeric_limits<std::uint16_t>::max() - 1));
    }

  private:
    template <class StableSlots>
    static bool same_call(const python::RawFrame& before, const python::RawFrame& now,
                          StableSlots& stable_slots) {
        if (before.frame != now.frame || before.code != now.code ||
            before.code_check != now.code_check)
            return false;
        // The same frame slot and code: the same call unless an argument object changed, in a
        // slot the function's own code never writes (an argument it assigns to itself would
        // look like another call).
        if (!(before.flags & now.flags & python::RawFrame::args)) return true;
        const unsigned stable = stable_slots(now.code);
        for (unsigned slot = 0; slot < 3; ++slot)
            if ((stable >> slot & 1u) && before.arg_hash[slot] != now.arg_hash[slot]) return false;
        return true;
    }

    std::vector<python::RawFrame> last_; // root first
    std::vector<python::RawFrame> now_;
};

} // namespace spyglass::sampling
