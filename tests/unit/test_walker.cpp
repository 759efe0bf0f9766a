// The stack walkers and the stack reader over CPython structures built in fake memory, for every
// layout: exact names and lines, cycles, unreadable links, chunks, generators, shim frames,
// incomplete frames, stacks that change while they are read, stale code caches.
#include "fake_python.hpp"
#include <gtest/gtest.h>

#include "spyglass/sampling/stack_reader.hpp"

namespace {

using spyglass::model::FrameTable;
using spyglass::process::Address;
using spyglass::python::FrameModel;
using spyglass::python::Layout;
using spyglass::python::StackEnd;
using spyglass::sampling::StackOutcome;
using spyglass::sampling::StackReader;
using spyglass::test_support::FakePython;

constexpr Address kUnmapped = 0x7000'0000'0000;

struct Expected {
    std::string function;
    int line;
};

class Walker : public ::testing::TestWithParam<const Layout*> {
  protected:
    const Layout& layout() const { return *GetParam(); }
    bool new_model() const { return layout().frame_model == FrameModel::interpreter_frames; }
    std::string shown(const std::string& name) const { return new_model() ? "Q." + name : name; }

    // Builds frames func0 (innermost) .. func{n-1}, each at instruction i+1 of its code,
    // first line 100 * (i + 1). Returns the innermost frame.
    Address chain(FakePython& fake, int n, FakePython::Chunk* chunk, Address outer = 0,
                  const std::string& prefix = "func") {
        return chain_of(fake, codes_of(fake, n, prefix), chunk, outer);
    }
    std::vector<Address> codes_of(FakePython& fake, int n, const std::string& prefix = "func") {
        std::vector<Address> codes;
        for (int i = 0; i < n; ++i)
            codes.push_back(fake.code(prefix + std::to_string(i), "/src/app.py", 100 * (i + 1)));
        return codes;
    }
    Address chain_of(FakePython& fake, const std::vector<Address>& codes, FakePython::Chunk* chunk,
                     Address outer = 0) {
        const int n = static_cast<int>(codes.size());
        Address previous = outer;
        std::vector<Address> frames(static_cast<std::size_t>(n));
        for (int i = n - 1; i >= 0; --i) {
            previous = new_model() ? fake.push_frame(*chunk, codes[i], previous, i + 1)
                                   : fake.frame_object(codes[i], previous, i + 1);
            frames[i] = previous;
        }
        return frames[0];
    }

    std::vector<Expected> expected_chain(int n, const std::string& prefix = "func") const {
        std::vector<Expected> out;
        for (int i = 0; i < n; ++i)
            out.push_back({shown(prefix + std::to_string(i)), 100 * (i + 1) + i + 1});
        return out;
    }

    std::vector<Expected> read(spyglass::python::PythonProcess& process, StackOutcome& outcome,
                               StackReader*& reader_out) {
        static FrameTable frames;
        static std::unique_ptr<StackReader> reader;
        reader =
            std::make_unique<StackReader>(process, frames, spyglass::sampling::StackReadOptions{});
        reader_out = reader.get();
        std::vector<spyglass::python::ThreadRecord> threads;
        EXPECT_TRUE(process.read_threads(threads));
        EXPECT_EQ(threads.size(), 1u);
        std::vector<spyglass::model::FrameId> ids;
        outcome = reader->read(threads.at(0), ids);
        std::vector<Expected> out;
        for (auto id : ids) {
            const auto& frame = frames.get(id);
            out.push_back({std::string(frames.strings().view(frame.function)), frame.line});
        }
        return out;
    }
    std::vector<Expected> read(spyglass::python::PythonProcess& process, StackOutcome& outcome) {
        StackReader* reader = nullptr;
        return read(process, outcome, reader);
    }

