// The native unwinder on a real process: a child of this test blocked in read() three calls
// deep, unwound from the two registers /proc's syscall file gives (no stop), and a child
// spinning in a loop, unwound from the registers of a ptrace stop. Both from a copy of the
// stack only, as the resolver does after the thread has run on.
#include <algorithm>
#include <csignal>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "native_test_library.hpp"
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "spyglass/clock.hpp"
#include "spyglass/native/unwinder.hpp"
#include "spyglass/process/live_memory.hpp"
#include "spyglass/process/task_syscall.hpp"
#include "spyglass/process/thread_tracer.hpp"

// Without a frame pointer, as a release build compiles them (and as the sanitizer build would
// not): the syscall file gives only sp and pc, so a frame whose CFA is rbp-based cannot be
// unwound without a stop when the leaf (libc's syscall()) has not saved rbp. That limit is
// documented in docs/native.md; this test is about the CFI path.
#define SPYGLASS_TEST_FRAME __attribute__((noinline, optimize("omit-frame-pointer")))

extern "C" {
SPYGLASS_TEST_FRAME int spyglass_test_level3(int fd) {
    char byte = 0;
    // syscall(), not read(): under ASan read() goes through libasan's interceptor.
    int got = static_cast<int>(::syscall(SYS_read, fd, &byte, 1));
    asm volatile("" ::: "memory");
    return got + 1;
}
constexpr int kLevel2CallLine = __LINE__ + 2;
SPYGLASS_TEST_FRAME int spyglass_test_level2(int fd) {
    int got = spyglass_test_level3(fd);
    asm volatile("" ::: "memory");
    return got + 1;
}
SPYGLASS_TEST_FRAME int spyglass_test_level1(int fd) {
    int got = spyglass_test_level2(fd);
    asm volatile("" ::: "memory");
    return got + 1;
}

volatile int spyglass_test_spin_flag = 1;
__attribute__((noinline)) void spyglass_test_spin_inner(int ready_fd) {
    char byte = 1;
    if (::write(ready_fd, &byte, 1) != 1) _exit(3);
    while (spyglass_test_spin_flag != 0)
        asm volatile("" ::: "memory");
}
__attribute__((noinline)) void spyglass_test_spin_outer(int ready_fd) {
    spyglass_test_spin_inner(ready_fd);
    asm volatile("" ::: "memory");
}
}

namespace spyglass::native {
namespace {

std::vector<std::uint8_t> copy_stack(pid_t pid, const ContextHeader& header) {
    process::LiveMemory memory(pid);
    std::vector<std::uint8_t> bytes(sizeof(ContextHeader) + kMaxStackCopy);
    auto got =
        memory.read_prefix(header.regs[rsp], bytes.data() + sizeof(ContextHeader), kMaxStackCopy);
    EXPECT_TRUE(got.has_value());
    ContextHeader with = header;
    with.stack_size = got ? static_cast<std::uint32_t>(*got) : 0;
    bytes.resize(sizeof(ContextHeader) + with.stack_size);
    std::memcpy(bytes.data(), &with, sizeof with);
    return bytes;
}

std::vector<std::string> functions(Unwinder& unwinder, pid_t tid,
                                   const std::vector<std::uint8_t>& bytes,
                                   std::vector<std::uint64_t>* pcs = nullptr) {
    ContextView view;
    EXPECT_TRUE(ContextView::parse(bytes, view));
    UnwindResult result;
    EXPECT_TRUE(unwinder.unwind(tid, view, result));
    std::vector<std::string> names;
    for (std::uint64_t pc : result.pcs)
        names.push_back(unwinder.symbol(pc).function);
    if (pcs != nullptr) *pcs = result.pcs;
    return names;
}

std::ptrdiff_t position(const std::vector<std::string>& names, const std::string& name) {
    auto it = std::find(names.begin(), names.end(), name);
    return it == names.end() ? -1 : it - names.begin();
}

TEST(NativeUnwind, BlockedThreadFromItsSyscallFileAlone) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        ::close(fds[1]);
        _exit(spyglass_test_level1(fds[0]) == 4 ? 0 : 1);
    }
    ::close(fds[0]);
    // Ready when the kernel says the child is blocked in read().
    std::optional<process::TaskSyscall> call = test_support::blocked_in_read(child);
    ASSERT_TRUE(call && call->number == SYS_read) << "the child never blocked in read()";
    ContextHeader header;
    header.regs[rsp] = call->sp;
    header.regs[rip] = call->pc;
    header.valid = (1u << rsp) | (1u << rip);
    std::vector<std::uint8_t> bytes = copy_stack(child, header);

