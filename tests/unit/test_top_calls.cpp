// spyglass top --calls: the model follows calls per thread and shows them merged over threads
// or of one thread, frozen while paused, started again by a reset; the key that switches to
// them; the plain table's columns (those of -f calls).
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "spyglass/output/top_model.hpp"
#include "spyglass/output/top_screen.hpp"

namespace {

using namespace spyglass;
using model::FrameId;
using model::StackId;
using output::CallRow;
using output::TopQuery;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr std::uint64_t kPeriodNs = 10'000'000;

struct Calls {
    model::FrameTable frames;
    model::StackTable stacks;
    output::TopModel model;
    std::uint64_t tick = 0;
    FrameId main_frame, work;
    StackId outer, inner;

    explicit Calls(bool calls = true) : model(frames, stacks, options(calls)) {
        for (std::uint32_t t = 0; t < 2; ++t)
            model.thread(t, model::ThreadInfo{100, static_cast<pid_t>(100 + t), t,
                                              t == 0 ? "MainThread" : "w1"});
        main_frame = frame("main", 1);
        work = frame("work", 10);
        outer = stacks.intern(std::vector<FrameId>{main_frame});
        inner = stacks.intern(std::vector<FrameId>{work, main_frame});
    }
    static output::TopModelOptions options(bool calls) {
        output::TopModelOptions out;
        out.calls = calls;
        return out;
    }
    FrameId frame(const char* function, int first_line) {
        return frames.intern(model::Frame{frames.strings().intern(function),
                                          frames.strings().intern("/srv/app.py"), first_line + 1,
                                          first_line, model::FrameKind::python});
    }
    void add(std::uint32_t thread, StackId stack, std::uint16_t new_calls) {
        model::Sample sample;
        sample.key.thread = thread;
        sample.key.stack = stack;
        sample.key.on_cpu = true;
        sample.time_ns = ++tick * kPeriodNs;
        sample.weight_ns = kPeriodNs;
        sample.new_calls = new_calls;
        model.sample(sample);
    }
    // In `thread`: main running from the start; one call of work seen in 2 samples, ended.
    void one_call(std::uint32_t thread) {
        add(thread, outer, 1);
        add(thread, inner, 1);
        add(thread, inner, 0);
        add(thread, outer, 0);
    }
    output::CallsView calls(std::optional<std::uint32_t> thread = std::nullopt) const {
        TopQuery query;
        query.calls = true;
        query.thread = thread;
        return model.table(query).calls;
    }
};

const CallRow* row(const output::CallsView& view, std::string_view function) {
    for (const CallRow& r : view.rows)
        if (r.function == function) return &r;
    return nullptr;
}

TEST(TopCalls, MergedOverThreadsOrOfOne) {
    Calls calls;
    calls.one_call(0);
    calls.one_call(1);
    output::CallsView all = calls.calls();
    EXPECT_TRUE(all.known);
    EXPECT_FALSE(all.per_thread);
    ASSERT_EQ(all.rows.size(), 2u);
    // By total time: main (8 samples) before work (4).
    EXPECT_EQ(all.rows[0].function, "main");
    EXPECT_EQ(all.rows[0].file, "/srv/app.py");
    EXPECT_EQ(all.rows[0].stats.first_line, 1);
    EXPECT_EQ(all.rows[0].stats.open_calls, 2u);
    EXPECT_EQ(all.rows[0].stats.total_ns, 8 * kPeriodNs);
    const CallRow* work = row(all, "work");
    ASSERT_NE(work, nullptr);
    EXPECT_EQ(work->stats.calls, 2u);
    EXPECT_EQ(work->stats.short_calls, 0u);
    EXPECT_EQ(work->stats.durations.count(), 2u);
    EXPECT_EQ(work->stats.durations.max_ns(), 2 * kPeriodNs);
    EXPECT_EQ(work->stats.total_ns, 4 * kPeriodNs);
    EXPECT_EQ(work->stats.self_ns, 4 * kPeriodNs);
    EXPECT_EQ(all.open_calls, 2u);

    output::CallsView one = calls.calls(1);
    ASSERT_NE(row(one, "work"), nullptr);
    EXPECT_EQ(row(one, "work")->stats.calls, 1u);
    EXPECT_EQ(row(one, "main")->stats.total_ns, 4 * kPeriodNs);

    // Without the calls query (or without --calls) nothing is followed or shown.
    EXPECT_TRUE(calls.model.table(TopQuery{}).calls.rows.empty());
    Calls off(false);
    off.one_call(0);
    EXPECT_TRUE(off.calls().rows.empty());
}

TEST(TopCalls, PauseFreezesResetStartsAgain) {
    Calls calls;
    calls.one_call(0);
    calls.model.set_paused(true);
    calls.one_call(0);
    EXPECT_EQ(row(calls.calls(), "work")->stats.calls, 1u);
    calls.model.set_paused(false);
    EXPECT_EQ(row(calls.calls(), "work")->stats.calls, 2u);

    calls.model.reset();
    EXPECT_TRUE(calls.calls().rows.empty());
    EXPECT_TRUE(calls.calls().known);
    calls.add(0, calls.inner, 0); // work and main were running at the reset: open
    calls.add(0, calls.outer, 0);
    output::CallsView after = calls.calls();
    ASSERT_NE(row(after, "work"), nullptr);
    EXPECT_EQ(row(after, "work")->stats.calls, 0u);
    EXPECT_EQ(row(after, "work")->stats.open_calls, 1u);
}

TEST(TopCalls, KeyKSwitchesWhenCallsAreFollowed) {
    output::TopView view;
    EXPECT_EQ(output::apply_key(view, 'k', {}), output::TopAction::none);
    EXPECT_FALSE(view.query.calls);
    view.calls_available = true;
    EXPECT_EQ(output::apply_key(view, 'k', {}), output::TopAction::redraw);
    EXPECT_TRUE(view.query.calls);
    EXPECT_EQ(output::apply_key(view, 'v', {}), output::TopAction::redraw);
    EXPECT_TRUE(view.query.waits);
    EXPECT_FALSE(view.query.calls);
    EXPECT_EQ(output::apply_key(view, 'k', {}), output::TopAction::redraw);
    EXPECT_TRUE(view.query.calls);
    EXPECT_FALSE(view.query.waits);
}

TEST(TopCalls, PlainTableHasTheCallsColumns) {
    Calls calls;
    calls.one_call(0);
    output::TopView view;
    view.calls_available = true;
    view.query.calls = true;
    output::TopTarget target;
    target.pids = {100};
    const std::string text = output::plain_table(calls.model.table(view.query), target, view,
                                                 calls.model.threads(), 0, 0);
    EXPECT_THAT(text, HasSubstr("| Calls | Cumulative | All threads | Sort total\n"));
    EXPECT_THAT(text, HasSubstr("Sampled every 10.0ms: durations are \u00b1 half a period (5.0ms) "
                                "at each end, more after late ticks\n"));
    EXPECT_THAT(text, HasSubstr("\ncalls  short  p50      p90      p99      max      total    "
                                "self     cpu      function\n"));
    EXPECT_THAT(text, HasSubstr("\n    1      0  20.0ms   20.0ms   20.0ms   20.0ms   20.0ms   "
                                "20.0ms   0.0\u00b5s    work (/srv/app.py:10)\n"));
    EXPECT_THAT(text, HasSubstr("\n1 call was running at the start or end"));
    EXPECT_THAT(text, Not(HasSubstr("%Own")));

    // A narrow terminal: the function column is fitted to what is left.
    const std::string narrow = output::plain_table(calls.model.table(view.query), target, view,
                                                   calls.model.threads(), 96, 0);
    EXPECT_THAT(narrow, HasSubstr("0.0\u00b5s    work\n"));
    EXPECT_THAT(narrow, HasSubstr("0.0\u00b5s    main (.../app.py:1)\n"));
}

} // namespace