    struct Setup {
        FakePython fake;
        Address interp = 0, tstate = 0;
        FakePython::Chunk chunk{};
        explicit Setup(const Layout& layout) : fake(layout) {
            interp = fake.interpreter();
            tstate = fake.thread(interp, 0x7f0000001000);
            if (layout.frame_model == FrameModel::interpreter_frames) chunk = fake.chunk(64 * 1024);
        }
        void point_at(Address frame) {
            fake.set_frame(tstate, frame, chunk.base != 0 ? &chunk : nullptr);
        }
    };
};

void expect_frames(const std::vector<Expected>& got, const std::vector<Expected>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].function, want[i].function) << "frame " << i;
        EXPECT_EQ(got[i].line, want[i].line) << "frame " << i;
    }
}

TEST_P(Walker, ThreeDeepStackIsResolvedExactly) {
    Setup s(layout());
    s.point_at(chain(s.fake, 3, &s.chunk));
    auto process = s.fake.process();
    StackOutcome outcome;
    expect_frames(read(*process, outcome), expected_chain(3));
    EXPECT_EQ(outcome, StackOutcome::ok);
}

TEST_P(Walker, EmptyThreadHasNoFrames) {
    Setup s(layout());
    s.point_at(0);
    auto process = s.fake.process();
    StackOutcome outcome;
    EXPECT_TRUE(read(*process, outcome).empty());
    EXPECT_EQ(outcome, StackOutcome::ok);
}

TEST_P(Walker, CycleEndsTheStackWithAMarker) {
    Setup s(layout());
    Address inner = chain(s.fake, 3, &s.chunk);
    // Point the outermost frame back at the innermost one.
    Address outer = inner;
    const auto& o = layout().off;
    for (int i = 0; i < 2; ++i) {
        std::uint64_t next = 0;
        s.fake.memory().read(outer + (new_model() ? o.iframe_previous : o.frame_back), &next, 8);
        outer = next;
    }
    s.fake.put<std::uint64_t>(outer, new_model() ? o.iframe_previous : o.frame_back, inner);
    s.point_at(inner);
    auto process = s.fake.process();
    StackOutcome outcome;
    StackReader* reader = nullptr;
    auto frames = read(*process, outcome, reader);
    EXPECT_EQ(outcome, StackOutcome::truncated);
    auto want = expected_chain(3);
    want.push_back({"<frame chain loops>", 0});
    expect_frames(frames, want);
    // Read again, unchanged: corruption, not a race. A pause would not read it any better.
    EXPECT_FALSE(reader->capturer().raced(spyglass::sampling::CaptureOutcome::truncated));
}

TEST_P(Walker, UnreadableCodeObjectMarksItsOwnFrameOnly) {
    Setup s(layout());
    const auto& o = layout().off;
    std::vector<Address> codes = codes_of(s.fake, 3);
    // func1's name is not a str (it points at another code object): its frame is marked, its
    // caller and callee are kept, and the stack is not taken for torn.
    s.fake.put<std::uint64_t>(codes[1], o.code_name, codes[0]);
    if (o.code_qualname != spyglass::python::kAbsent)
        s.fake.put<std::uint64_t>(codes[1], o.code_qualname, codes[0]);
    s.point_at(chain_of(s.fake, codes, &s.chunk));
    auto process = s.fake.process();
    StackOutcome outcome;
    StackReader* reader = nullptr;
    auto frames = read(*process, outcome, reader);
    EXPECT_EQ(outcome, StackOutcome::ok);
    auto want = expected_chain(3);
    want[1] = {"<unreadable code object>", 0};
    expect_frames(frames, want);
    EXPECT_EQ(reader->stats().code_unreadable, 1u);
}

TEST_P(Walker, UnreadableLinkKeepsTheFramesBeforeIt) {
    Setup s(layout());
    s.point_at(chain(s.fake, 2, &s.chunk, kUnmapped));
    auto process = s.fake.process();
    StackOutcome outcome;
    auto frames = read(*process, outcome);
    EXPECT_EQ(outcome, StackOutcome::truncated);
    auto want = expected_chain(2);
    want.push_back({"<truncated>", 0});
    expect_frames(frames, want);
}

