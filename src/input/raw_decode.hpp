// Decoding the record blocks of a raw file (docs/raw-format.md): the state that runs across
// blocks, the records every format version reads alike, and one record decoder per version
// (raw_decode_v1.cpp ... raw_decode_v4.cpp), chosen once per file from its
// header. A new version is a new decoder that reads what changed and hands the rest to the
// version before it.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "spyglass/model/frame_table.hpp"
#include "spyglass/model/sample.hpp"
#include "spyglass/output/raw_codec.hpp"

namespace spyglass::output::raw {

inline constexpr std::uint32_t kUnsetStack = ~std::uint32_t{0};

// What a block's records do, kept until the whole block checks out.
struct Event {
    enum Kind : std::uint8_t { thread_event, sample_event, finish_event, process_event } kind;
    std::uint32_t index = 0; // a thread's; a process's in Decoder::processes
    model::ThreadInfo info;
    model::Sample sample;
};

// The decoding state that runs across blocks.
struct Decoder {
    model::FrameTable& frames;
    model::StackTable& stacks;
    std::uint16_t version; // the file's format version
    // File id -> table id, per kind.
    std::vector<model::StringId> strings;
    std::vector<model::WaitId> waits;
    std::vector<model::FrameId> frame_ids;
    std::vector<model::StackId> stack_ids;
    std::vector<model::LabelSetId> label_sets;
    std::vector<std::uint32_t> last_stack;      // per thread: file stack id
    std::vector<model::LabelSetId> last_labels; // per thread: its samples' label set
    std::uint64_t threads = 0;                  // thread indexes defined: below this
    std::uint64_t time_ns = 0, weight_ns = 0;
    std::int64_t thread = -1;
    std::vector<model::FrameId> scratch;
    model::RecordingTotals totals;
    bool finished = false;
    std::vector<model::ProcessInfo> processes; // the block's process records (events refer)

    Decoder(model::FrameTable& frame_table, model::StackTable& stack_table,
            std::uint16_t format_version)
        : frames(frame_table), stacks(stack_table), version(format_version) {
        reset_ids();
    }
    void reset_ids();
};

// One block being decoded: its records, and what they do so far.
struct Block {
    Decoder& d;
    Cursor in;
    std::vector<Event>& events;
    std::optional<Decoder> before_reset; // the maps as they were before the block's reset
};

// Reads one record, its tag already read (never a sample's: those read alike in every
// version); false when the record does not check out, or its tag is not of this version.
using RecordDecoder = bool (*)(Block& block, std::uint8_t tag);

bool decode_record_v1(Block& block, std::uint8_t tag);
bool decode_record_v2(Block& block, std::uint8_t tag);
bool decode_record_v3(Block& block, std::uint8_t tag);
bool decode_record_v4(Block& block, std::uint8_t tag);
bool decode_record_v5(Block& block, std::uint8_t tag);

// The decoder of a format version; nullptr for one this spyglass does not read.
RecordDecoder record_decoder(std::uint16_t version) noexcept;

// Decodes one block's records into `events`; false (and the decoder's state as it was) when
// anything in it does not check out.
bool decode_block(Decoder& d, RecordDecoder decode_record, std::string_view bytes,
                  std::vector<Event>& events);

// The records, as every version so far reads them.
enum class FrameFields : std::uint8_t { without_module, with_module };
bool read_string(Block& block);
bool read_wait(Block& block);
bool read_frame(Block& block, FrameFields fields);
bool read_build_id(Block& block);
bool read_stack(Block& block);
bool read_thread(Block& block);
bool read_process(Block& block);
bool read_reset(Block& block);
bool read_finish(Block& block);

} // namespace spyglass::output::raw
