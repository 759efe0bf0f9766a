// The table behind `spyglass top`. Samples are summed as they come by (thread, stack, on-CPU,
// GIL, complete or not), since the start (or the last reset) and for the current refresh interval;
// rows, one per function or per line, are computed when a table is asked for, from the distinct
// stacks. The sampling thread feeds the model while the UI thread asks for tables: every public
// member locks. The model copies what it needs of a stack when it first sees it, so it never reads
// the frame and stack tables outside sample(), which runs on the thread that fills them.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "spyglass/model/calls.hpp"
#include "spyglass/model/recording.hpp"
#include "spyglass/model/sample.hpp"
#include "spyglass/output/calls.hpp"

namespace spyglass::output {

enum class TopSort : std::uint8_t { own, total, own_time, total_time, on_cpu, name };
inline constexpr int kTopSortCount = 6;
// "%Own", "%Total", "OwnTime", "TotalTime", "OnCPU", "Function".
const char* top_sort_name(TopSort sort) noexcept;

struct TopQuery {
    TopSort sort = TopSort::own;
    bool by_line = false;                // a row per line, else per function
    bool interval = false;               // the last refresh interval, else since start or reset
    std::optional<std::uint32_t> thread; // only this thread (a SampleSink index), else all
    model::SampleMode view = model::SampleMode::wall; // cpu: only on-CPU samples count
    std::optional<model::WaitId> wait;                // only samples that waited for this
    bool waits = false; // the "Waiting on" view: TopTable::waits is what the screen shows
    // The calls view (top --calls): TopTable::calls is what the screen shows. Calls since the
    // start (or reset), of every sample: the interval, the cpu view and the wait filter do not
    // apply; the thread filter does.
    bool calls = false;
};

// Rows count the time the samples stand for (their weight, in nanoseconds), not samples.
struct TopRow {
    std::string function;
    std::string file;             // as the target names it; empty for markers
    std::int32_t line = 0;        // the line, or the function's first line; 0: none
    std::uint64_t own = 0;        // time of the samples with this row innermost
    std::uint64_t total = 0;      // time of the samples with this row anywhere, once each
    std::uint64_t own_on_cpu = 0; // of `own`, the time whose thread was on a CPU
    std::string wait;             // what its own off-CPU time waited for most (top_wait label)
    std::uint64_t wait_time = 0;  // of `own`, the time spent in that wait
};

// One row of the "Waiting on" view: what threads waited for, and for how long.
struct TopWaitRow {
    model::WaitId wait{};     // 0: off-CPU with no reason read
    std::string label;        // "tcp 127.0.0.1:5432", "GIL", "clock_nanosleep" (wait_summary)
    std::string kind;         // "socket", "gil", "sleep"...
    std::uint64_t time = 0;   // weight (ns) of the samples that waited for it
    std::size_t threads = 0;  // distinct threads among them
    std::string top_function; // the innermost frame most of that time was spent under
};

// A wait the model has seen, for the filter to cycle through.
struct TopWait {
    model::WaitId wait{};
    std::string label, kind;
};

struct TopStats {
    std::uint64_t samples = 0;    // thread samples kept (--mode, --gil) of the filtered threads
    std::uint64_t on_cpu = 0;     // of which on a CPU
    std::uint64_t errors = 0;     // of which incomplete (torn, truncated)
    std::uint64_t gil = 0;        // of which holding the GIL
    std::uint64_t ticks = 0;      // passes that kept a sample
    std::uint64_t gil_ticks = 0;  // passes in which some thread held the GIL
    std::uint64_t elapsed_ns = 0; // the time the window covers
    // The session's passes and time in the window (from its progress): the achieved rate.
    std::uint64_t session_ticks = 0;
    std::uint64_t session_ns = 0;
    bool waiting = false; // no Python process yet
    // Threads sampled in the latest pass (or the one before: it may be half done), whatever
    // the filter, and how many of them were on a CPU then.
    std::size_t threads = 0;
    std::size_t threads_on_cpu = 0;
};

struct TopTable {
    TopStats stats;
    std::uint64_t samples = 0;     // what the shares are of: the time the rows count (ns)
    double period_s = 1e-9;        // seconds one unit of a row's counts stands for
    std::vector<TopRow> rows;      // sorted as asked
    std::vector<TopWaitRow> waits; // the "Waiting on" view, longest first
    CallsView calls;               // the calls view: rows by total time, one per function
};

struct TopThread {
    std::uint32_t index = 0;
    model::ThreadInfo info;
};

struct TopModelOptions {
    double rate_hz = 100;
    bool line_numbers = true; // false: rows show no line
    bool calls = false;       // follow calls (top --calls): TopQuery::calls can show them
    bool cpu_calls = false;   // --mode cpu: a call's duration is its CPU time
};

class TopModel final : public model::SampleSink {
  public:
    TopModel(const model::FrameTable& frames, const model::StackTable& stacks,
             const TopModelOptions& options);

