// The monotonic clock in nanoseconds, for every layer (sampling deadlines, pause lengths,
// rate limits).
#pragma once

#include <cstdint>
#include <ctime>

namespace spyglass {

inline std::uint64_t monotonic_ns() noexcept {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<std::uint64_t>(ts.tv_sec) * 1'000'000'000ull +
           static_cast<std::uint64_t>(ts.tv_nsec);
}

} // namespace spyglass
