// Format version 5: a sample's extra byte may say which of its calls are new (kHasNewCalls,
// read with the sample in raw_decode.cpp); its records are version 4's.
#include "raw_decode.hpp"

namespace spyglass::output::raw {

bool decode_record_v5(Block& block, std::uint8_t tag) {
    return decode_record_v4(block, tag);
}

} // namespace spyglass::output::raw
