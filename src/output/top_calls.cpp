// The calls view of `spyglass top --calls`: the model's side (the functions' calls, merged over
// threads or of one thread, named from the copies made on the sampling thread) and its text,
// the columns of -f calls' table.
#include <algorithm>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "spyglass/output/top_model.hpp"
#include "spyglass/output/top_screen.hpp"

namespace spyglass::output {

void TopModel::learn_call_names(std::span<const model::FrameId> frames) {
    const model::StringTable& strings = frames_.strings();
    for (model::FrameId id : frames) {
        const model::Frame& frame = frames_.get(id);
        if (frame.kind != model::FrameKind::python) continue;
        for (model::StringId name : {frame.function, frame.file})
            if (!call_names_.contains(name.value))
                call_names_.emplace(name.value, std::string(strings.view(name)));
    }
}

CallsView TopModel::calls_view(const TopQuery& query) const {
    model::CallTable table;
    if (frozen_calls_)
        table = *frozen_calls_;
    else if (calls_ && !calls_restart_)
        table = calls_->table();
    CallsView view;
    // Nothing sampled yet (or since a reset) is no sign of missing identity.
    view.known = table.known || table.functions.empty();
    view.samples_without_identity = table.samples_without_identity;
    auto name = [&](model::StringId id) {
        auto found = call_names_.find(id.value);
        return found != call_names_.end() ? found->second : std::string("?");
    };
    // All threads: each function's calls summed over them (as a table without --threads).
    std::map<std::tuple<std::uint32_t, std::uint32_t, std::int32_t>, std::size_t> merged;
    for (const model::CallStats& stats : table.functions) {
        if (query.thread && stats.thread != *query.thread) continue;
        auto key = std::tuple{stats.function.value, stats.file.value, stats.first_line};
        auto [at, fresh] = merged.try_emplace(key, view.rows.size());
        if (fresh) {
            CallRow row;
            row.stats = stats;
            row.stats.thread = model::kAllThreads;
            if (!options_.line_numbers) row.stats.first_line = 0;
            row.function = name(stats.function);
            row.file = name(stats.file);
            view.rows.push_back(std::move(row));
            continue;
        }
        model::CallStats& sum = view.rows[at->second].stats;
        sum.calls += stats.calls;
        sum.short_calls += stats.short_calls;
        sum.open_calls += stats.open_calls;
        sum.back_to_back += stats.back_to_back;
        sum.durations.merge(stats.durations);
        sum.total_ns += stats.total_ns;
        sum.self_ns += stats.self_ns;
        sum.cpu_ns += stats.cpu_ns;
        sum.self_cpu_ns += stats.self_cpu_ns;
    }
    finish_calls_view(view);
    return view;
}

std::vector<std::string> top_calls_lines(const CallsView& view, bool full_filenames,
                                         std::size_t width, std::size_t max_rows, bool waiting) {
    std::vector<std::string> lines;
    if (!view.known) {
        lines.push_back(calls_unknown_line());
        return lines;
    }
    CallsTextOptions options;
    options.full_filenames = full_filenames;
    options.width = width;
    const std::size_t count = view.rows.size();
    const std::size_t shown = max_rows == 0 ? count : std::min(max_rows, count);
    lines = calls_lines(std::span(view.rows).first(shown), false, options);
    if (count == 0)
        lines.emplace_back(waiting ? "(waiting for a Python interpreter)" : "(no calls yet)");
    if (shown < count) lines.push_back(fmt::format("({} more rows)", count - shown));
    std::vector<std::string> footer = calls_footer(view);
    if (!footer.empty()) lines.emplace_back();
    for (std::string& line : footer)
        lines.push_back(std::move(line));
    return lines;
}

} // namespace spyglass::output
