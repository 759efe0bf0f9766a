// 3.13+: a thread walked at one pass has its data-stack chunk read with the thread list at the
// next (one system call fewer per sample), over CPython structures in fake memory. The walk must
// give the stack of that moment, whatever moved between the passes.
#include "../../src/python/chunk_prefetch.hpp"
#include "fake_python.hpp"
#include <gtest/gtest.h>

#include "spyglass/sampling/stack_reader.hpp"

namespace {

using spyglass::model::FrameTable;
using spyglass::process::Address;
using spyglass::python::FrameModel;
using spyglass::python::kAbsent;
using spyglass::python::Layout;
using spyglass::python::ThreadRecord;
using spyglass::sampling::StackOutcome;
using spyglass::sampling::StackReader;
using spyglass::test_support::FakePython;

constexpr Address kOwnMapping = 0x5000'0000;
constexpr std::size_t kPrefetchChunkBytes = 64 * 1024;

class Prefetch : public ::testing::TestWithParam<const Layout*> {
  protected:
    Prefetch() : fake_(layout()) {
        interp_ = fake_.interpreter();
        tstate_ = fake_.thread(interp_, 0x7f0000001000);
        chunk_ = fake_.chunk(kPrefetchChunkBytes);
    }
    const Layout& layout() const { return *GetParam(); }

    // Frames `prefix`0 (innermost) .. `prefix`{n-1} pushed on `chunk`; the innermost returned.
    Address push_chain(FakePython::Chunk& chunk, int n, const std::string& prefix) {
        Address previous = 0, innermost = 0;
        std::vector<Address> codes;
        for (int i = 0; i < n; ++i)
            codes.push_back(fake_.code(prefix + std::to_string(i), "/src/app.py", 100 * (i + 1)));
        for (int i = n - 1; i >= 0; --i)
            innermost = previous = fake_.push_frame(chunk, codes[i], previous, i + 1);
        return innermost;
    }

    struct Pass {
        std::vector<std::string> functions;
        StackOutcome outcome = StackOutcome::ok;
        std::uint64_t walk_reads = 0; // remote reads (ranges) of the walk and its check
    };
    // One sampling pass: the thread list, then the thread's stack (`prefetched`: with the chunk
    // read with the list, if the walker asked for it; else as if it had not).
    Pass pass(bool prefetched = true) {
        Pass out;
        std::vector<ThreadRecord> threads;
        EXPECT_TRUE(process_->read_threads(threads));
        EXPECT_EQ(threads.size(), 1u);
        if (threads.empty()) return out;
        if (!prefetched) process_->walker().prefetch_done(false);
        const std::uint64_t before = fake_.memory().read_calls();
        std::vector<spyglass::model::FrameId> ids;
        out.outcome = reader_->read(threads[0], ids);
        out.walk_reads = fake_.memory().read_calls() - before;
        for (auto id : ids)
            out.functions.emplace_back(frames_.strings().view(frames_.get(id).function));
        return out;
    }
    void start() {
        process_ = fake_.process();
        reader_ = std::make_unique<StackReader>(*process_, frames_,
                                                spyglass::sampling::StackReadOptions{});
    }

