// Format version 2: a native frame's module in the frame record, and the build-id record;
// the rest as version 1.
#include "raw_decode.hpp"

namespace spyglass::output::raw {

bool decode_record_v2(Block& block, std::uint8_t tag) {
    switch (tag) {
    case kFrame:
        return read_frame(block, FrameFields::with_module);
    case kBuildId:
        return read_build_id(block);
    default:
        return decode_record_v1(block, tag);
    }
}

} // namespace spyglass::output::raw