// The innermost frame's link to its caller is rewritten after the walk read it: the chain the
// walk saw is not the thread's any more (its caller returned and another call took its place).
void relink(FakePython& fake, const Layout& layout, Address frame, Address previous) {
    const auto& o = layout.off;
    fake.put<std::uint64_t>(frame,
                            layout.frame_model == FrameModel::interpreter_frames ? o.iframe_previous
                                                                                 : o.frame_back,
                            previous);
}

TEST_P(Walker, StackThatChangesWhileReadIsRetried) {
    Setup s(layout());
    Address second = chain(s.fake, 2, &s.chunk, 0, "new");
    Address first = chain(s.fake, 3, &s.chunk, 0, "old");
    s.point_at(first);
    auto process = s.fake.process();
    std::vector<spyglass::python::ThreadRecord> threads;
    ASSERT_TRUE(process->read_threads(threads));
    FrameTable frames;
    StackReader reader(*process, frames, {});
    // Up to 3.10 the walk's first read copies the innermost frame, and its caller link changes
    // before the next one. 3.11+ copies the head pointer (3.11 / 3.12: and the cframe's outer
    // link) and the chunk in one batch; the link changes before the check that follows it.
    const auto& o = layout().off;
    std::uint64_t batch = 2 + (o.cframe_previous != spyglass::python::kAbsent ? 1 : 0);
    std::uint64_t reads = 0;
    s.fake.memory().on_read([&](std::uint64_t) {
        if (++reads == (new_model() ? batch + 1 : 2u)) relink(s.fake, layout(), first, second);
    });
    std::vector<spyglass::model::FrameId> ids;
    ASSERT_EQ(reader.read(threads[0], ids), StackOutcome::ok);
    EXPECT_EQ(reader.stats().torn_attempts, 1u);
    std::vector<Expected> got;
    for (auto id : ids)
        got.push_back(
            {std::string(frames.strings().view(frames.get(id).function)), frames.get(id).line});
    auto want = expected_chain(1, "old");
    auto tail = expected_chain(2, "new");
    want.insert(want.end(), tail.begin(), tail.end());
    expect_frames(got, want);
}

TEST_P(Walker, ThreadThatMovedOnIsReadWhereItIs) {
    // The thread returns and calls elsewhere between the thread list and the walk. A frame that
    // has returned still looks like a stack (up to 3.10 its f_back is cleared: a stack of one
    // frame that passes every link check), so the walk must not keep the old head: 3.11+
    // reads the head again with the chunk, older versions check it after the walk and retry.
    Setup s(layout());
    Address first = chain(s.fake, 3, &s.chunk, 0, "old");
    Address second = chain(s.fake, 2, &s.chunk, 0, "new");
    s.point_at(first);
    auto process = s.fake.process();
    std::vector<spyglass::python::ThreadRecord> threads;
    ASSERT_TRUE(process->read_threads(threads));
    s.point_at(second);
    relink(s.fake, layout(), first, 0); // the returned frame, as CPython leaves it
    if (!new_model()) s.fake.put<std::int64_t>(first, layout().off.object_type - 8, 0);
    FrameTable frames;
    StackReader reader(*process, frames, {});
    std::vector<spyglass::model::FrameId> ids;
    ASSERT_EQ(reader.read(threads[0], ids), StackOutcome::ok);
    EXPECT_EQ(reader.stats().torn_attempts, new_model() ? 0u : 1u);
    std::vector<Expected> got;
    for (auto id : ids)
        got.push_back(
            {std::string(frames.strings().view(frames.get(id).function)), frames.get(id).line});
    expect_frames(got, expected_chain(2, "new"));
}

