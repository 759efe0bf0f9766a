#include "spyglass/output/top_model.hpp"

#include <algorithm>
#include <tuple>

#include <fmt/format.h>

#include "spyglass/output/writer.hpp"
#include "spyglass/terminal_text.hpp"

namespace spyglass::output {

namespace {

constexpr std::uint32_t kNoFramesRow = 0;

bool is_continuation(char c) {
    return (static_cast<unsigned char>(c) & 0xC0) == 0x80;
}

// The last `width` code points of `text`.
std::string_view tail(std::string_view text, std::size_t width) {
    std::size_t i = text.size();
    while (i > 0 && width > 0) {
        --i;
        while (i > 0 && is_continuation(text[i]))
            --i;
        --width;
    }
    return text.substr(i);
}

double share(std::uint64_t part, std::uint64_t whole) {
    return whole == 0 ? -1.0 : static_cast<double>(part) / static_cast<double>(whole);
}

} // namespace

const char* top_sort_name(TopSort sort) noexcept {
    switch (sort) {
    case TopSort::own:
        return "%Own";
    case TopSort::total:
        return "%Total";
    case TopSort::own_time:
        return "OwnTime";
    case TopSort::total_time:
        return "TotalTime";
    case TopSort::on_cpu:
        return "OnCPU";
    case TopSort::name:
        return "Function";
    }
    return "?";
}

std::uint64_t TopModel::State::now_ns() const noexcept {
    return std::max(latest.elapsed_ns, tick_ns);
}

void TopModel::State::restart(Window& window) const {
    window = Window{};
    window.start_ns = now_ns();
    window.start = latest;
}

TopModel::TopModel(const model::FrameTable& frames, const model::StackTable& stacks,
                   const TopModelOptions& options)
    : frames_(frames), stacks_(stacks), options_(options) {
    intern_row(RowInfo{std::string(kNoFramesFrame), "", 0});
}

void TopModel::thread(std::uint32_t index, const model::ThreadInfo& info) {
    std::lock_guard lock(mutex_);
    auto it = std::find_if(threads_.begin(), threads_.end(),
                           [&](const TopThread& t) { return t.index == index; });
    if (it != threads_.end()) {
        it->info = info;
    } else {
        threads_.insert(
            std::upper_bound(threads_.begin(), threads_.end(), index,
                             [](std::uint32_t i, const TopThread& t) { return i < t.index; }),
            TopThread{index, info});
    }
    if (std::find(pids_.begin(), pids_.end(), info.pid) == pids_.end()) pids_.push_back(info.pid);
}

void TopModel::sample(const model::Sample& sample) {
    const model::SampleKey& key = sample.key;
    std::lock_guard lock(mutex_);
    learn_stack(key.stack);
    learn_wait(key.wait);
    State& state = live_;
    if (!state.have_tick || sample.time_ns != state.tick_ns) {
        state.previous_ns = state.have_tick ? state.tick_ns : sample.time_ns;
        state.tick_ns = sample.time_ns;
        state.have_tick = true;
        state.tick_gil = false;
        ++state.cumulative.ticks;
        ++state.current.ticks;
    }
    if (key.gil && !state.tick_gil) {
        state.tick_gil = true;
        ++state.cumulative.gil_ticks;
        ++state.current.gil_ticks;
    }
    if (options_.calls) {
        if (!calls_ || calls_restart_) {
            calls_ = std::make_unique<model::CallTracker>(frames_, stacks_, true);
            calls_->measure_cpu_time(options_.cpu_calls);
        }
        calls_restart_ = false;
        calls_->sample(sample);
    }
    if (key.thread >= state.seen.size()) state.seen.resize(key.thread + 1);
    state.seen[key.thread] = ThreadSeen{sample.time_ns, key.on_cpu, true};
    bool error = sample.status != model::StackStatus::ok;
    for (Window* window : {&state.cumulative, &state.current}) {
        Counts& counts = window->counts[key];
        ++counts.samples;
        counts.errors += error ? 1 : 0;
        counts.weight_ns += sample.weight_ns;
    }
}

void TopModel::progress(const model::RecordingTotals& progress) {
    std::lock_guard lock(mutex_);
    live_.latest = progress;
}

void TopModel::next_interval() {
    std::lock_guard lock(mutex_);
    live_.last = std::move(live_.current);
    live_.last.end_ns = live_.now_ns();
    live_.last.end = live_.latest;
    live_.restart(live_.current);
}

void TopModel::reset() {
    std::lock_guard lock(mutex_);
    live_.restart(live_.cumulative);
    live_.restart(live_.current);
    live_.restart(live_.last);
    live_.last.end_ns = live_.last.start_ns;
    if (frozen_) frozen_ = live_;
    // The tracker is made again by the next sample; the calls running now are its open calls.
    calls_restart_ = true;
    if (frozen_calls_) frozen_calls_ = model::CallTable{};
}

void TopModel::set_paused(bool paused) {
    std::lock_guard lock(mutex_);
    if (!paused) {
        frozen_.reset();
        frozen_calls_.reset();
    } else if (!frozen_) {
        frozen_ = live_;
        if (calls_ && !calls_restart_)
            frozen_calls_ = calls_->table();
        else
            frozen_calls_ = model::CallTable{};
    }
}

std::uint32_t TopModel::intern_row(RowInfo info) {
    std::string key = fmt::format("{}\n{}\n{}", info.function, info.file, info.line);
    auto it = row_index_.find(key);
    if (it != row_index_.end()) return it->second;
    auto row = static_cast<std::uint32_t>(rows_.size());
    rows_.push_back(std::move(info));
    row_stamp_.push_back(0);
    row_index_.emplace(std::move(key), row);
    return row;
}

std::uint32_t TopModel::row_of(model::FrameId frame, bool by_line) {
    std::vector<std::uint32_t>& cache = frame_rows_[by_line ? 1 : 0];
    const std::uint32_t at = frame.value;
    if (at >= cache.size()) cache.resize(std::max<std::size_t>(frames_.size(), at + 1), 0);
    if (cache[at] != 0) return cache[at] - 1;
    const model::Frame& f = frames_.get(frame);
    RowInfo info;
    // Escaped once here: the plain table and the screen both print these.
    info.function = terminal_safe(frames_.strings().view(f.function));
    if (f.kind != model::FrameKind::marker) {
        info.file = terminal_safe(frames_.strings().view(f.file));
        if (options_.line_numbers) info.line = by_line ? f.line : f.first_line;
    }
    std::uint32_t row = intern_row(std::move(info));
    cache[at] = row + 1;
    return row;
}

void TopModel::learn_stack(model::StackId stack) {
    const std::uint32_t at = stack.value;
    if (at >= stack_rows_.size()) stack_rows_.resize(std::max<std::size_t>(stacks_.size(), at + 1));
    if (stack_rows_[at].known) return;
    std::span<const model::FrameId> frames = stacks_.get(stack);
    StackRows entry{};
    for (int by_line = 0; by_line < 2; ++by_line) {
        // A recursive function is in the stack more than once, but counts once per sample.
        ++stamp_;
        scratch_.clear();
        for (model::FrameId frame : frames) {
            std::uint32_t row = row_of(frame, by_line == 1);
            if (row_stamp_[row] == stamp_) continue;
            row_stamp_[row] = stamp_;
            scratch_.push_back(row);
        }
        if (scratch_.empty()) scratch_.push_back(kNoFramesRow);
        entry.offset[by_line] = static_cast<std::uint32_t>(row_pool_.size());
        entry.length[by_line] = static_cast<std::uint32_t>(scratch_.size());
        row_pool_.insert(row_pool_.end(), scratch_.begin(), scratch_.end());
    }
    entry.known = true;
    stack_rows_[at] = entry;
    if (options_.calls) learn_call_names(frames);
}

void TopModel::learn_wait(model::WaitId wait) {
    if (wait.value >= wait_info_.size())
        wait_info_.resize(std::max<std::size_t>(frames_.waits().size(), wait.value + 1));
    WaitInfo& info = wait_info_[wait.value];
    if (info.known) return;
    info.known = true;
    if (wait.value == 0) {
        info.label = "(reason not read)";
        info.kind = "-";
        return;
    }
    info.label = terminal_safe(wait_summary(frames_, wait));
    info.kind = model::wait_kind_name(frames_.waits().get(wait).kind);
    waits_seen_.push_back(TopWait{wait, info.label, info.kind});
}

TopTable TopModel::table(const TopQuery& query) const {
    std::lock_guard lock(mutex_);
    const State& state = frozen_ ? *frozen_ : live_;
    const Window& window = query.interval ? state.last : state.cumulative;
    TopTable table;
    TopStats& stats = table.stats;

    struct RowCounts {
        std::uint64_t own = 0, total = 0, own_on_cpu = 0;
    };
    std::vector<RowCounts> counts(rows_.size());
    const int by_line = query.by_line ? 1 : 0;
    // (row << 32 | wait) -> own off-CPU time: a row's main wait. wait -> time, threads, rows.
    std::unordered_map<std::uint64_t, std::uint64_t> row_waits;
    struct WaitCounts {
        std::uint64_t time = 0;
        std::vector<std::uint32_t> threads;
        std::unordered_map<std::uint32_t, std::uint64_t> by_row;
    };
    std::unordered_map<model::WaitId, WaitCounts> wait_counts;
    for (const auto& [key, sums] : window.counts) {
        if (query.thread && key.thread != *query.thread) continue;
        if (query.wait && key.wait != *query.wait) continue;
        stats.samples += sums.samples;
        if (key.on_cpu) stats.on_cpu += sums.samples;
        if (key.gil) stats.gil += sums.samples;
        stats.errors += sums.errors;
        if (query.view == model::SampleMode::cpu && !key.on_cpu) continue;
        const std::uint64_t weight = sums.weight_ns;
        table.samples += weight;
        const StackRows& rows = stack_rows_[key.stack.value];
        const std::uint32_t* first = row_pool_.data() + rows.offset[by_line];
        RowCounts& own = counts[*first];
        own.own += weight;
        if (key.on_cpu) own.own_on_cpu += weight;
        for (std::uint32_t i = 0; i < rows.length[by_line]; ++i)
            counts[first[i]].total += weight;
        // What waited: off-CPU samples (with their reason, or without one), and runnable
        // threads that waited for a CPU.
        const bool waited = !key.on_cpu || key.wait.value != 0;
        if (!waited) continue;
        if (key.wait.value != 0) row_waits[std::uint64_t{*first} << 32 | key.wait.value] += weight;
        WaitCounts& w = wait_counts[key.wait];
        w.time += weight;
        w.by_row[*first] += weight;
        if (std::find(w.threads.begin(), w.threads.end(), key.thread) == w.threads.end())
            w.threads.push_back(key.thread);
    }

    stats.ticks = window.ticks;
    stats.gil_ticks = window.gil_ticks;
    const bool over = query.interval;
    std::uint64_t end_ns = over ? window.end_ns : state.now_ns();
    const model::RecordingTotals& end = over ? window.end : state.latest;
    stats.elapsed_ns = end_ns > window.start_ns ? end_ns - window.start_ns : 0;
    stats.session_ticks = end.ticks > window.start.ticks ? end.ticks - window.start.ticks : 0;
    stats.session_ns =
        end.elapsed_ns > window.start.elapsed_ns ? end.elapsed_ns - window.start.elapsed_ns : 0;
    stats.waiting = state.latest.waiting && !state.have_tick;
    if (state.have_tick) {
        for (const ThreadSeen& seen : state.seen) {
            if (!seen.seen || seen.time_ns < state.previous_ns) continue;
            ++stats.threads;
            if (seen.on_cpu) ++stats.threads_on_cpu;
        }
    }

    std::vector<std::pair<model::WaitId, std::uint64_t>> main_wait(rows_.size());
    for (const auto& [packed, time] : row_waits) {
        auto& best = main_wait[packed >> 32];
        model::WaitId wait(static_cast<std::uint32_t>(packed & 0xffffffffu));
        if (time > best.second || (time == best.second && wait < best.first)) best = {wait, time};
    }
    for (std::size_t row = 0; row < counts.size(); ++row) {
        if (counts[row].total == 0) continue;
        const RowInfo& info = rows_[row];
        TopRow out;
        out.function = info.function;
        out.file = info.file;
        out.line = info.line;
        out.own = counts[row].own;
        out.total = counts[row].total;
        out.own_on_cpu = counts[row].own_on_cpu;
        if (main_wait[row].second != 0) {
            out.wait = wait_info_[main_wait[row].first.value].label;
            out.wait_time = main_wait[row].second;
        }
        table.rows.push_back(std::move(out));
    }
    for (const auto& [wait, w] : wait_counts) {
        TopWaitRow out;
        out.wait = wait;
        out.label = wait_info_[wait.value].label;
        out.kind = wait_info_[wait.value].kind;
        out.time = w.time;
        out.threads = w.threads.size();
        std::pair<std::uint32_t, std::uint64_t> top{0, 0};
        for (const auto& [row, time] : w.by_row)
            if (time > top.second || (time == top.second && row < top.first)) top = {row, time};
        const RowInfo& info = rows_[top.first];
        out.top_function =
            info.file.empty() || info.line == 0
                ? info.function
                : fmt::format("{} ({}:{})", info.function, short_filename(info.file), info.line);
        table.waits.push_back(std::move(out));
    }
    std::sort(table.waits.begin(), table.waits.end(), [](const TopWaitRow& a, const TopWaitRow& b) {
        return a.time != b.time ? a.time > b.time : a.label < b.label;
    });
    auto name_key = [](const TopRow& r) { return std::tie(r.function, r.file, r.line); };
    auto by_counts = [&](const TopRow& a, const TopRow& b) {
        if (a.own != b.own) return a.own > b.own;
        if (a.total != b.total) return a.total > b.total;
        return name_key(a) < name_key(b);
    };
    auto less = [&](const TopRow& a, const TopRow& b) {
        switch (query.sort) {
        case TopSort::own:
        case TopSort::own_time:
            return by_counts(a, b);
        case TopSort::total:
        case TopSort::total_time:
            if (a.total != b.total) return a.total > b.total;
            return by_counts(a, b);
        case TopSort::on_cpu: {
            // Rows without own samples have no on-CPU share: last.
            double sa = share(a.own_on_cpu, a.own), sb = share(b.own_on_cpu, b.own);
            if (sa != sb) return sa > sb;
            return by_counts(a, b);
        }
        case TopSort::name:
            if (name_key(a) != name_key(b)) return name_key(a) < name_key(b);
            return by_counts(a, b);
        }
        return by_counts(a, b);
    };
    std::sort(table.rows.begin(), table.rows.end(), less);
    if (query.calls) table.calls = calls_view(query);
    return table;
}

std::vector<TopWait> TopModel::waits() const {
    std::lock_guard lock(mutex_);
    return waits_seen_;
}

std::vector<TopThread> TopModel::threads() const {
    std::lock_guard lock(mutex_);
    return threads_;
}

std::string TopModel::python_version() const {
    std::lock_guard lock(mutex_);
    return live_.latest.python_version;
}

std::vector<pid_t> TopModel::pids() const {
    std::lock_guard lock(mutex_);
    return pids_;
}

std::size_t text_width(std::string_view text) noexcept {
    std::size_t width = 0;
    for (char c : text)
        if (!is_continuation(c)) ++width;
    return width;
}

std::string fit_label(std::string_view function, std::string_view file, std::int32_t line,
                      std::size_t width) {
    std::string where = line > 0 ? fmt::format(":{}", line) : "";
    auto label = [&](std::string_view path, bool shortened) {
        if (path.empty()) return std::string(function);
        return fmt::format("{} ({}{}{})", function, shortened ? ".../" : "", path, where);
    };
    std::string full = label(file, false);
    if (text_width(full) <= width) return full;
    if (!file.empty()) {
        // Whole leading directories go first, the longest path that fits stays.
        for (std::size_t slash = file.find('/'); slash != std::string_view::npos;
             slash = file.find('/', slash + 1)) {
            if (slash + 1 >= file.size()) break;
            std::string shorter = label(file.substr(slash + 1), true);
            if (text_width(shorter) <= width) return shorter;
        }
    }
    if (text_width(function) <= width) return std::string(function);
    if (width <= 3) return std::string(tail(function, width));
    std::string_view end = tail(function, width - 3);
    // A qualified name loses whole components: "...handler", not "...s.handler".
    std::size_t dot = end.find('.');
    if (dot != std::string_view::npos && dot + 1 < end.size() &&
        function[function.size() - end.size() - 1] != '.')
        end.remove_prefix(dot + 1);
    return fmt::format("...{}", end);
}

} // namespace spyglass::output
