#include "spyglass/cli/launcher.hpp"

#include <algorithm>
#include <cmath>

#include <spdlog/spdlog.h>

#include "spyglass/cli/signals.hpp"
#include "spyglass/process/procfs.hpp"
#include "spyglass/process/target_check.hpp"

namespace spyglass::cli {

Result<Started> start_session(const SamplingOptions& options, sampling::FrameTable& frames,
                              sampling::StackTable& stacks, bool) {
    if ((options.pid != 0) == !options.command.empty())
        return fail(
            Errc::invalid_argument,
            "give either --pid PID or a command after --, e.g. spyglass record -- python3 app.py");
    if (!(options.rate > 0) || options.rate > 100000)
        return fail(Errc::invalid_argument, "--rate must be between 0 and 100000 Hz");
    if (!(options.duration >= 0))
        return fail(Errc::invalid_argument, "--duration cannot be negative");
    if (options.mode != "wall" && options.mode != "cpu")
        return fail(Errc::invalid_argument, "--mode must be wall or cpu, not {}", options.mode);

    sampling::SessionOptions session_options;
    session_options.rate_hz = options.rate;
    // Unlimited (infinity) is the session's 0; a positive duration never rounds to 0 ns.
    session_options.duration_s =
        std::isinf(options.duration)
            ? 0
            : (options.duration > 0 ? std::max(options.duration, 1e-9) : 0);
    session_options.jitter = options.jitter;
    session_options.subprocesses = options.subprocesses;
    session_options.sampler.mode =
        options.mode == "cpu" ? sampling::SampleMode::cpu : sampling::SampleMode::wall;
    session_options.sampler.gil_only = options.gil;
    if (options.blocking && options.nonblocking)
        return fail(Errc::invalid_argument, "--blocking and --nonblocking contradict each other");
    session_options.sampler.pause = options.blocking      ? sampling::PauseMode::always
                                    : options.nonblocking ? sampling::PauseMode::never
                                                          : sampling::PauseMode::when_torn;
    session_options.sampler.stack.function_lines = options.function;
    session_options.sampler.stack.no_lines = options.nolineno;

    Started started;
    started.session = std::make_unique<sampling::Session>(frames, stacks, session_options);
    if (options.pid != 0) {
        auto checked = process::check_target_pid(options.pid);
        if (!checked) return std::unexpected(checked.error());
        if (checked->stopped())
            spdlog::warn("process {} is stopped (state {}): its threads are sampled as they are, "
                         "waiting, until it is continued (kill -CONT {})",
                         options.pid, checked->state, options.pid);
        if (auto attached = started.session->attach(options.pid); !attached)
            return std::unexpected(attached.error());
        started.command = process::cmdline(options.pid);
        return started;
    }
    auto child = process::Child::launch(options.command);
    if (!child) return std::unexpected(child.error());
    started.child = std::make_unique<process::Child>(std::move(*child));
    set_forward_target(started.child->pid());
    process::Child* launched = started.child.get();
    started.session->watch(launched->pid(), [launched] { return !launched->exited(); });
    started.command = options.command;
    return started;
}

int finish(Started& started) {
    if (!started.child) return 0;
    int status = started.child->wait();
    set_forward_target(0);
    return status;
}

} // namespace spyglass::cli
