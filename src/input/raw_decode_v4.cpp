// Format version 4: the label set record (and a sample's label set, read with the sample);
// the rest as version 3.
#include "raw_decode.hpp"

#include "spyglass/model/labels.hpp"

namespace spyglass::output::raw {

namespace {

// A count of (key, value) string ids, then the pairs.
bool read_label_set(Block& block) {
    Decoder& d = block.d;
    Cursor& in = block.in;
    std::uint64_t count = in.varint();
    if (count > model::kMaxLabelsPerSet || count > in.left()) return false;
    model::Label labels[model::kMaxLabelsPerSet];
    for (std::uint64_t i = 0; i < count; ++i) {
        std::uint64_t key = in.varint(), value = in.varint();
        if (!in.ok() || key >= d.strings.size() || value >= d.strings.size()) return false;
        labels[i] = {d.strings[key], d.strings[value]};
    }
    if (!in.ok()) return false;
    d.label_sets.push_back(d.frames.intern_labels(std::span(labels, count)));
    return true;
}

} // namespace

bool decode_record_v4(Block& block, std::uint8_t tag) {
    return tag == kLabelSet ? read_label_set(block) : decode_record_v3(block, tag);
}

} // namespace spyglass::output::raw
