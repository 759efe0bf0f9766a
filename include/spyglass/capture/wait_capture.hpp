// The capture half of a wait reason, on the thread that samples: the syscall file of an
// off-CPU thread and, for a call on a descriptor, what the descriptor is (its inode), while the
// thread is still blocked on it. Numbers only; wait_resolve.hpp says what they mean.
#pragma once

#include "spyglass/handoff/capture_queue.hpp"
#include "spyglass/process/proc_waits.hpp"
#include "spyglass/process/procfs.hpp"

namespace spyglass::sampling {

// `state` is the thread's /proc state letter (D, S, T...). read is WaitRead::none when the
// thread was running again by the time the file was read, or the file could not be read.
RawWait read_raw_wait(process::TaskStatReader& stat, process::FdDirectory& fds, char state);

} // namespace spyglass::sampling
