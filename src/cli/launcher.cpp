#include "spyglass/cli/launcher.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include <spdlog/spdlog.h>

#include "spyglass/cli/validate.hpp"
#include "spyglass/handoff/label_source.hpp"
#include "spyglass/process/procfs.hpp"
#include "spyglass/process/target_check.hpp"
#include "spyglass/signals.hpp"

namespace spyglass::cli {

namespace {

constexpr std::array<std::string_view, 8> kOwnLabels = {
    "state", "gil", "thread", "thread_id", "pid", "wait", "wait_syscall", "wait_target"};

// --label: checked, and none named as pprof's own sample labels (docs/output-formats.md),
// which it would shadow.
Result<std::vector<model::LabelText>> static_labels(const std::vector<std::string>& texts) {
    auto labels = parse_labels("--label", texts);
    if (!labels) return labels;
    for (const model::LabelText& label : *labels)
        for (std::string_view own : kOwnLabels)
            if (label.key == own)
                return fail(Errc::invalid_argument,
                            "--label {}={}: {} is a label spyglass gives every sample itself",
                            label.key, label.value, own);
    return labels;
}

// --context NAME (and any label source's flag): each a label of its own name, not one that
// spyglass or --label gives already.
Result<void> check_label_sources(const std::vector<sampling::LabelSourceSpec>& sources,
                                 const std::vector<model::LabelText>& labels) {
    if (sources.size() > sampling::kMaxSourcedLabels)
        return fail(Errc::invalid_argument, "--{}: at most {} labels read from the target, not {}",
                    sources.back().kind, sampling::kMaxSourcedLabels, sources.size());
    for (std::size_t i = 0; i < sources.size(); ++i) {
        const sampling::LabelSourceSpec& spec = sources[i];
        if (auto checked = sampling::check_label_source(spec); !checked) return checked;
        for (std::string_view own : kOwnLabels)
            if (spec.key == own)
                return fail(Errc::invalid_argument,
                            "--{} {}: {} is a label spyglass gives every sample itself", spec.kind,
                            spec.key, own);
        for (const model::LabelText& label : labels)
            if (label.key == spec.key)
                return fail(Errc::invalid_argument, "--{} {}: --label {}={} names it too",
                            spec.kind, spec.key, label.key, label.value);
        for (std::size_t j = 0; j < i; ++j)
            if (sources[j].key == spec.key)
                return fail(Errc::invalid_argument, "--{} {}: that label is asked for twice",
                            spec.kind, spec.key);
    }
    return {};
}

} // namespace

Result<Started> start_session(const SamplingOptions& options, model::FrameTable& frames,
                              model::StackTable& stacks, bool) {
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
    session_options.sampler.filter.mode =
        options.mode == "cpu" ? model::SampleMode::cpu : model::SampleMode::wall;
    session_options.sampler.filter.gil_only = options.gil;
    if (options.blocking && options.nonblocking)
        return fail(Errc::invalid_argument, "--blocking and --nonblocking contradict each other");
    session_options.sampler.pause = options.blocking      ? sampling::PauseMode::always
                                    : options.nonblocking ? sampling::PauseMode::never
                                                          : sampling::PauseMode::when_torn;
    if (options.waits != "full" && options.waits != "kind")
        return fail(Errc::invalid_argument, "--waits must be full or kind, not {}", options.waits);
    if (options.no_waits && options.waits != "full")
        return fail(Errc::invalid_argument, "--no-waits and --waits={} contradict each other",
                    options.waits);
    session_options.sampler.waits = options.no_waits          ? model::WaitDetail::off
                                    : options.waits == "kind" ? model::WaitDetail::kind
                                                              : model::WaitDetail::full;
    session_options.stacks.function_lines = options.function;
    session_options.stacks.no_lines = options.nolineno;
    session_options.sampler.native = options.native || options.native_all;
    session_options.stacks.native_all = options.native_all;
    session_options.table_limit = options.table_limit;
    auto labels = static_labels(options.labels);
    if (!labels) return std::unexpected(labels.error());
    session_options.labels = std::move(*labels);
    if (auto checked = check_label_sources(options.label_sources, session_options.labels); !checked)
        return std::unexpected(checked.error());
    session_options.sampler.label_sources = options.label_sources;
    session_options.command = options.pid != 0 ? process::cmdline(options.pid) : options.command;

    Started started;
    started.command = session_options.command;
    started.session = std::make_unique<sampling::Session>(frames, stacks, session_options);
    if (options.pid != 0) {
        auto checked = process::check_target_pid(options.pid);
        if (!checked) return std::unexpected(checked.error());
        if (checked->stopped())
            spdlog::warn("process {} is stopped (state {}): its threads are sampled as they are, "
                         "waiting, until it is continued (kill -CONT {})",
                         options.pid, checked->state, options.pid);
        if (auto attached = started.session->attach(options.pid); !attached) {
            // py-spy's delayed_launch.sh: --subprocesses on a shell that starts Python later.
            if (!(options.subprocesses && attached.error().code == Errc::not_python))
                return std::unexpected(attached.error());
            started.session->follow(options.pid);
        }
        return started;
    }
    auto child = process::Child::launch(options.command);
    if (!child) return std::unexpected(child.error());
    started.child = std::make_unique<process::Child>(std::move(*child));
    set_forward_target(started.child->pid());
    process::Child* launched = started.child.get();
    started.session->watch(launched->pid(), [launched] { return !launched->exited(); });
    return started;
}

int finish(Started& started) {
    if (!started.child) return 0;
    int status = started.child->wait();
    set_forward_target(0);
    return status;
}

} // namespace spyglass::cli