TEST_P(Walker, StackThatNeverSettlesIsReportedTorn) {
    Setup s(layout());
    // Every read finds the innermost frame linked to a caller it did not have before.
    std::vector<Address> callers;
    for (int i = 0; i < 300; ++i)
        callers.push_back(chain(s.fake, 2, &s.chunk, 0, "c" + std::to_string(i)));
    Address head = chain(s.fake, 1, &s.chunk, callers[0], "head");
    s.point_at(head);
    auto process = s.fake.process();
    std::vector<spyglass::python::ThreadRecord> threads;
    ASSERT_TRUE(process->read_threads(threads));
    std::size_t next = 1;
    s.fake.memory().on_read(
        [&](std::uint64_t) { relink(s.fake, layout(), head, callers[next++ % callers.size()]); });
    FrameTable frames;
    StackReader reader(*process, frames, {});
    std::vector<spyglass::model::FrameId> ids;
    EXPECT_EQ(reader.read(threads[0], ids), StackOutcome::torn);
    EXPECT_EQ(reader.stats().torn_attempts, 4u); // the first try and three retries
}

TEST_P(Walker, ReusedCodeAddressIsNoticed) {
    Setup s(layout());
    Address frame = chain(s.fake, 1, &s.chunk);
    s.point_at(frame);
    auto process = s.fake.process();
    StackOutcome outcome;
    StackReader* reader = nullptr;
    expect_frames(read(*process, outcome, reader), expected_chain(1));
    // Another function now lives at the same code address: its name and file pointers differ.
    std::uint64_t code = 0;
    const auto& o = layout().off;
    s.fake.memory().read(frame + (new_model() ? o.iframe_code : o.frame_code), &code, 8);
    s.fake.put<std::uint64_t>(code, o.code_name, s.fake.str("renamed"));
    if (o.code_qualname != spyglass::python::kAbsent)
        s.fake.put<std::uint64_t>(code, o.code_qualname, s.fake.str("Q.renamed"));
    std::vector<spyglass::python::ThreadRecord> threads;
    ASSERT_TRUE(process->read_threads(threads));
    FrameTable frames;
    std::vector<spyglass::model::FrameId> ids;
    ASSERT_EQ(reader->read(threads[0], ids), StackOutcome::ok);
    EXPECT_EQ(reader->stats().code_stale, 1u);
}

// ---- 3.11+: data-stack chunks, generator frames, incomplete frames ------------------------

class ChunkWalker : public Walker {};
class ShimWalker : public Walker {};
class CframeWalker : public Walker {};

TEST_P(ChunkWalker, DeepStackAcrossTwoChunks) {
    Setup s(layout());
    FakePython::Chunk older = s.fake.chunk(16 * 1024);
    Address outer = chain(s.fake, 10, &older, 0, "outer");
    s.fake.close_chunk(older);
    s.chunk = s.fake.chunk(16 * 1024, older.base);
    s.point_at(chain(s.fake, 10, &s.chunk, outer, "inner"));
    auto process = s.fake.process();
    StackOutcome outcome;
    auto want = expected_chain(10, "inner");
    auto outer_want = expected_chain(10, "outer");
    want.insert(want.end(), outer_want.begin(), outer_want.end());
    expect_frames(read(*process, outcome), want);
    EXPECT_EQ(outcome, StackOutcome::ok);
}

TEST_P(ChunkWalker, GeneratorFramesLiveOnTheHeap) {
    Setup s(layout());
    Address outer = chain(s.fake, 2, &s.chunk, 0, "caller");
    Address generator = s.fake.alloc(256);
    Address code = s.fake.code("gen", "/src/app.py", 50);
    s.fake.interpreter_frame(generator, code, outer, 3,
                             static_cast<std::uint8_t>(layout().off.owner_generator));
    s.point_at(chain(s.fake, 1, &s.chunk, generator, "inner"));
    auto process = s.fake.process();
    StackOutcome outcome;
    auto want = expected_chain(1, "inner");
    want.push_back({shown("gen"), 53});
    auto callers = expected_chain(2, "caller");
    want.insert(want.end(), callers.begin(), callers.end());
    expect_frames(read(*process, outcome), want);
}

