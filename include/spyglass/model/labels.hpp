// A label as the command line spells it (record --label env=prod, report --where env=prod): the
// rules every label's name and value follow, whoever makes it. The labels samples carry are
// interned as sets in the frame table (LabelSetTable, frame_table.hpp).
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "spyglass/error.hpp"

namespace spyglass::model {

// Bounds of a label's name and value (bytes), and of a set (a raw file's bound too).
inline constexpr std::size_t kMaxLabelKey = 64;
inline constexpr std::size_t kMaxLabelValue = 256;
inline constexpr std::size_t kMaxLabelsPerSet = 64;

struct LabelText {
    std::string key;
    std::string value;
};

// 1 to kMaxLabelKey of A-Z a-z 0-9 _ . - (what pprof's tag filters and Pyroscope accept).
[[nodiscard]] bool valid_label_key(std::string_view key) noexcept;
// "NAME=VALUE": a valid name, a value of 1 to kMaxLabelValue bytes without control characters.
// `flag` names the option in the error ("--label").
Result<LabelText> parse_label(std::string_view flag, std::string_view text);

} // namespace spyglass::model