    Unwinder unwinder(child);
    ASSERT_TRUE(unwinder.ready());
    std::vector<std::uint64_t> pcs;
    std::vector<std::string> names = functions(unwinder, child, bytes, &pcs);
    // Looked up while the child is there: its files are opened through /proc/PID/root.
    for (std::uint64_t pc : pcs)
        (void)unwinder.source_line(pc);
    ASSERT_EQ(::write(fds[1], "x", 1), 1);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    auto l3 = position(names, "spyglass_test_level3"), l2 = position(names, "spyglass_test_level2"),
         l1 = position(names, "spyglass_test_level1");
    ASSERT_GE(l3, 1) << test_support::joined_frames(
        names); // syscall() in the C library is above it
    ASSERT_EQ(l2, l3 + 1) << test_support::joined_frames(names);
    EXPECT_EQ(l1, l2 + 1) << test_support::joined_frames(names);
    EXPECT_EQ(unwinder.symbol(0).known, false);
    // This file is built with -g: the call in spyglass_test_level2 has its line (the source
    // line of a return address moved into its call), and a build-id names the module.
    const SourceLine& at = unwinder.source_line(pcs[static_cast<std::size_t>(l2)]);
    EXPECT_TRUE(at.file.ends_with("test_native_unwind.cpp")) << at.file;
    EXPECT_EQ(at.line, kLevel2CallLine);
    EXPECT_FALSE(unwinder.symbol(pcs[static_cast<std::size_t>(l2)]).build_id.empty());
    EXPECT_EQ(unwinder.source_line(0).line, 0);
}

TEST(NativeUnwind, RunningThreadFromAStop) {
    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        ::close(ready[0]);
        spyglass_test_spin_outer(ready[1]);
        _exit(0);
    }
    ::close(ready[1]);
    char byte = 0;
    ASSERT_EQ(::read(ready[0], &byte, 1), 1);
    // The child may still be on its way out of write(): stop it until it is in the loop.
    Unwinder unwinder(child);
    std::vector<std::string> names;
    process::ThreadTracer tracer(child);
    for (int attempt = 0; attempt < 1000; ++attempt) {
        ASSERT_TRUE(tracer.pause(child).has_value());
        user_regs_struct regs{};
        ASSERT_TRUE(tracer.registers(child, regs));
        ContextHeader header;
        const std::uint64_t values[kRegisterCount] = {
            regs.rax, regs.rdx, regs.rcx, regs.rbx, regs.rsi, regs.rdi, regs.rbp, regs.rsp, regs.r8,
            regs.r9,  regs.r10, regs.r11, regs.r12, regs.r13, regs.r14, regs.r15, regs.rip};
        std::copy(std::begin(values), std::end(values), header.regs);
        header.valid = (1u << kRegisterCount) - 1;
        std::vector<std::uint8_t> bytes = copy_stack(child, header);
        tracer.resume(child);
        names = functions(unwinder, child, bytes);
        if (!names.empty() && names[0] == "spyglass_test_spin_inner") break;
    }
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    ASSERT_FALSE(names.empty());
    EXPECT_EQ(names[0], "spyglass_test_spin_inner") << test_support::joined_frames(names);
    EXPECT_EQ(position(names, "spyglass_test_spin_outer"), 1) << test_support::joined_frames(names);
}

TEST(NativeUnwind, AContextWithoutAProgramCounterIsRefused) {
    Unwinder unwinder(::getpid());
    std::vector<std::uint8_t> bytes(sizeof(ContextHeader));
    ContextView view;
    ASSERT_TRUE(ContextView::parse(bytes, view));
    UnwindResult result;
    EXPECT_FALSE(unwinder.unwind(::getpid(), view, result));
    // A header that claims more stack than it carries.
    ContextHeader header;
    header.stack_size = 4096;
    std::memcpy(bytes.data(), &header, sizeof header);
    EXPECT_FALSE(ContextView::parse(bytes, view));
}

} // namespace
} // namespace spyglass::native