// Up to 3.10 a frame that has returned keeps its f_back (or, on the free list, links free
// frames): the links alone cannot tell it. Its reference count can.
class ObjectWalker : public Walker {};

TEST_P(ObjectWalker, ChainThroughAFrameThatReturnedIsTorn) {
    Setup s(layout());
    Address innermost = chain(s.fake, 3, nullptr);
    s.point_at(innermost);
    std::uint64_t caller = 0;
    s.fake.memory().read(innermost + layout().off.frame_back, &caller, 8);
    s.fake.put<std::int64_t>(caller, layout().off.object_type - 8, 0); // returned: no references
    auto process = s.fake.process();
    StackOutcome outcome;
    read(*process, outcome);
    EXPECT_EQ(outcome, StackOutcome::torn);
}

TEST_P(ObjectWalker, FramesAboveWhereTheThreadReturnedToStand) {
    // The walk began at the innermost frame; by the check the thread had returned to its
    // caller: the chain was its stack when the walk began.
    Setup s(layout());
    Address innermost = chain(s.fake, 3, nullptr);
    s.point_at(innermost);
    auto process = s.fake.process();
    std::vector<spyglass::python::ThreadRecord> threads;
    ASSERT_TRUE(process->read_threads(threads));
    std::uint64_t caller = 0;
    s.fake.memory().read(innermost + layout().off.frame_back, &caller, 8);
    s.point_at(caller);
    s.fake.put<std::int64_t>(innermost, layout().off.object_type - 8, 0);
    FrameTable frames;
    StackReader reader(*process, frames, {});
    std::vector<spyglass::model::FrameId> ids;
    EXPECT_EQ(reader.read(threads[0], ids), StackOutcome::ok);
    EXPECT_EQ(ids.size(), 3u);
}

// A generator's frame has a caller only while it runs. A walk that reads the thread's frames as
// running and the generator's as suspended (it yielded meanwhile) ends at the generator: that
// is a torn read, not the thread's stack, on every version (<= 3.10: by the code's flags).
TEST_P(Walker, ChainEndingAtASuspendedGeneratorIsTorn) {
    Setup s(layout());
    Address code = s.fake.code("squares", "/src/app.py", 50);
    s.fake.put<std::int32_t>(code, layout().off.code_flags, 0x20 | 0x3); // CO_GENERATOR
    Address frame = 0;
    if (new_model()) {
        frame = s.fake.alloc(256);
        s.fake.interpreter_frame(frame, code, 0, 3,
                                 static_cast<std::uint8_t>(layout().off.owner_generator));
    } else {
        frame = s.fake.frame_object(code, 0, 3);
    }
    s.point_at(frame);
    auto process = s.fake.process();
    std::vector<spyglass::python::ThreadRecord> threads;
    ASSERT_TRUE(process->read_threads(threads));
    FrameTable frames;
    StackReader reader(*process, frames, {});
    std::vector<spyglass::model::FrameId> ids;
    EXPECT_EQ(reader.read(threads[0], ids), StackOutcome::torn);
    EXPECT_EQ(reader.stats().torn_suspended, 4u);
    // A stopped thread in that state is one moment of it up to 3.11 (a generator driven from
    // C on a thread with no Python frame); from 3.12 such a C call has an entry frame first.
    bool entry_frames = layout().off.owner_cstack != spyglass::python::kAbsent;
    EXPECT_EQ(reader.read(threads[0], ids, {.thread_stopped = true, .retries = 0}),
              entry_frames ? StackOutcome::torn : StackOutcome::ok);
}

