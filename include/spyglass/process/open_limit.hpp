// spyglass keeps two or three /proc files open per thread of the target: the soft limit on
// open descriptors (often 1024) is raised to the hard one at start, and what still cannot be
// opened is counted and said, not taken for a thread that exited.
#pragma once

#include <cstdint>

namespace spyglass::process {

// Raises the soft RLIMIT_NOFILE to the hard limit. Call once, before anything is opened.
void raise_open_limit() noexcept;
// The soft limit of open descriptors now (after raise_open_limit).
std::uint64_t open_limit() noexcept;
// In a forked child before exec: the soft limit spyglass was started with, so that a launched
// program runs under the limits it was given (select() breaks past 1024 descriptors).
void restore_open_limit() noexcept;
// Whether an errno from open() means this process (or the system) ran out of descriptors.
[[nodiscard]] bool out_of_descriptors(int err) noexcept;

} // namespace spyglass::process
