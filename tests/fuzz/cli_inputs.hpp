// The fuzz target over report's and diff's file inputs (cli_inputs.cpp).
#pragma once

#include <cstdint>
#include <span>

namespace spyglass::fuzz {

// How many targets LLVMFuzzerTestOneInput dispatches to, by its first byte (driver.cpp spreads
// its inputs over them evenly).
inline constexpr int kFuzzTargets = 9;

// Edits a real raw recording, pprof or folded file as `data` says (or takes `data` itself) and
// runs it through what report or diff does with a file's bytes.
void cli_inputs(std::span<const std::uint8_t> data);

} // namespace spyglass::fuzz