// 3.11 / 3.12: a new eval loop publishes its cframe before setting the cframe's current
// frame. A cframe with no frame that is not the outermost one is such a moment: torn.
TEST_P(CframeWalker, NestedCframeWithoutAFrameIsTorn) {
    const auto& o = layout().off;
    Setup s(layout());
    s.point_at(chain(s.fake, 2, &s.chunk));
    std::uint64_t outer = 0;
    s.fake.memory().read(s.tstate + o.tstate_cframe, &outer, 8);
    Address nested = s.fake.alloc(64);
    s.fake.put<std::uint64_t>(nested, o.cframe_previous, outer);
    s.fake.put<std::uint64_t>(nested, o.cframe_current_frame, 0);
    s.fake.put<std::uint64_t>(s.tstate, o.tstate_cframe, nested);
    auto process = s.fake.process();
    StackOutcome outcome;
    read(*process, outcome);
    EXPECT_EQ(outcome, StackOutcome::torn);
    // The outermost cframe without a frame is a thread with no Python frames.
    s.fake.put<std::uint64_t>(s.tstate, o.tstate_cframe, outer);
    s.point_at(0);
    EXPECT_TRUE(read(*process, outcome).empty());
    EXPECT_EQ(outcome, StackOutcome::ok);
}

TEST_P(ShimWalker, ShimFramesAreSkipped) {
    Setup s(layout());
    Address outer = chain(s.fake, 1, &s.chunk, 0, "outer");
    Address shim = s.chunk.top;
    s.chunk.top += 256;
    s.fake.interpreter_frame(shim, 0, outer, 0,
                             static_cast<std::uint8_t>(layout().off.owner_cstack));
    s.point_at(chain(s.fake, 1, &s.chunk, shim, "inner"));
    auto process = s.fake.process();
    StackOutcome outcome;
    auto want = expected_chain(1, "inner");
    want.push_back(expected_chain(1, "outer")[0]);
    expect_frames(read(*process, outcome), want);
}

// --native places each run of frames by an address on the C stack in its eval call's frame
// (native_merge.hpp): the C-stack entry frame that closes the run (3.12+).
TEST_P(ShimWalker, AShimIsTheAnchorOfTheRunItCloses) {
    Setup s(layout());
    Address outer = chain(s.fake, 1, &s.chunk, 0, "outer");
    Address shim = s.chunk.top;
    s.chunk.top += 256;
    s.fake.interpreter_frame(shim, 0, outer, 0,
                             static_cast<std::uint8_t>(layout().off.owner_cstack));
    s.point_at(chain(s.fake, 2, &s.chunk, shim, "inner"));
    auto process = s.fake.process();
    std::vector<spyglass::python::ThreadRecord> threads;
    ASSERT_TRUE(process->read_threads(threads));
    spyglass::python::RawStack raw;
    process->walker().walk(threads[0], raw);
    ASSERT_EQ(raw.depth, 3u);
    EXPECT_EQ(raw.frames[0].anchor, 0u);
    EXPECT_FALSE(raw.frames[0].flags & spyglass::python::RawFrame::entry);
    EXPECT_EQ(raw.frames[1].anchor, shim);
    EXPECT_TRUE(raw.frames[1].flags & spyglass::python::RawFrame::entry);
    EXPECT_EQ(raw.frames[2].anchor, 0u); // no shim after it in this chain
}

// 3.11: the innermost run's anchor is the thread's _PyCFrame (the outer ones are found through
// its links in the copy of the stack, by the resolver).
TEST_P(CframeWalker, TheInnermostRunsAnchorIsTheThreadsCframe) {
    if (layout().off.owner_cstack != spyglass::python::kAbsent)
        GTEST_SKIP() << "3.12+ runs are anchored by their shim frames";
    Setup s(layout());
    Address outer = chain(s.fake, 1, &s.chunk, 0, "outer");
    s.fake.put<std::uint8_t>(outer, layout().off.iframe_is_entry, 1);
    Address inner = chain(s.fake, 2, &s.chunk, outer, "inner");
    s.point_at(inner);
    Address inner_entry = 0;
    s.fake.memory().read(inner + layout().off.iframe_previous, &inner_entry, 8);
    s.fake.put<std::uint8_t>(inner_entry, layout().off.iframe_is_entry, 1);
    std::uint64_t cframe = 0;
    s.fake.memory().read(s.tstate + layout().off.tstate_cframe, &cframe, 8);
    auto process = s.fake.process();
    std::vector<spyglass::python::ThreadRecord> threads;
    ASSERT_TRUE(process->read_threads(threads));
    spyglass::python::RawStack raw;
    process->walker().walk(threads[0], raw);
    ASSERT_EQ(raw.depth, 3u);
    EXPECT_EQ(raw.frames[0].anchor, 0u);
    EXPECT_EQ(raw.frames[1].anchor, cframe);
    EXPECT_NE(cframe, 0u);
    EXPECT_EQ(raw.frames[2].anchor, 0u);
}

