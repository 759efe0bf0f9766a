// The capture queue never makes the sampling thread wait: when its slots or its frame ring are
// full a capture is refused, the sampler counts it as dropped (not as a sample), and the
// summary says how many samples are missing.
#include "fake_python.hpp"
#include <gtest/gtest.h>
#include <sys/types.h>
#include <unistd.h>

#include "spyglass/capture/process_sampler.hpp"
#include "spyglass/cli/summary.hpp"
#include "spyglass/handoff/capture_queue.hpp"

namespace {

using spyglass::process::Address;
using spyglass::python::RawFrame;
using spyglass::sampling::CaptureKind;
using spyglass::sampling::CaptureQueue;
using spyglass::sampling::ThreadCapture;

// Takes everything queued; returns how many captures (events included) there were.
std::size_t drain(CaptureQueue& queue) {
    std::size_t taken = 0;
    std::span<const RawFrame> frames;
    while (queue.front(frames) != nullptr) {
        queue.pop();
        ++taken;
    }
    return taken;
}

TEST(CaptureQueue, FullSlotsRefuseACaptureUntilTheConsumerTakesOne) {
    CaptureQueue queue(4, 64);
    RawFrame* frames = nullptr;
    for (std::uint32_t i = 0; i < 4; ++i) {
        ThreadCapture* slot = queue.reserve(2, frames);
        ASSERT_NE(slot, nullptr) << i;
        frames[0].code = 0x1000 + i;
        slot->thread = i;
        queue.push();
    }
    EXPECT_EQ(queue.reserve(0, frames), nullptr);
    EXPECT_EQ(queue.reserve(2, frames), nullptr);
    std::span<const RawFrame> taken;
    const ThreadCapture* first = queue.front(taken);
    ASSERT_NE(first, nullptr);
    EXPECT_EQ(first->thread, 0u);
    ASSERT_EQ(taken.size(), 2u);
    EXPECT_EQ(taken[0].code, 0x1000u);
    queue.pop();
    EXPECT_NE(queue.reserve(2, frames), nullptr);
    queue.push();
    EXPECT_EQ(drain(queue), 4u);
}

TEST(CaptureQueue, AFullFrameRingRefusesACaptureWhileSlotsAreFree) {
    CaptureQueue queue(64, 16);
    RawFrame* frames = nullptr;
    ASSERT_NE(queue.reserve(10, frames), nullptr);
    queue.push();
    // 10 more do not fit after the first 10, nor at the start of the ring (still in use).
    EXPECT_EQ(queue.reserve(10, frames), nullptr);
    EXPECT_EQ(queue.reserve(17, frames), nullptr); // more than the whole ring
    EXPECT_NE(queue.reserve(6, frames), nullptr);  // what is left
    queue.push();
    EXPECT_EQ(drain(queue), 2u);
    EXPECT_NE(queue.reserve(10, frames), nullptr);
}

// A ProcessSampler over a fake interpreter whose one thread is this test's own thread (so that
// its /proc files exist): with a queue of two slots and no consumer, the first pass fills it
// (the thread seen, its sample), the next ones are dropped and counted.
TEST(CaptureQueue, TheSamplerCountsTheCapturesAFullQueueDrops) {
    using namespace spyglass;
    spyglass::test_support::FakePython fake(*python::layout_for(3, 12));
    fake.target().pid = ::getpid();
    Address interp = fake.interpreter();
    Address tstate = fake.thread(interp, 0x7f00'0000'1000);
    fake.put<std::uint64_t>(tstate, fake.off().tstate_native_thread_id,
                            static_cast<std::uint64_t>(::gettid()));
    CaptureQueue queue(2, 64);
    sampling::ThreadRegistry registry;
    sampling::SamplerOptions options;
    options.pause = sampling::PauseMode::never; // never ptrace the test itself
    options.reuse_idle = false;                 // every pass captures the stack
    options.waits = model::WaitDetail::off;
    sampling::ProcessSampler sampler(fake.process(), 0, registry, queue, options);
    sampling::PassStats stats;
    std::uint64_t now_ns = 1'000'000;
    auto pass = [&] {
        EXPECT_EQ(sampler.sample(now_ns, stats), sampling::ProcessState::sampling);
        now_ns += 1'000'000;
    };
    pass();
    EXPECT_EQ(stats.samples, 1u);
    EXPECT_EQ(stats.dropped, 0u);
    pass();
    pass();
    EXPECT_EQ(stats.samples, 1u);
    EXPECT_EQ(stats.dropped, 2u);
    // The consumer catches up: room again, and what was queued is what was counted.
    std::span<const RawFrame> frames;
    const ThreadCapture* seen = queue.front(frames);
    ASSERT_NE(seen, nullptr);
    EXPECT_EQ(seen->kind, CaptureKind::thread_seen);
    EXPECT_EQ(drain(queue), 2u);
    pass();
    EXPECT_EQ(stats.samples, 2u);
    EXPECT_EQ(stats.dropped, 2u);

    // The session's totals carry the drops (session.cpp); the summary says them.
    model::RecordingTotals totals;
    totals.dropped = stats.dropped;
    EXPECT_EQ(cli::dropped_warning(totals),
              "2 samples could not be resolved in time (the resolver fell behind) and are "
              "missing from the profile");
    totals.dropped = 1;
    EXPECT_EQ(cli::dropped_warning(totals),
              "1 sample could not be resolved in time (the resolver fell behind) and is "
              "missing from the profile");
    totals.dropped = 0;
    EXPECT_EQ(cli::dropped_warning(totals), "");
}

} // namespace
