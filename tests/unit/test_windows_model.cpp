// The model pieces of continuous recording: windows cut at their boundaries with their own
// tables (the session's may be emptied under them), a flush request snapshots the window, the
// last window is partial, each window knows its processes; slices and thread selections;
// --function / --nolineno as a projection.
#include <atomic>

#include <gtest/gtest.h>

#include "spyglass/model/aggregator.hpp"
#include "spyglass/model/projector.hpp"
#include "spyglass/model/select.hpp"
#include "spyglass/model/window.hpp"

namespace {

using namespace spyglass;
constexpr std::uint64_t kSecond = 1'000'000'000;

struct Tables {
    model::FrameTable frames;
    model::StackTable stacks;
    model::StackId stack(std::string_view function, std::int32_t line, std::int32_t first) {
        model::Frame f{frames.strings().intern(function), frames.strings().intern("/a.py"), line,
                       first, model::FrameKind::python};
        model::FrameId id = frames.intern(f);
        return stacks.intern(std::span(&id, 1));
    }
};

model::Sample at(std::uint64_t ns, std::uint32_t thread, model::StackId stack) {
    model::Sample s;
    s.key.thread = thread;
    s.key.stack = stack;
    s.time_ns = ns;
    s.weight_ns = 10'000'000;
    return s;
}

std::string leaf(const model::Profile& p, const model::AggregatedSample& s) {
    return std::string(
        p.frames->strings().view(p.frames->get(p.stacks->get(s.key.stack)[0]).function));
}

TEST(WindowCutter, CutsAtBoundariesAndTheLastIsPartial) {
    Tables t;
    std::vector<std::unique_ptr<model::Window>> done;
    model::WindowCutter cutter(
        t.frames, t.stacks, 2 * kSecond, {}, false,
        [&](std::unique_ptr<model::Window> w) { done.push_back(std::move(w)); });
    model::RecordingInfo info;
    info.start_unix_ns = 1000 * kSecond;
    cutter.start(info);
    cutter.thread(0, {7, 8, 1, "main"});
    model::StackId a = t.stack("a", 1, 1);
    for (std::uint64_t ms = 0; ms < 7000; ms += 10)
        cutter.sample(at(ms * 1'000'000, 0, a));
    cutter.advance(7 * kSecond);
    model::RecordingTotals totals;
    totals.elapsed_ns = 7 * kSecond;
    totals.python_version = "3.12";
    cutter.finish(totals);
    ASSERT_EQ(done.size(), 4u);
    std::uint64_t all = 0;
    for (std::size_t k = 0; k < done.size(); ++k) {
        const model::Window& w = *done[k];
        EXPECT_EQ(w.index, k);
        EXPECT_EQ(w.info.start_unix_ns, (1000 + 2 * k) * kSecond);
        EXPECT_EQ(w.partial, k == 3);
        EXPECT_EQ(w.samples, k == 3 ? 100u : 200u);
        EXPECT_EQ(w.totals.elapsed_ns, k == 3 ? kSecond : 2 * kSecond);
        EXPECT_EQ(w.pids, std::vector<pid_t>{7});
        all += w.samples;
        model::Profile p = w.profile({});
        ASSERT_EQ(p.samples.size(), 1u);
        EXPECT_EQ(leaf(p, p.samples[0]), "a");
    }
    EXPECT_EQ(all, 700u);
    EXPECT_EQ(done[3]->totals.python_version, "3.12");
}

TEST(WindowCutter, EmptyWindowsAreWrittenAndNoneAfterTheEnd) {
    Tables t;
    std::vector<std::unique_ptr<model::Window>> done;
    model::WindowCutter cutter(
        t.frames, t.stacks, kSecond, {}, false,
        [&](std::unique_ptr<model::Window> w) { done.push_back(std::move(w)); });
    cutter.start({});
    cutter.thread(0, {1, 1, 1, ""});
    cutter.sample(at(100, 0, t.stack("a", 1, 1)));
    for (std::uint64_t ms = 100; ms <= 3000; ms += 100)
        cutter.advance(ms * 1'000'000); // no sample: --mode cpu and an idle target
    model::RecordingTotals totals;
    totals.elapsed_ns = 3 * kSecond;
    cutter.finish(totals);
    ASSERT_EQ(done.size(), 3u); // [0,1) [1,2) [2,3): no empty window of 0 s at 3 s
    EXPECT_EQ(done[0]->samples, 1u);
    EXPECT_EQ(done[1]->samples, 0u);
    EXPECT_FALSE(done[2]->partial);
}

TEST(WindowCutter, TheSessionTablesMayBeEmptiedUnderAWindow) {
    Tables t;
    std::vector<std::unique_ptr<model::Window>> done;
    model::WindowCutter cutter(
        t.frames, t.stacks, 10 * kSecond, {}, false,
        [&](std::unique_ptr<model::Window> w) { done.push_back(std::move(w)); });
    cutter.start({});
    cutter.thread(0, {1, 1, 1, ""});
    cutter.sample(at(1, 0, t.stack("before", 1, 1)));
    t.frames.clear();
    t.stacks.clear();
    cutter.tables_reset();
    cutter.sample(at(2, 0, t.stack("after", 1, 1))); // the same ids as "before" had
    model::RecordingTotals totals;
    totals.elapsed_ns = 3;
    cutter.finish(totals);
    ASSERT_EQ(done.size(), 1u);
    model::Profile p = done[0]->profile({});
    std::vector<std::string> leaves;
    for (const auto& s : p.samples)
        leaves.push_back(leaf(p, s));
    std::sort(leaves.begin(), leaves.end());
    EXPECT_EQ(leaves, (std::vector<std::string>{"after", "before"}));
}

TEST(WindowCutter, AFlushRequestSnapshotsTheWindowSoFar) {
    Tables t;
    std::atomic<int> requests{0};
    std::vector<std::uint64_t> snapshots;
    std::vector<std::unique_ptr<model::Window>> done;
    model::WindowCutter cutter(
        t.frames, t.stacks, 60 * kSecond, {}, false,
        [&](std::unique_ptr<model::Window> w) { done.push_back(std::move(w)); }, &requests,
        [&](const model::Window& w) { snapshots.push_back(w.samples); });
    cutter.start({});
    cutter.thread(0, {1, 1, 1, ""});
    model::StackId a = t.stack("a", 1, 1);
    for (std::uint64_t i = 0; i < 10; ++i)
        cutter.sample(at(i * 1000, 0, a));
    EXPECT_TRUE(snapshots.empty());
    requests.fetch_add(1);
    cutter.advance(10'000);
    cutter.advance(20'000); // once per request
    ASSERT_EQ(snapshots, std::vector<std::uint64_t>{10});
    for (std::uint64_t i = 0; i < 5; ++i)
        cutter.sample(at(30'000 + i, 0, a));
    model::RecordingTotals totals;
    totals.elapsed_ns = 40'000;
    cutter.finish(totals);
    ASSERT_EQ(done.size(), 1u);
    EXPECT_EQ(done[0]->samples, 15u); // the window went on after the snapshot
}

TEST(WindowCutter, EachWindowIsToldOfTheProcessesItHasSamplesOf) {
    Tables t;
    std::vector<std::unique_ptr<model::Window>> done;
    model::WindowCutter cutter(
        t.frames, t.stacks, kSecond, {}, false,
        [&](std::unique_ptr<model::Window> w) { done.push_back(std::move(w)); });
    cutter.start({});
    cutter.process({7, "3.12.1", "/usr/bin/python3.12"});
    cutter.thread(0, {7, 7, 1, "main"});
    model::StackId a = t.stack("a", 1, 1);
    cutter.sample(at(100, 0, a));
    cutter.process({9, "3.11.2", "/usr/lib/libpython3.11.so.1.0"}); // a subprocess, later
    cutter.thread(1, {9, 9, 1, "main"});
    cutter.sample(at(kSecond + 100, 0, a));
    cutter.sample(at(kSecond + 200, 1, a));
    cutter.sample(at(2 * kSecond + 100, 1, a));
    model::RecordingTotals totals;
    totals.elapsed_ns = 3 * kSecond;
    totals.python_version = "3.12.1";
    cutter.finish(totals);
    ASSERT_EQ(done.size(), 3u);
    auto pids = [&](std::size_t k) {
        std::vector<pid_t> out;
        for (const model::ProcessInfo& p : done[k]->profile({}).processes)
            out.push_back(p.pid);
        return out;
    };
    EXPECT_EQ(pids(0), std::vector<pid_t>{7});
    EXPECT_EQ(pids(1), (std::vector<pid_t>{7, 9}));
    EXPECT_EQ(pids(2), std::vector<pid_t>{9});
    EXPECT_EQ(done[2]->profile({}).processes[0].python_version, "3.11.2");
    // A window that ended before the recording did knows the Python version too.
    EXPECT_EQ(done[0]->totals.python_version, "3.12.1");
}

TEST(SelectingSink, ProcessesLeftOutByPidAreNotForwarded) {
    Tables t;
    model::Aggregator aggregator(t.frames, t.stacks, false);
    model::Selection selection;
    selection.pids = {9};
    model::SelectingSink select(selection, {}, aggregator);
    select.process({7, "3.12.1", "/usr/bin/python3.12"});
    select.process({9, "3.11.2", "/usr/bin/python3.11"});
    model::Profile p = aggregator.profile({});
    ASSERT_EQ(p.processes.size(), 1u);
    EXPECT_EQ(p.processes[0].pid, 9);
    model::Aggregator all(t.frames, t.stacks, false);
    model::SelectingSink everything({}, {}, all);
    everything.process({7, "3.12.1", "/usr/bin/python3.12"});
    EXPECT_EQ(all.profile({}).processes.size(), 1u);
}

TEST(SelectingSink, SlicesAreHalfOpenAndThreadsMatchAnyNameTheyHad) {
    Tables t;
    model::Aggregator aggregator(t.frames, t.stacks, false);
    model::Selection selection;
    selection.from_ns = 1000;
    selection.to_ns = 3000;
    selection.threads = {"worker"};
    model::SelectingSink select(selection, {{"python3", "worker"}, {"other"}}, aggregator);
    select.start({});
    select.thread(0, {1, 10, 1, "python3"}); // named "worker" only later
    select.thread(1, {1, 11, 2, "other"});
    model::StackId a = t.stack("a", 1, 1);
    for (std::uint64_t ns : {999u, 1000u, 2999u, 3000u})
        for (std::uint32_t thread : {0u, 1u})
            select.sample(at(ns, thread, a));
    select.thread(0, {1, 10, 1, "worker"});
    model::RecordingTotals totals;
    totals.elapsed_ns = 5000;
    select.finish(totals);
    EXPECT_EQ(select.kept(), 2u); // thread 0 at 1000 and 2999
    model::Profile p = aggregator.profile({});
    EXPECT_EQ(p.totals.elapsed_ns, 2000u);
    EXPECT_EQ(p.totals.samples, 2u);
    ASSERT_EQ(p.samples.size(), 1u);
    EXPECT_EQ(p.samples[0].key.thread, 0u);

    model::Aggregator by_tid(t.frames, t.stacks, false);
    model::Selection tid;
    tid.threads = {"11"};
    tid.cpu_only = true;
    model::SelectingSink select_tid(tid, {}, by_tid);
    select_tid.thread(1, {1, 11, 2, "other"});
    model::Sample on = at(5, 1, a), off = at(6, 1, a);
    on.key.on_cpu = true;
    select_tid.sample(on);
    select_tid.sample(off);
    EXPECT_EQ(select_tid.kept(), 1u);
}

TEST(StackProjector, FunctionAndNoLinenoAreAProjection) {
    Tables t;
    model::StackId at10 = t.stack("f", 10, 3), at12 = t.stack("f", 12, 3);
    model::FrameTable frames;
    model::StackTable stacks;
    model::StackProjector function(t.frames, t.stacks, {true, false});
    function.retarget(frames, stacks);
    EXPECT_EQ(function.stack(at10), function.stack(at12));
    EXPECT_EQ(frames.get(stacks.get(function.stack(at10))[0]).line, 3);
    model::FrameTable frames2;
    model::StackTable stacks2;
    model::StackProjector none(t.frames, t.stacks, {false, true});
    none.retarget(frames2, stacks2);
    EXPECT_EQ(frames2.get(stacks2.get(none.stack(at12))[0]).line, 0);
    model::FrameTable frames3;
    model::StackTable stacks3;
    model::StackProjector same(t.frames, t.stacks, {});
    same.retarget(frames3, stacks3);
    EXPECT_NE(same.stack(at10), same.stack(at12));
    EXPECT_EQ(frames3.get(stacks3.get(same.stack(at12))[0]).line, 12);
    EXPECT_EQ(frames3.get(stacks3.get(same.stack(at12))[0]).first_line, 3);
}

TEST(StackProjector, NativeFramesTakeTheirModuleAndBuildIdAlong) {
    Tables t;
    auto& strings = t.frames.strings();
    model::StringId libc = strings.intern("/usr/lib/libc.so.6");
    t.frames.set_build_id(libc, "93ac61ec");
    model::FrameId read = t.frames.intern(
        {strings.intern("read"), strings.intern("read.c"), 26, 0, model::FrameKind::native, libc});
    model::StackId native = t.stacks.intern(std::vector<model::FrameId>{read});
    model::FrameTable frames;
    model::StackTable stacks;
    model::StackProjector projector(t.frames, t.stacks, {});
    projector.retarget(frames, stacks);
    const model::Frame& copied = frames.get(stacks.get(projector.stack(native))[0]);
    EXPECT_EQ(frames.strings().view(copied.module), "/usr/lib/libc.so.6");
    EXPECT_EQ(frames.build_id(copied.module), "93ac61ec");
    EXPECT_EQ(frames.strings().view(copied.file), "read.c");
}

} // namespace
