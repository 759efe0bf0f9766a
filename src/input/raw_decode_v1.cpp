// Format version 1's records (docs/raw-format.md).
#include "raw_decode.hpp"

namespace spyglass::output::raw {

bool decode_record_v1(Block& block, std::uint8_t tag) {
    switch (tag) {
    case kString:
        return read_string(block);
    case kWait:
        return read_wait(block);
    case kFrame:
        return read_frame(block, FrameFields::without_module);
    case kStack:
        return read_stack(block);
    case kThread:
        return read_thread(block);
    case kReset:
        return read_reset(block);
    case kFinish:
        return read_finish(block);
    default:
        return false;
    }
}

} // namespace spyglass::output::raw
