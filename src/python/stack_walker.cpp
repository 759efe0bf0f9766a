#include "spyglass/python/stack_walker.hpp"

#include "walker_internal.hpp"

namespace spyglass::python {

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
    case StackEnd::inconsistent:
        return "inconsistent";
    }
    return "?";
}

std::unique_ptr<StackWalker> make_stack_walker(process::RemoteMemory& memory,
                                               const TargetInfo& target) {
    if (target.layout.frame_model == FrameModel::object_frames)
        return walker_detail::make_object_frame_walker(memory, target);
    return walker_detail::make_interpreter_frame_walker(memory, target);
}

} // namespace spyglass::python