TEST_P(ChunkWalker, IncompleteFramesAreHidden) {
    Setup s(layout());
    Address outer = chain(s.fake, 1, &s.chunk, 0, "outer");
    Address code = s.fake.code("starting", "/src/app.py", 10);
    s.fake.put<std::int32_t>(code, layout().off.code_firsttraceable, 4);
    Address frame = s.fake.push_frame(s.chunk, code, outer, 2); // before RESUME
    s.point_at(frame);
    auto process = s.fake.process();
    StackOutcome outcome;
    expect_frames(read(*process, outcome), expected_chain(1, "outer"));
}

TEST_P(ChunkWalker, ThreadFrameOutsideItsChunksIsCorrupt) {
    Setup s(layout());
    Address stray = s.fake.alloc(256);
    s.fake.interpreter_frame(stray, s.fake.code("stray", "/src/x.py", 1), 0, 1,
                             static_cast<std::uint8_t>(layout().off.owner_thread));
    s.point_at(chain(s.fake, 1, &s.chunk, stray));
    auto process = s.fake.process();
    std::vector<spyglass::python::ThreadRecord> threads;
    ASSERT_TRUE(process->read_threads(threads));
    spyglass::python::RawStack raw;
    process->walker().walk(threads[0], raw);
    EXPECT_EQ(raw.end, StackEnd::corrupt);
    EXPECT_EQ(raw.depth, 1u);
}

std::string layout_name(const ::testing::TestParamInfo<const Layout*>& info) {
    return "Py" + std::to_string(info.param->version.major) + "_" +
           std::to_string(info.param->version.minor);
}

std::vector<const Layout*> layouts_where(bool (*keep)(const Layout&)) {
    std::vector<const Layout*> out;
    for (const Layout* layout : spyglass::python::all_layouts())
        if (keep(*layout)) out.push_back(layout);
    return out;
}

INSTANTIATE_TEST_SUITE_P(AllLayouts, Walker,
                         ::testing::ValuesIn(layouts_where([](const Layout&) { return true; })),
                         layout_name);
INSTANTIATE_TEST_SUITE_P(ObjectLayouts, ObjectWalker,
                         ::testing::ValuesIn(layouts_where([](const Layout& l) {
                             return l.frame_model == FrameModel::object_frames;
                         })),
                         layout_name);
INSTANTIATE_TEST_SUITE_P(ChunkLayouts, ChunkWalker,
                         ::testing::ValuesIn(layouts_where([](const Layout& l) {
                             return l.frame_model == FrameModel::interpreter_frames;
                         })),
                         layout_name);
INSTANTIATE_TEST_SUITE_P(ShimLayouts, ShimWalker,
                         ::testing::ValuesIn(layouts_where([](const Layout& l) {
                             return l.off.owner_cstack != spyglass::python::kAbsent;
                         })),
                         layout_name);
INSTANTIATE_TEST_SUITE_P(CframeLayouts, CframeWalker,
                         ::testing::ValuesIn(layouts_where([](const Layout& l) {
                             return l.off.cframe_previous != spyglass::python::kAbsent;
                         })),
                         layout_name);

} // namespace
