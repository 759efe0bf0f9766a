// spyglass dump: attach, read every thread once, print; with --subprocesses, the same for each
// Python process among the target's descendants.
#include <cstdio>

#include <spdlog/spdlog.h>

#include "spyglass/cli/options.hpp"
#include "spyglass/output/dump.hpp"
#include "spyglass/process/procfs.hpp"
#include "spyglass/process/target_check.hpp"
#include "spyglass/python/interpreter.hpp"
#include "spyglass/sampling/snapshot.hpp"

namespace spyglass::cli {

namespace {

// The target's descendants at any depth, parents before their children.
std::vector<pid_t> descendants(pid_t root) {
    std::vector<pid_t> out;
    std::vector<pid_t> queue = {root};
    for (std::size_t next = 0; next < queue.size() && queue.size() < 4096; ++next)
        for (pid_t child : process::list_children(queue[next])) {
            queue.push_back(child);
            out.push_back(child);
        }
    return out;
}

Result<std::string> dump_process(pid_t pid, const DumpOptions& options) {
    auto process = python::PythonProcess::attach(pid);
    if (!process) return std::unexpected(process.error());
    model::FrameTable frames;
    sampling::SnapshotOptions snapshot_options;
    snapshot_options.locals = options.locals;
    snapshot_options.pause = options.blocking      ? sampling::PauseMode::always
                             : options.nonblocking ? sampling::PauseMode::never
                                                   : sampling::PauseMode::when_torn;
    snapshot_options.native = options.native || options.native_all;
    snapshot_options.native_all = options.native_all;
    snapshot_options.waits = options.no_waits          ? model::WaitDetail::off
                             : options.waits == "kind" ? model::WaitDetail::kind
                                                       : model::WaitDetail::full;
    auto snapshot = sampling::take_snapshot(**process, frames, snapshot_options);
    if (!snapshot) return std::unexpected(snapshot.error());
    return options.json ? output::format_dump_json(*snapshot, frames)
                        : output::format_dump_text(*snapshot, frames, options.full_filenames);
}

} // namespace

int run_dump(const DumpOptions& options) {
    if (auto checked = process::check_target_pid(options.pid); !checked) {
        print_error(checked.error().message);
        return checked.error().code == Errc::invalid_argument ? 2 : 1;
    }
    auto text = dump_process(options.pid, options);
    if (!text) {
        print_error(text.error().message);
        return 1;
    }
    std::fwrite(text->data(), 1, text->size(), stdout);
    if (options.subprocesses) {
        for (pid_t child : descendants(options.pid)) {
            auto more = dump_process(child, options);
            if (!more) {
                // Not Python (a shell, a helper), or gone since it was listed.
                spdlog::info("not dumping process {}: {}", child, more.error().message);
                continue;
            }
            if (!options.json) std::fputc('\n', stdout);
            std::fwrite(more->data(), 1, more->size(), stdout);
        }
    }
    return std::fflush(stdout) == 0 ? 0 : 1;
}

} // namespace spyglass::cli
