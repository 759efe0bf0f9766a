// spyglass dump: attach, read every thread once, print.
#include <cstdio>

#include "spyglass/cli/options.hpp"
#include "spyglass/output/dump.hpp"
#include "spyglass/process/target_check.hpp"
#include "spyglass/python/interpreter.hpp"
#include "spyglass/sampling/snapshot.hpp"

namespace spyglass::cli {

int run_dump(const DumpOptions& options) {
    if (options.blocking && options.nonblocking) {
        print_error("--blocking and --nonblocking contradict each other");
        return 2;
    }
    if (auto checked = process::check_target_pid(options.pid); !checked) {
        print_error(checked.error().message);
        return checked.error().code == Errc::invalid_argument ? 2 : 1;
    }
    auto process = python::PythonProcess::attach(options.pid);
    if (!process) {
        print_error(process.error().message);
        return 1;
    }
    sampling::FrameTable frames;
    sampling::SnapshotOptions snapshot_options;
    snapshot_options.locals = options.locals;
    snapshot_options.pause = options.blocking      ? sampling::PauseMode::always
                             : options.nonblocking ? sampling::PauseMode::never
                                                   : sampling::PauseMode::when_torn;
    auto snapshot = sampling::take_snapshot(**process, frames, snapshot_options);
    if (!snapshot) {
        print_error(snapshot.error().message);
        return 1;
    }
    std::string text = options.json ? output::format_dump_json(*snapshot, frames)
                                    : output::format_dump_text(*snapshot, frames);
    std::fwrite(text.data(), 1, text.size(), stdout);
    return std::fflush(stdout) == 0 ? 0 : 1;
}

} // namespace spyglass::cli
