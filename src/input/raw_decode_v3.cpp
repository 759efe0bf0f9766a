// Format version 3: the process record; the rest as version 2.
#include "raw_decode.hpp"

namespace spyglass::output::raw {

bool decode_record_v3(Block& block, std::uint8_t tag) {
    return tag == kProcess ? read_process(block) : decode_record_v2(block, tag);
}

} // namespace spyglass::output::raw
