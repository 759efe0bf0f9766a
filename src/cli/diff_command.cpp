// spyglass diff BASE NEW: what grew and what shrank between two recordings.
#include <fmt/format.h>

#include "spyglass/analysis/diff.hpp"
#include "spyglass/cli/options.hpp"
#include "spyglass/cli/validate.hpp"
#include "spyglass/delivery/atomic_file.hpp"
#include "spyglass/input/profile_input.hpp"
#include "spyglass/output/diff_flamegraph.hpp"
#include "spyglass/output/writer.hpp"

namespace spyglass::cli {

int run_diff(const DiffOptions& options) {
    model::DisplayOptions display;
    display.labels.full_filenames = options.full_filenames;
    const bool cpu = options.mode == "cpu";
    auto limit = input_limit();
    if (!limit) {
        print_error(limit.error().message);
        return 2;
    }
    auto where = parse_labels("--where", options.where);
    if (!where) {
        print_error(where.error().message);
        return 2;
    }
    auto base = output::load_profile(options.base, cpu, display, *limit, *where);
    if (!base) {
        print_error(base.error().message);
        return 1;
    }
    auto current = output::load_profile(options.current, cpu, display, *limit, *where);
    if (!current) {
        print_error(current.error().message);
        return 1;
    }
    for (const auto* loaded : {base->get(), current->get()})
        if (!loaded->warning.empty())
            std::fprintf(stderr, "spyglass: warning: %s\n", loaded->warning.c_str());
    if ((*base)->kind != (*current)->kind)
        std::fprintf(stderr,
                     "spyglass: warning: comparing %s (%s) with %s (%s): frames match by their "
                     "labels\n",
                     options.base.c_str(), (*base)->kind.c_str(), options.current.c_str(),
                     (*current)->kind.c_str());
    const model::Profile& before = (*base)->profile;
    const model::Profile& after = (*current)->profile;
    output::ProfileDiff diff = output::diff_profiles(before, after);
    if (diff.base_weight == 0 || diff.new_weight == 0) {
        print_error(fmt::format("{} has no samples{}{}{}: nothing to compare",
                                diff.base_weight == 0 ? options.base : options.current,
                                cpu ? " on a CPU" : "", where->empty() ? "" : " with ",
                                fmt::join(options.where, " and ")));
        return 1;
    }
    if (!options.output.empty()) {
        std::string title =
            fmt::format("{} \u2192 {}{}", options.base, options.current, cpu ? " (on-CPU)" : "");
        auto written = delivery::write_file_atomically(options.output, [&](std::FILE* out) {
            return output::write_diff_flamegraph(before, after, title, out);
        });
        if (!written) {
            print_error(written.error().message);
            return 1;
        }
    }
    std::size_t top = options.top != 0 ? options.top : options.output.empty() ? 20 : 0;
    if (top != 0) std::fputs(output::diff_table(diff, top).c_str(), stdout);
    if (!options.output.empty())
        std::fprintf(stderr, "spyglass: diff: wrote the differential flame graph to %s\n",
                     options.output.c_str());
    return std::fflush(stdout) == 0 ? 0 : 1;
}

} // namespace spyglass::cli