    void thread(std::uint32_t index, const model::ThreadInfo& info) override;
    void sample(const model::Sample& sample) override;
    // The session's totals (from its progress callback), for elapsed time and rate.
    void progress(const model::RecordingTotals& progress);

    // Ends the current interval: it becomes the one `TopQuery::interval` shows.
    void next_interval();
    // Forgets every sample: the counts start again from now.
    void reset();
    // While paused, tables show the counts as they were when pausing; sampling goes on.
    void set_paused(bool paused);

    [[nodiscard]] TopTable table(const TopQuery& query) const;
    [[nodiscard]] std::vector<TopThread> threads() const; // by index
    [[nodiscard]] std::vector<TopWait> waits() const;     // in the order first seen
    [[nodiscard]] std::vector<pid_t> pids() const;        // in the order first seen
    [[nodiscard]] std::string python_version() const;     // empty until a process is sampled

  private:
    struct Counts {
        std::uint64_t samples = 0, errors = 0, weight_ns = 0;
    };
    struct Window {
        std::unordered_map<model::SampleKey, Counts, model::SampleKeyHash> counts;
        std::uint64_t ticks = 0, gil_ticks = 0;
        std::uint64_t start_ns = 0, end_ns = 0; // session time; end: once the window is over
        model::RecordingTotals start, end;      // the session's, at the same moments
    };
    struct ThreadSeen {
        std::uint64_t time_ns = 0;
        bool on_cpu = false;
        bool seen = false;
    };
    struct State {
        Window cumulative, current, last;
        model::RecordingTotals latest;
        std::vector<ThreadSeen> seen;  // by thread index
        std::uint64_t tick_ns = 0;     // the latest pass's time
        std::uint64_t previous_ns = 0; // the pass before it
        bool tick_gil = false;         // some thread held the GIL in the latest pass
        bool have_tick = false;
        [[nodiscard]] std::uint64_t now_ns() const noexcept;
        void restart(Window& window) const;
    };
    struct StackRows {
        std::uint32_t offset[2]; // into row_pool_: [0] by function, [1] by line
        std::uint32_t length[2];
        bool known = false;
    };
    struct RowInfo {
        std::string function, file;
        std::int32_t line = 0;
    };
    void learn_stack(model::StackId stack);
    void learn_call_names(std::span<const model::FrameId> frames);
    [[nodiscard]] CallsView calls_view(const TopQuery& query) const; // with the lock held
    void learn_wait(model::WaitId wait);
    std::uint32_t row_of(model::FrameId frame, bool by_line);
    std::uint32_t intern_row(RowInfo info);

    const model::FrameTable& frames_;
    const model::StackTable& stacks_;
    TopModelOptions options_;
    mutable std::mutex mutex_;
    State live_;
    std::optional<State> frozen_;
    std::vector<TopThread> threads_;
    std::vector<pid_t> pids_;
    // Rows, learned on the sampling thread, immutable once made.
    std::vector<RowInfo> rows_;
    std::unordered_map<std::string, std::uint32_t> row_index_;
    std::vector<std::uint32_t> frame_rows_[2]; // FrameId -> row + 1, 0 until learned
    std::vector<StackRows> stack_rows_;        // by StackId
    std::vector<std::uint32_t> row_pool_;      // per stack: its distinct rows, innermost first
    std::vector<std::uint32_t> scratch_;
    std::vector<std::uint32_t> row_stamp_; // by row: the stack being learned that has it
    std::uint32_t stamp_ = 0;
    struct WaitInfo {
        std::string label, kind;
        bool known = false;
    };
    std::vector<WaitInfo> wait_info_; // by WaitId, copied when first seen
    std::vector<TopWait> waits_seen_;
    // With TopModelOptions::calls: calls per thread (made, and made again after a reset, on the
    // sampling thread: it reads the tables), the table as it was when pausing, and the names
    // of its functions and files, copied from the tables as stacks are learned.
    std::unique_ptr<model::CallTracker> calls_;
    bool calls_restart_ = false;
    std::optional<model::CallTable> frozen_calls_;
    std::unordered_map<std::uint32_t, std::string> call_names_; // by StringId
};

// Fits "function (file:line)" into `width` characters (UTF-8 code points), giving up first the
// leading directories of the file, then the location, and only then the start of the function
// name (its end, the innermost name, stays). `file` is shown as given; empty: no location.
std::string fit_label(std::string_view function, std::string_view file, std::int32_t line,
                      std::size_t width);
// Display width of UTF-8 text, in code points.
std::size_t text_width(std::string_view text) noexcept;

} // namespace spyglass::output