    FakePython fake_;
    Address interp_ = 0, tstate_ = 0;
    FakePython::Chunk chunk_{};
    FrameTable frames_;
    std::unique_ptr<spyglass::python::PythonProcess> process_;
    std::unique_ptr<StackReader> reader_;
};

std::vector<std::string> names(const std::string& prefix, int n) {
    std::vector<std::string> out;
    for (int i = 0; i < n; ++i)
        out.push_back("Q." + prefix + std::to_string(i));
    return out;
}

TEST_P(Prefetch, SecondWalkOfAThreadReadsNoChunkOfItsOwn) {
    fake_.set_frame(tstate_, push_chain(chunk_, 3, "f"), &chunk_);
    start();
    EXPECT_EQ(pass().functions, names("f", 3)); // (the code objects' names read and kept)
    Pass prefetched = pass();
    Pass own = pass(false);
    EXPECT_EQ(prefetched.functions, names("f", 3));
    EXPECT_EQ(own.functions, names("f", 3));
    // A walk of its own reads the head pointer and the chunk; the prefetched one neither.
    EXPECT_EQ(own.walk_reads - prefetched.walk_reads, 2u);
    EXPECT_EQ(process_->fast_thread_reads(), 2u);
}

TEST_P(Prefetch, FramesPushedBetweenPassesAreWalked) {
    Address outer = push_chain(chunk_, 3, "f");
    fake_.set_frame(tstate_, outer, &chunk_);
    start();
    EXPECT_EQ(pass().functions, names("f", 3));
    // Two more calls, on the same chunk, past where the first walk's copy of it ended.
    Address code_a = fake_.code("inner0", "/src/app.py", 700);
    Address code_b = fake_.code("inner1", "/src/app.py", 800);
    Address middle = fake_.push_frame(chunk_, code_b, outer, 1);
    Address inner = fake_.push_frame(chunk_, code_a, middle, 1);
    fake_.set_frame(tstate_, inner, &chunk_);
    std::vector<std::string> want = {"Q.inner0", "Q.inner1"};
    for (const std::string& name : names("f", 3))
        want.push_back(name);
    Pass second = pass();
    EXPECT_EQ(second.outcome, StackOutcome::ok);
    EXPECT_EQ(second.functions, want);
}

TEST_P(Prefetch, ThreadOnANewChunkIsReadWhereItIs) {
    fake_.set_frame(tstate_, push_chain(chunk_, 3, "f"), &chunk_);
    start();
    EXPECT_EQ(pass().functions, names("f", 3));
    FakePython::Chunk fresh = fake_.chunk(kPrefetchChunkBytes);
    fake_.set_frame(tstate_, push_chain(fresh, 2, "g"), &fresh);
    Pass second = pass();
    EXPECT_EQ(second.outcome, StackOutcome::ok);
    EXPECT_EQ(second.functions, names("g", 2));
}

TEST_P(Prefetch, AChunkThatIsGoneCostsNeitherTheListNorTheStack) {
    // The first chunk lives in a mapping of its own, unmapped (freed) before the second pass:
    // the batch with it fails, the thread list is read again without it.
    fake_.memory().map(kOwnMapping, kPrefetchChunkBytes);
    const auto& o = layout().off;
    fake_.put<std::uint64_t>(kOwnMapping, o.chunk_previous, 0);
    fake_.put<std::uint64_t>(kOwnMapping, o.chunk_size, kPrefetchChunkBytes);
    FakePython::Chunk own{kOwnMapping, kPrefetchChunkBytes, kOwnMapping + o.chunk_data};
    fake_.set_frame(tstate_, push_chain(own, 3, "f"), &own);
    start();
    EXPECT_EQ(pass().functions, names("f", 3));
    fake_.set_frame(tstate_, push_chain(chunk_, 2, "g"), &chunk_);
    fake_.memory().unmap(kOwnMapping);
    Pass second = pass();
    EXPECT_EQ(second.outcome, StackOutcome::ok);
    EXPECT_EQ(second.functions, names("g", 2));
    EXPECT_EQ(process_->fast_thread_reads(), 1u);
    EXPECT_EQ(process_->slow_thread_reads(), 0u);
}

TEST_P(Prefetch, AStackThatChangesAfterTheListIsStillCheckedAndRetried) {
    Address first_chain = push_chain(chunk_, 3, "f");
    fake_.set_frame(tstate_, first_chain, &chunk_);
    start();
    EXPECT_EQ(pass().functions, names("f", 3));
    std::vector<ThreadRecord> threads;
    ASSERT_TRUE(process_->read_threads(threads));
    // After the list (and the chunk with it) was read, the innermost frame's caller changes:
    // the check after the walk sees it, and the retry reads the chunk anew.
    Address other = fake_.code("other", "/src/app.py", 900);
    Address replacement = fake_.push_frame(chunk_, other, 0, 1);
    fake_.put<std::uint64_t>(first_chain, layout().off.iframe_previous, replacement);
    std::vector<spyglass::model::FrameId> ids;
    EXPECT_EQ(reader_->read(threads[0], ids), StackOutcome::ok);
    EXPECT_EQ(reader_->stats().torn_attempts, 1u);
    std::vector<std::string> got;
    for (auto id : ids)
        got.emplace_back(frames_.strings().view(frames_.get(id).function));
    EXPECT_EQ(got, (std::vector<std::string>{"Q.f0", "Q.other"}));
}

std::vector<const Layout*> prefetched_layouts() {
    std::vector<const Layout*> out;
    for (const Layout* layout : spyglass::python::all_layouts())
        if (layout->frame_model == FrameModel::interpreter_frames &&
            layout->off.tstate_current_frame != kAbsent)
            out.push_back(layout);
    return out;
}

std::string prefetch_layout_name(const ::testing::TestParamInfo<const Layout*>& info) {
    return "Py" + std::to_string(info.param->version.major) + "_" +
           std::to_string(info.param->version.minor);
}

INSTANTIATE_TEST_SUITE_P(ThreadStateHeadLayouts, Prefetch,
                         ::testing::ValuesIn(prefetched_layouts()), prefetch_layout_name);

} // namespace

namespace {

// A thread whose state is read again (a torn walk, a pause) loses its prefetched chunk; the
// other threads of the same batch keep theirs.
TEST(ChunkPrefetchSlots, ReadingOneThreadAgainDropsOnlyItsChunk) {
    using spyglass::python::walker_detail::ChunkPrefetch;
    ChunkPrefetch prefetch;
    constexpr Address kFirst = 0x1000, kSecond = 0x2000, kChunkA = 0x10000, kChunkB = 0x20000;
    prefetch.walked(kFirst, kChunkA, 512);
    prefetch.walked(kSecond, kChunkB, 512);
    std::vector<spyglass::process::ReadOp> ops;
    const std::vector<Address> tstates{kFirst, kSecond};
    const std::vector<Address> none;
    prefetch.add(std::span(tstates), ops, 64,
                 [&](Address) -> const std::vector<Address>& { return none; });
    EXPECT_EQ(ops.size(), 2u);
    prefetch.done(true);
    prefetch.forget(kFirst);
    EXPECT_EQ(prefetch.take(kFirst, kChunkA, 256), nullptr);
    EXPECT_NE(prefetch.take(kSecond, kChunkB, 256), nullptr);
}

} // namespace
