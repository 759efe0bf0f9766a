// spyglass top's model on synthetic samples: own and total time (recursion counted once), every
// sort, interval and cumulative windows, reset and pause, the thread filter, the wall and cpu
// views, rows per line or per function, --mode/--gil, the header's counts; the keys; labels
// fitted to a width; the plain-text table.
#include <map>

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "spyglass/output/top_model.hpp"
#include "spyglass/output/top_screen.hpp"

namespace {

using namespace spyglass;
using model::FrameId;
using model::SampleMode;
using model::StackId;
using output::TopModel;
using output::TopQuery;
using output::TopRow;
using output::TopSort;
using output::TopTable;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

struct Synthetic {
    model::FrameTable frames;
    model::StackTable stacks;
    output::TopModel model;
    std::uint64_t tick = 0;

    explicit Synthetic(output::TopModelOptions options = {}) : model(frames, stacks, options) {
        for (std::uint32_t t = 0; t < 3; ++t)
            model.thread(t, model::ThreadInfo{100, static_cast<pid_t>(100 + t), t,
                                              t == 0 ? "MainThread" : fmt::format("w{}", t)});
    }
    FrameId frame(const char* function, int line, int first_line = 1,
                  const char* file = "/app/lib/python3.12/site-packages/pkg/mod.py") {
        return frames.intern(model::Frame{frames.strings().intern(function),
                                          frames.strings().intern(file), line, first_line,
                                          model::FrameKind::python});
    }
    model::WaitId wait(model::WaitKind kind, const char* syscall, const char* target) {
        return frames.waits().intern(
            {kind, *syscall ? frames.strings().intern(syscall) : model::StringId{},
             *target ? frames.strings().intern(target) : model::StringId{}});
    }
    StackId stack(std::initializer_list<FrameId> innermost_first) {
        std::vector<FrameId> ids(innermost_first);
        return stacks.intern(ids);
    }
    static constexpr std::uint64_t kPeriodNs = 10'000'000;
    // `count` passes in which `thread` is sampled with `stack`, each standing for `weight_ns`.
    void add(std::uint32_t thread, StackId stack, std::uint64_t count, bool on_cpu = true,
             bool gil = false, std::uint64_t weight_ns = kPeriodNs, model::WaitId wait = {}) {
        for (std::uint64_t i = 0; i < count; ++i) {
            model::Sample sample;
            sample.key.thread = thread;
            sample.time_ns = ++tick * kPeriodNs;
            sample.weight_ns = weight_ns;
            sample.key.stack = stack;
            sample.key.on_cpu = on_cpu;
            sample.key.gil = gil;
            sample.key.wait = wait;
            model.sample(sample);
        }
    }
    // Rows count time (ns): in periods, the numbers below read as samples of one period each.
    TopTable table(TopQuery query = {}) const {
        TopTable t = model.table(query);
        t.samples /= kPeriodNs;
        for (TopRow& r : t.rows) {
            r.own /= kPeriodNs;
            r.total /= kPeriodNs;
            r.own_on_cpu /= kPeriodNs;
            r.wait_time /= kPeriodNs;
        }
        for (output::TopWaitRow& w : t.waits)
            w.time /= kPeriodNs;
        t.period_s *= static_cast<double>(kPeriodNs);
        return t;
    }
};

std::vector<std::string> names(const TopTable& table) {
    std::vector<std::string> out;
    for (const TopRow& row : table.rows)
        out.push_back(row.function);
    return out;
}

const TopRow& row(const TopTable& table, std::string_view function) {
    for (const TopRow& r : table.rows)
        if (r.function == function) return r;
    throw std::runtime_error("no row " + std::string(function));
}

TEST(TopModel, OwnIsInnermostTotalIsAnywhere) {
    Synthetic s;
    FrameId main = s.frame("main", 10), work = s.frame("work", 20), leaf = s.frame("leaf", 30);
    s.add(0, s.stack({leaf, work, main}), 6);
    s.add(1, s.stack({work, main}), 3, false);
    s.add(2, s.stack({}), 1, false);
    TopTable t = s.table();
    EXPECT_EQ(t.samples, 10u);
    EXPECT_THAT(names(t), ElementsAre("leaf", "work", "[no Python frames]", "main"));
    EXPECT_EQ(row(t, "leaf").own, 6u);
    EXPECT_EQ(row(t, "leaf").total, 6u);
    EXPECT_EQ(row(t, "work").own, 3u);
    EXPECT_EQ(row(t, "work").total, 9u);
    EXPECT_EQ(row(t, "work").own_on_cpu, 0u);
    EXPECT_EQ(row(t, "leaf").own_on_cpu, 6u);
    EXPECT_EQ(row(t, "main").own, 0u);
    EXPECT_EQ(row(t, "main").total, 9u);
    EXPECT_EQ(row(t, "[no Python frames]").own, 1u);
    EXPECT_EQ(row(t, "[no Python frames]").file, "");
    EXPECT_DOUBLE_EQ(t.period_s, 0.01);
}

TEST(TopModel, RecursionCountsOncePerSample) {
    Synthetic s;
    FrameId main = s.frame("main", 1), fib = s.frame("fib", 5), helper = s.frame("helper", 9);
    s.add(0, s.stack({fib, helper, fib, fib, main}), 4);
    s.add(0, s.stack({helper, fib, main}), 2);
    TopTable t = s.table();
    EXPECT_EQ(t.samples, 6u);
    EXPECT_EQ(row(t, "fib").own, 4u);
    EXPECT_EQ(row(t, "fib").total, 6u);
    EXPECT_EQ(row(t, "helper").own, 2u);
    EXPECT_EQ(row(t, "helper").total, 6u);
    EXPECT_EQ(row(t, "main").total, 6u);
}

TEST(TopModel, SortsByEveryColumn) {
    Synthetic s;
    FrameId root = s.frame("root", 1), a = s.frame("a_many_own", 2), b = s.frame("b_caller", 3),
            c = s.frame("c_on_cpu", 4);
    s.add(0, s.stack({a, root}), 5, false);
    s.add(0, s.stack({c, b, root}), 3, true);
    s.add(0, s.stack({b, root}), 1, false);
    auto order = [&](TopSort sort) {
        TopQuery query;
        query.sort = sort;
        return names(s.table(query));
    };
    // own: a 5, c 3, b 1, root 0; total: root 9, a 5, b 4, c 3; on-CPU share: c 100%, a 0%,
    // b 0% (a before b by own), root none.
    EXPECT_THAT(order(TopSort::own), ElementsAre("a_many_own", "c_on_cpu", "b_caller", "root"));
    EXPECT_THAT(order(TopSort::own_time),
                ElementsAre("a_many_own", "c_on_cpu", "b_caller", "root"));
    EXPECT_THAT(order(TopSort::total), ElementsAre("root", "a_many_own", "b_caller", "c_on_cpu"));
    EXPECT_THAT(order(TopSort::total_time),
                ElementsAre("root", "a_many_own", "b_caller", "c_on_cpu"));
    EXPECT_THAT(order(TopSort::on_cpu), ElementsAre("c_on_cpu", "a_many_own", "b_caller", "root"));
    EXPECT_THAT(order(TopSort::name), ElementsAre("a_many_own", "b_caller", "c_on_cpu", "root"));
}

TEST(TopModel, IntervalShowsOnlyTheLastOneCumulativeEverything) {
    Synthetic s;
    FrameId early = s.frame("early", 1), late = s.frame("late", 2);
    TopQuery interval;
    interval.interval = true;
    s.add(0, s.stack({early}), 4);
    EXPECT_TRUE(s.table(interval).rows.empty()); // no interval has ended yet
    s.model.next_interval();
    EXPECT_THAT(names(s.table(interval)), ElementsAre("early"));
    s.add(0, s.stack({late}), 2);
    s.model.next_interval();
    TopTable last = s.table(interval);
    EXPECT_THAT(names(last), ElementsAre("late"));
    EXPECT_EQ(last.samples, 2u);
    EXPECT_EQ(last.stats.ticks, 2u);
    EXPECT_EQ(last.stats.elapsed_ns, 20'000'000u);
    TopTable all = s.table();
    EXPECT_THAT(names(all), ElementsAre("early", "late"));
    EXPECT_EQ(all.samples, 6u);

    s.model.reset();
    EXPECT_TRUE(s.table().rows.empty());
    EXPECT_TRUE(s.table(interval).rows.empty());
    s.add(0, s.stack({late}), 1);
    EXPECT_THAT(names(s.table()), ElementsAre("late"));
    EXPECT_EQ(s.table().stats.samples, 1u);
}

TEST(TopModel, PauseFreezesTheTablesWhileSamplingGoesOn) {
    Synthetic s;
    FrameId f = s.frame("f", 1), g = s.frame("g", 2);
    s.add(0, s.stack({f}), 2);
    s.model.set_paused(true);
    s.add(0, s.stack({g}), 3);
    EXPECT_THAT(names(s.table()), ElementsAre("f"));
    s.model.set_paused(false);
    EXPECT_THAT(names(s.table()), ElementsAre("g", "f"));
}

TEST(TopModel, ThreadFilter) {
    Synthetic s;
    FrameId f = s.frame("f", 1), g = s.frame("g", 2);
    s.add(0, s.stack({f}), 2, true, true);
    s.add(1, s.stack({g}), 3, false);
    TopQuery query;
    query.thread = 1;
    TopTable t = s.table(query);
    EXPECT_THAT(names(t), ElementsAre("g"));
    EXPECT_EQ(t.samples, 3u);
    EXPECT_EQ(t.stats.samples, 3u);
    EXPECT_EQ(t.stats.on_cpu, 0u);
    EXPECT_EQ(t.stats.gil, 0u);
    query.thread = 0;
    EXPECT_THAT(names(s.table(query)), ElementsAre("f"));
    EXPECT_EQ(s.table(query).stats.gil, 2u);
    query.thread = 2;
    EXPECT_TRUE(s.table(query).rows.empty());
    auto threads = s.model.threads();
    ASSERT_EQ(threads.size(), 3u);
    EXPECT_EQ(threads[1].info.name, "w1");
    EXPECT_THAT(s.model.pids(), ElementsAre(100));
}

TEST(TopModel, CpuViewCountsOnlyRunningSamples) {
    Synthetic s;
    FrameId run = s.frame("run", 1), wait = s.frame("wait", 2);
    s.add(0, s.stack({run}), 2, true);
    s.add(1, s.stack({wait}), 6, false);
    TopQuery query;
    EXPECT_THAT(names(s.table(query)), ElementsAre("wait", "run"));
    query.view = SampleMode::cpu;
    TopTable t = s.table(query);
    EXPECT_THAT(names(t), ElementsAre("run"));
    EXPECT_EQ(t.samples, 2u);
    EXPECT_EQ(t.stats.samples, 8u); // the header still tells running from waiting
    EXPECT_EQ(t.stats.on_cpu, 2u);
}

TEST(TopModel, RowsWeighSamplesByTheTimeTheyStandFor) {
    // A sample after a late tick stands for the ticks it missed: shares follow time.
    Synthetic s;
    FrameId busy = s.frame("busy", 1), idle = s.frame("idle", 2);
    s.add(0, s.stack({busy}), 1, true, true, 3 * Synthetic::kPeriodNs);
    s.add(0, s.stack({idle}), 3, false);
    TopTable t = s.table();
    EXPECT_EQ(t.samples, 6u);
    EXPECT_EQ(row(t, "busy").own, 3u);
    EXPECT_EQ(row(t, "idle").own, 3u);
    EXPECT_EQ(t.stats.samples, 4u); // the header counts samples
}

TEST(TopModel, RowsPerLineOrPerFunction) {
    Synthetic s;
    FrameId a = s.frame("loop", 12, 10), b = s.frame("loop", 14, 10), main = s.frame("main", 3, 1);
    s.add(0, s.stack({a, main}), 3);
    s.add(0, s.stack({b, main}), 1);
    TopTable by_function = s.table();
    ASSERT_EQ(by_function.rows.size(), 2u);
    EXPECT_EQ(by_function.rows[0].function, "loop");
    EXPECT_EQ(by_function.rows[0].line, 10); // the function's first line
    EXPECT_EQ(by_function.rows[0].own, 4u);
    TopQuery query;
    query.by_line = true;
    TopTable by_line = s.table(query);
    ASSERT_EQ(by_line.rows.size(), 3u);
    EXPECT_EQ(by_line.rows[0].line, 12);
    EXPECT_EQ(by_line.rows[0].own, 3u);
    EXPECT_EQ(by_line.rows[1].line, 14);
    EXPECT_EQ(by_line.rows[2].function, "main");
    EXPECT_EQ(by_line.rows[2].line, 3);

    output::TopModelOptions no_lines;
    no_lines.line_numbers = false;
    Synthetic n(no_lines);
    n.add(0, n.stack({n.frame("loop", 12, 10)}), 1);
    n.add(0, n.stack({n.frame("loop", 14, 10)}), 1);
    query.by_line = true;
    ASSERT_EQ(n.table(query).rows.size(), 1u);
    EXPECT_EQ(n.table(query).rows[0].line, 0);
}

TEST(TopModel, HeaderCounts) {
    Synthetic s;
    FrameId f = s.frame("f", 1);
    StackId stack = s.stack({f});
    model::StackId torn = s.stack({s.frames.marker("<unreadable>")});
    // Pass 1: thread 0 on-CPU with the GIL, thread 1 waiting. Pass 2: both waiting, one torn.
    auto sample = [&](std::uint32_t thread, std::uint64_t time, StackId id, bool on_cpu, bool gil,
                      model::StackStatus status = model::StackStatus::ok) {
        model::Sample one;
        one.key = {thread, id, on_cpu, gil};
        one.time_ns = time;
        one.weight_ns = Synthetic::kPeriodNs;
        one.status = status;
        s.model.sample(one);
    };
    sample(0, 10, stack, true, true);
    sample(1, 10, stack, false, false);
    sample(0, 20, stack, false, false);
    sample(1, 20, torn, false, false, model::StackStatus::torn);
    model::RecordingTotals progress;
    progress.elapsed_ns = 2'000'000'000;
    progress.ticks = 190;
    s.model.progress(progress);
    TopTable t = s.table();
    EXPECT_EQ(t.stats.samples, 4u);
    EXPECT_EQ(t.stats.on_cpu, 1u);
    EXPECT_EQ(t.stats.errors, 1u);
    EXPECT_EQ(t.stats.ticks, 2u);
    EXPECT_EQ(t.stats.gil_ticks, 1u);
    EXPECT_EQ(t.stats.threads, 2u);
    EXPECT_EQ(t.stats.threads_on_cpu, 0u);
    EXPECT_EQ(t.stats.elapsed_ns, 2'000'000'000u);
    EXPECT_EQ(t.stats.session_ticks, 190u);
    EXPECT_EQ(row(t, "<unreadable>").own, 1u);
}

// What threads waited for: the "Waiting on" rows (longest first, with how many threads and
// the function most of it was spent under), each function's main wait, and the wait filter.
TEST(TopModel, WaitingOn) {
    Synthetic s;
    FrameId main = s.frame("main", 1), query = s.frame("query", 10), take = s.frame("take", 20);
    model::WaitId db = s.wait(model::WaitKind::socket, "recvfrom", "tcp 127.0.0.1:5432");
    model::WaitId gil = s.wait(model::WaitKind::gil, "futex", "GIL");
    model::WaitId starved = s.wait(model::WaitKind::cpu_starved, "", "");
    StackId in_query = s.stack({query, main}), in_take = s.stack({take, main});
    s.add(0, in_query, 5, false, false, Synthetic::kPeriodNs, db);
    s.add(1, in_query, 3, false, false, Synthetic::kPeriodNs, db);
    s.add(0, in_query, 2, false, false, Synthetic::kPeriodNs, gil);
    s.add(2, in_take, 4, false, false, Synthetic::kPeriodNs, gil);
    s.add(2, in_take, 1, false); // off-CPU, no reason read
    s.add(1, in_take, 2, true, false, Synthetic::kPeriodNs, starved);
    s.add(0, in_take, 3, true, true); // running: no wait

    TopTable table = s.table();
    ASSERT_EQ(table.waits.size(), 4u);
    EXPECT_EQ(table.waits[0].label, "tcp 127.0.0.1:5432");
    EXPECT_EQ(table.waits[0].kind, "socket");
    EXPECT_EQ(table.waits[0].time, 8u);
    EXPECT_EQ(table.waits[0].threads, 2u);
    EXPECT_EQ(table.waits[0].top_function, "query (pkg/mod.py:1)"); // by function: first line
    EXPECT_EQ(table.waits[1].label, "GIL");
    EXPECT_EQ(table.waits[1].time, 6u);
    EXPECT_EQ(table.waits[1].top_function, "take (pkg/mod.py:1)");
    EXPECT_EQ(table.waits[2].label, "cpu-starved");
    EXPECT_EQ(table.waits[2].time, 2u);
    EXPECT_EQ(table.waits[3].label, "(reason not read)");
    EXPECT_EQ(table.waits[3].time, 1u);
    // A row's column: what most of its own waiting was, and how much of its own time.
    EXPECT_EQ(row(table, "query").wait, "tcp 127.0.0.1:5432");
    EXPECT_EQ(row(table, "query").wait_time, 8u);
    EXPECT_EQ(row(table, "take").wait, "GIL");
    EXPECT_EQ(row(table, "main").wait, ""); // never innermost
    EXPECT_THAT(output::top_row(row(table, "query"), table, false, 0),
                HasSubstr("     0% 80% tcp 127.0.0.1:5432  query (pkg/mod.py:1)"));

    // The filter: only the samples that waited on the database.
    TopQuery only_db;
    only_db.wait = db;
    TopTable filtered = s.table(only_db);
    EXPECT_EQ(filtered.samples, 8u);
    EXPECT_THAT(names(filtered), ElementsAre("query", "main"));
    ASSERT_EQ(filtered.waits.size(), 1u);

    // The waits the filter cycles through, in the order they came.
    std::vector<output::TopWait> waits = s.model.waits();
    ASSERT_EQ(waits.size(), 3u);
    EXPECT_EQ(waits[0].wait, db);
    EXPECT_EQ(waits[1].label, "GIL");
    EXPECT_EQ(waits[2].kind, "cpu-starved");

    // The plain "Waiting on" table.
    output::TopView view;
    view.query.waits = true;
    std::string text = output::plain_table(s.model.table(view.query), output::TopTarget{}, view,
                                           s.model.threads(), 0, 0);
    EXPECT_THAT(text, HasSubstr(" %Wall      Time Threads Kind         Waiting on  (mostly "
                                "under)\n"));
    EXPECT_THAT(text, HasSubstr(" 40.0%     0.08s       2 socket       tcp 127.0.0.1:5432  "
                                "(query (pkg/mod.py:1))\n"));
    EXPECT_THAT(text, HasSubstr("View wall | Waiting on | Cumulative | All threads | Sort time"));
    view.query.wait = gil;
    text = output::plain_table(s.model.table(view.query), output::TopTarget{}, view,
                               s.model.threads(), 0, 0);
    EXPECT_THAT(text, HasSubstr("| Waiting on GIL\n"));
}

TEST(TopLabel, FitsTheWidthKeepingTheFunctionName) {
    using output::fit_label;
    const char* file = "/usr/lib/python3.12/site-packages/pkg/sub/mod.py";
    std::string full = "handle (/usr/lib/python3.12/site-packages/pkg/sub/mod.py:42)";
    EXPECT_EQ(fit_label("handle", file, 42, 200), full);
    EXPECT_EQ(fit_label("handle", file, 42, full.size()), full);
    EXPECT_EQ(fit_label("handle", file, 42, full.size() - 1),
              "handle (.../lib/python3.12/site-packages/pkg/sub/mod.py:42)");
    EXPECT_EQ(fit_label("handle", file, 42, 30), "handle (.../pkg/sub/mod.py:42)");
    EXPECT_EQ(fit_label("handle", file, 42, 22), "handle (.../mod.py:42)");
    EXPECT_EQ(fit_label("handle", file, 42, 21), "handle");
    EXPECT_EQ(fit_label("handle", file, 0, 40), "handle (.../pkg/sub/mod.py)");
    EXPECT_EQ(fit_label("handle", "", 0, 10), "handle");
    EXPECT_EQ(fit_label("handle", "mod.py", 7, 15), "handle");
    EXPECT_EQ(fit_label("handle", "mod.py", 7, 16), "handle");
    EXPECT_EQ(fit_label("handle", "mod.py", 7, 17), "handle (mod.py:7)");
    // A long qualified name keeps its end: the innermost name.
    EXPECT_EQ(fit_label("Server.run.<locals>.handler", file, 1, 12), "...handler");
    EXPECT_EQ(fit_label("Server.run.<locals>.handler", file, 1, 3), "ler");
    for (std::size_t width = 1; width < 70; ++width)
        EXPECT_LE(output::text_width(fit_label("Server.handle_request", file, 42, width)), width);
    // Widths are in characters, not bytes.
    EXPECT_EQ(output::text_width("größe"), 5u);
    EXPECT_EQ(fit_label("größe", "", 0, 5), "größe");
    EXPECT_EQ(fit_label("xgröße", "", 0, 5), "...ße");
}

TEST(TopKeys, SortFilterToggles) {
    output::TopView view;
    std::vector<output::TopThread> threads = {{0, {}}, {2, {}}};
    using output::apply_key;
    using output::TopAction;
    EXPECT_EQ(apply_key(view, '2', threads), TopAction::redraw);
    EXPECT_EQ(view.query.sort, TopSort::total);
    apply_key(view, '6', threads);
    EXPECT_EQ(view.query.sort, TopSort::name);
    apply_key(view, '>', threads);
    EXPECT_EQ(view.query.sort, TopSort::own);
    apply_key(view, '<', threads);
    EXPECT_EQ(view.query.sort, TopSort::name);
    apply_key(view, 'l', threads);
    EXPECT_TRUE(view.query.by_line);
    apply_key(view, 'i', threads);
    EXPECT_TRUE(view.query.interval);
    apply_key(view, 'c', threads);
    EXPECT_EQ(view.query.view, SampleMode::cpu);
    apply_key(view, 'c', threads);
    EXPECT_EQ(view.query.view, SampleMode::wall);

    apply_key(view, 't', threads);
    EXPECT_EQ(view.query.thread, 0u);
    apply_key(view, 't', threads);
    EXPECT_EQ(view.query.thread, 2u);
    apply_key(view, 't', threads);
    EXPECT_FALSE(view.query.thread);
    apply_key(view, 'T', threads);
    EXPECT_EQ(view.query.thread, 2u);

    std::vector<output::TopWait> waits = {{model::WaitId{3}, "GIL", "gil"},
                                          {model::WaitId{7}, "tcp 10.0.0.1:80", "socket"}};
    apply_key(view, 'v', threads, waits);
    EXPECT_TRUE(view.query.waits);
    apply_key(view, 'w', threads, waits);
    EXPECT_EQ(view.query.wait, model::WaitId{3});
    apply_key(view, 'w', threads, waits);
    EXPECT_EQ(view.query.wait, model::WaitId{7});
    apply_key(view, 'w', threads, waits);
    EXPECT_FALSE(view.query.wait);
    apply_key(view, 'W', threads, waits);
    EXPECT_EQ(view.query.wait, model::WaitId{7});
    apply_key(view, 'v', threads, waits);
    EXPECT_FALSE(view.query.waits);

    EXPECT_EQ(apply_key(view, 'p', threads), TopAction::pause);
    EXPECT_TRUE(view.paused);
    EXPECT_EQ(apply_key(view, 'r', threads), TopAction::reset);
    EXPECT_EQ(apply_key(view, 'h', threads), TopAction::redraw);
    EXPECT_TRUE(view.help);
    EXPECT_EQ(apply_key(view, 'l', threads), TopAction::redraw); // closes the help only
    EXPECT_FALSE(view.help);
    EXPECT_TRUE(view.query.by_line);
    EXPECT_EQ(apply_key(view, 'x', threads), TopAction::none);
    EXPECT_EQ(apply_key(view, 'q', threads), TopAction::quit);
}

TEST(TopPlain, HeaderAndRowsAsPlainText) {
    Synthetic s;
    FrameId burn = s.frame("burn", 20, 20, "/w/top_target.py"),
            wait = s.frame("wait_here", 27, 27, "/w/top_target.py");
    s.add(0, s.stack({burn}), 100, true, true);
    s.add(1, s.stack({wait}), 300, false);
    model::RecordingTotals progress;
    progress.elapsed_ns = 4'000'000'000;
    progress.ticks = 400;
    s.model.progress(progress);
    output::TopTarget target;
    target.pids = {100};
    target.command = {"python3", "app.py"};
    target.python_version = "3.12.1";
    output::TopView view;
    view.query.thread = 1;
    std::string text =
        output::plain_table(s.model.table(view.query), target, view, s.model.threads(), 0, 0);
    EXPECT_THAT(text, HasSubstr("spyglass top  pid 100  Python 3.12.1  python3 app.py\n"));
    EXPECT_THAT(text, HasSubstr("Elapsed 4.0s  Samples 300  Rate 100.0 Hz (asked 100)  Errors 0  "
                                "Threads 1 (0 on-CPU)\n"));
    EXPECT_THAT(text, HasSubstr("On-CPU 0.0%  Waiting 100.0%  GIL 0.0%\n"));
    EXPECT_THAT(text, HasSubstr("View wall | By function | Cumulative | Thread 101 (w1) | Sort "
                                "%Own\n"));
    EXPECT_THAT(text, HasSubstr("  %Own  %Total   OwnTime  TotalTime  OnCPU Waiting on           "
                                "   Function (file:line)\n"
                                "100.0%  100.0%     3.00s      3.00s     0% -                     "
                                "  wait_here (/w/top_target.py:27)\n"));
    EXPECT_THAT(text, Not(HasSubstr("burn")));
    EXPECT_EQ(text.find('\x1b'), std::string::npos);

    view.query.thread.reset();
    text = output::plain_table(s.model.table(view.query), target, view, s.model.threads(), 60, 1);
    EXPECT_THAT(text, HasSubstr("GIL 25.0%"));
    EXPECT_THAT(text, HasSubstr(" 75.0%   75.0%     0%  wait_here (/w/top_target.py:27)\n"));
    EXPECT_THAT(text, HasSubstr("(1 more rows)\n"));

    // Too narrow for every column beside a readable name: the time columns go, then the wait.
    TopTable table = s.model.table(view.query);
    std::size_t name_column = 0;
    EXPECT_EQ(output::top_titles(50, &name_column), "  %Own  %Total  OnCPU  Function (file:line)");
    EXPECT_EQ(name_column, 23u);
    EXPECT_EQ(output::top_row(table.rows[0], table, false, 50), " 75.0%   75.0%     0%  wait_here");
    EXPECT_EQ(output::top_titles(80, &name_column),
              "  %Own  %Total  OnCPU Waiting on              Function (file:line)");
    EXPECT_EQ(name_column, 46u);
    EXPECT_EQ(output::top_row(table.rows[0], table, false, 100),
              " 75.0%   75.0%     3.00s      3.00s     0% -                       wait_here "
              "(/w/top_target.py:27)");
    EXPECT_EQ(output::top_row(table.rows[0], table, false, 40), " 75.0%   75.0%     0%  wait_here");
    output::top_titles(0, &name_column);
    EXPECT_EQ(name_column, 67u);
}

} // namespace
