// A process that execs while spyglass attaches to it: the attach is made again from the start
// (what was learned may be of the old program), and a process that keeps exec'ing is said as
// such, not as "bad address".
#include <csignal>
#include <string>
#include <vector>

#include "fake_python.hpp"
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spyglass/process/exec_watch.hpp"
#include "spyglass/python/exec_retry.hpp"
#include "spyglass/python/layout.hpp"

namespace {

using spyglass::Errc;
using spyglass::Result;
using spyglass::process::Address;
using spyglass::process::ExecWatch;
using spyglass::python::attach_across_exec;
using spyglass::python::kAttachAttemptsAcrossExec;
using spyglass::python::ThreadRecord;
using spyglass::test_support::FakePython;

const spyglass::python::Layout& layout_3_12() {
    const auto* layout = spyglass::python::layout_for(3, 12);
    EXPECT_NE(layout, nullptr);
    return *layout;
}

// One attach: the thread states of `fake`, read as attach reads them.
Result<std::size_t> read_threads_of(FakePython& fake) {
    auto process = fake.process();
    std::vector<ThreadRecord> threads;
    if (auto status = process->read_threads(threads); !status)
        return std::unexpected(spyglass::Error{status.error().code, "bad address"});
    return threads.size();
}

TEST(ExecRetry, AttachOverlappedByAnExecIsMadeAgain) {
    // Before the exec: discovery's interpreter state points at what the new program unmapped.
    FakePython old_program(layout_3_12());
    Address old_interp = old_program.interpreter();
    old_program.put<std::uint64_t>(old_interp, layout_3_12().off.interp_threads_head,
                                   0x7000'0000'0000);
    FakePython new_program(layout_3_12());
    Address interp = new_program.interpreter();
    new_program.thread(interp, 0x7f0000001000);
    int attempts = 0;
    auto attached = attach_across_exec<std::size_t>(42, [&] {
        ++attempts;
        FakePython& fake = attempts == 1 ? old_program : new_program;
        return std::pair{read_threads_of(fake), attempts == 1};
    });
    ASSERT_TRUE(attached) << attached.error().message;
    EXPECT_EQ(*attached, 1u);
    EXPECT_EQ(attempts, 2);
}

TEST(ExecRetry, SuccessOverlappedByAnExecIsNotKept) {
    FakePython fake(layout_3_12());
    fake.thread(fake.interpreter(), 0x7f0000001000);
    int attempts = 0;
    auto attached = attach_across_exec<std::size_t>(42, [&] {
        ++attempts;
        return std::pair{read_threads_of(fake), attempts == 1};
    });
    ASSERT_TRUE(attached);
    EXPECT_EQ(attempts, 2);
}

TEST(ExecRetry, ProcessThatKeepsExecingIsSaidAsSuch) {
    int attempts = 0;
    auto attached = attach_across_exec<std::size_t>(42, [&] {
        ++attempts;
        return std::pair{Result<std::size_t>(std::unexpected(spyglass::Error{
                             Errc::bad_address, "reading the interpreter list head: bad address"})),
                         true};
    });
    ASSERT_FALSE(attached);
    EXPECT_EQ(attempts, kAttachAttemptsAcrossExec);
    EXPECT_EQ(attached.error().message,
              "process 42 replaced its program (exec) while spyglass attached to it, 3 times in a "
              "row: try again");
}

// The probe attach uses: an address no program maps tells a live address space (the read
// fails) from a released one (it reads nothing).
TEST(ExecRetry, WatchOnAnUnmappedAddressSeesTheExec) {
    int go[2], exec_done[2];
    ASSERT_EQ(::pipe(go), 0);
    ASSERT_EQ(::pipe2(exec_done, O_CLOEXEC), 0);
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        char byte = 0;
        if (::read(go[0], &byte, 1) != 1) ::_exit(1);
        ::execl("/bin/sleep", "sleep", "30", static_cast<char*>(nullptr));
        ::_exit(127);
    }
    ::close(exec_done[1]);
    {
        ExecWatch watch(child, 4096);
        EXPECT_FALSE(watch.replaced());
        ASSERT_EQ(::write(go[1], "x", 1), 1);
        char byte = 0;
        EXPECT_EQ(::read(exec_done[0], &byte, 1), 0); // closed on exec
        EXPECT_TRUE(watch.replaced());
    }
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    for (int fd : {go[0], go[1], exec_done[0]})
        ::close(fd);
}

} // namespace
