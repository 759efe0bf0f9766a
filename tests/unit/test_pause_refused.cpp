// A stack that stays torn after the retries needs its thread paused for one read. When the
// pause is refused (another tracer, no permission) the sample is an error, the failure is
// counted with the reason, and the summary says so. Here the "target" is this test's own
// thread, which it cannot trace, over a fake interpreter whose stack changes at every read: the
// refusal is certain, as it is not with a live target whose stack only sometimes stays torn
// (test_right_stacks.PausingRefused).
#include "fake_python.hpp"
#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "spyglass/capture/paused_read.hpp"
#include "spyglass/capture/stack_capture.hpp"
#include "spyglass/cli/summary.hpp"
#include "spyglass/process/thread_tracer.hpp"

namespace {

using namespace spyglass;
using process::Address;
using sampling::CaptureOutcome;
using sampling::PauseMode;
using ::testing::HasSubstr;

struct NeverSettles {
    spyglass::test_support::FakePython fake{*python::layout_for(3, 10)};
    Address head = 0;
    std::vector<Address> callers;
    std::unique_ptr<python::PythonProcess> process;
    python::ThreadRecord record;

    NeverSettles() {
        fake.target().pid = ::getpid();
        Address interp = fake.interpreter();
        Address tstate = fake.thread(interp, 0x7f00'0000'1000);
        Address module = fake.code("<module>", "/app/main.py", 1);
        for (int i = 0; i < 8; ++i)
            callers.push_back(fake.frame_object(module, 0, i + 1));
        head = fake.frame_object(fake.code("leaf", "/app/main.py", 10), callers[0], 1);
        fake.set_frame(tstate, head);
        process = fake.process();
        std::vector<python::ThreadRecord> threads;
        EXPECT_TRUE(process->read_threads(threads));
        EXPECT_EQ(threads.size(), 1u);
        record = threads.at(0);
        record.tid = static_cast<pid_t>(::gettid());
        // Every read finds the innermost frame linked to another caller.
        std::size_t next = 1;
        fake.memory().on_read([this, next](std::uint64_t) mutable {
            fake.put<std::uint64_t>(head, fake.off().frame_back, callers[next++ % callers.size()]);
        });
    }
};

TEST(PauseRefused, ATornStackWhosePauseIsRefusedIsAnErrorCountedWithItsReason) {
    NeverSettles target;
    sampling::StackCapturer capturer(*target.process, 3);
    process::ThreadTracer tracer(::getpid());
    sampling::PauseStats stats;
    const sampling::CaptureContext where{*target.process, capturer, tracer, PauseMode::when_torn,
                                         stats};
    const sampling::Captured captured = sampling::capture_stack(where, target.record);
    EXPECT_EQ(captured.outcome, CaptureOutcome::torn);
    EXPECT_FALSE(captured.paused);
    EXPECT_EQ(stats.pauses, 0u);
    EXPECT_EQ(stats.failed, 1u);
    EXPECT_EQ(stats.refused, 1u);
    EXPECT_THAT(stats.refusal, HasSubstr(fmt::format("process {}", ::getpid())));
    // The closing warning of record and top.
    EXPECT_EQ(cli::pause_failure_warning(stats.summary()),
              "1 time could not pause a thread whose stack changed faster than it could be "
              "read (" +
                  stats.refusal + "); those samples are counted as errors");

    // Each sample that needs a pause is counted once more.
    for (int i = 0; i < 2; ++i)
        EXPECT_EQ(sampling::capture_stack(where, target.record).outcome, CaptureOutcome::torn);
    EXPECT_EQ(stats.failed, 3u);
    EXPECT_THAT(cli::pause_failure_warning(stats.summary()), HasSubstr("3 times could not"));
}

TEST(PauseRefused, NonblockingNeverTriesAPause) {
    NeverSettles target;
    sampling::StackCapturer capturer(*target.process, 3);
    process::ThreadTracer tracer(::getpid());
    sampling::PauseStats stats;
    const sampling::Captured captured = sampling::capture_stack(
        {*target.process, capturer, tracer, PauseMode::never, stats}, target.record);
    EXPECT_EQ(captured.outcome, CaptureOutcome::torn);
    EXPECT_FALSE(captured.paused);
    EXPECT_EQ(stats.failed, 0u);
    EXPECT_EQ(cli::pause_failure_warning(stats.summary()), "");
}

} // namespace
