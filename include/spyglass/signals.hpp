// Ctrl-C and SIGTERM during a recording: the first stops it (and the output is written), a
// second one (either signal) aborts at once: it removes the output's temporary file, says on
// stderr what became of the output, and exits with 128 + the signal's number (130 for Ctrl-C).
// A launched child is sent SIGTERM when spyglass gets one, and SIGINT when someone other than
// the terminal sent it (the terminal already told the child).
#pragma once

#include <atomic>
#include <string_view>

#include <sys/types.h>

namespace spyglass {

// Installs the handlers; returns the number of stop requests so far (read it, don't write).
const std::atomic<int>& install_stop_handlers();
// The number of stop requests so far (0 before the handlers are installed).
int stop_request_count();
// SIGUSR1 during `record`: write the current window (or the whole recording so far) now and
// go on. Returns the number of requests so far (a sink compares it with what it saw).
const std::atomic<int>& install_flush_handler();
// The calling thread takes no signal from now on (the threads record starts beside the clock:
// Ctrl-C, SIGCHLD and SIGUSR1 must land on the sampling thread).
void block_signals_here();
// The launched command, to forward signals to (0: none).
void set_forward_target(pid_t pid);
// Ignore SIGPIPE: a closed output pipe is an I/O error, not a reason to die.
void ignore_sigpipe();

// What an abort does about the output: removes `remove_path` (a temporary file; empty: none)
// and ends its message with `outcome` ("nothing was written to prof.svg"). Copied: the
// arguments need not outlive the call. Longer texts are cut.
void set_abort_cleanup(std::string_view remove_path, std::string_view outcome);
// Nothing to remove, nothing to say about an output.
void clear_abort_cleanup();
// A second temporary file an abort removes (the raw recording's), saying nothing of it.
void set_abort_also_remove(std::string_view path);
void clear_abort_also_remove();

} // namespace spyglass
