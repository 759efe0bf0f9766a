// Frames whose CFA is rbp-based (code built with frame pointers, as Debian's 3.13-3.15 are),
// unwound from a copy of the stack: a child of this test blocked in syscall(read) under three
// frame-pointer frames, unwound from the two registers of its syscall file (rbp found on its
// stack), and a thread caught at the `ret` after `pop rbp`, whose CFI finds its caller's rbp in
// the red zone just below rsp (copied below the stack pointer).
#include <algorithm>
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
#include "spyglass/native/function_parts.hpp"
#include "spyglass/native/unwinder.hpp"
#include "spyglass/process/live_memory.hpp"
#include "spyglass/process/task_syscall.hpp"

#define SPYGLASS_FP_FRAME __attribute__((noinline, optimize("no-omit-frame-pointer")))

extern "C" {
SPYGLASS_FP_FRAME int spyglass_fp_block3(int fd) {
    char byte = 0;
    // syscall(), which does not save rbp (nor does libasan's read interceptor get in).
    int got = static_cast<int>(::syscall(SYS_read, fd, &byte, 1));
    asm volatile("" ::: "memory");
    return got + 1;
}
SPYGLASS_FP_FRAME int spyglass_fp_block2(int fd) {
    int got = spyglass_fp_block3(fd);
    asm volatile("" ::: "memory");
    return got + 1;
}
SPYGLASS_FP_FRAME int spyglass_fp_block1(int fd) {
    int got = spyglass_fp_block2(fd);
    asm volatile("" ::: "memory");
    return got + 1;
}

volatile std::uint64_t spyglass_fp_return_in_1 = 0, spyglass_fp_return_in_0 = 0;
SPYGLASS_FP_FRAME int spyglass_fp_leaf(int x) {
    spyglass_fp_return_in_1 = reinterpret_cast<std::uint64_t>(__builtin_return_address(0));
    asm volatile("" ::: "memory");
    return x + 1;
}
SPYGLASS_FP_FRAME int spyglass_fp_middle(int x) {
    spyglass_fp_return_in_0 = reinterpret_cast<std::uint64_t>(__builtin_return_address(0));
    int got = spyglass_fp_leaf(x);
    asm volatile("" ::: "memory");
    return got + 1;
}
SPYGLASS_FP_FRAME int spyglass_fp_outer(int x) {
    int got = spyglass_fp_middle(x);
    asm volatile("" ::: "memory");
    return got + 1;
}
}

namespace spyglass::native {
namespace {

std::vector<std::string> unwound(Unwinder& unwinder, pid_t tid,
                                 const std::vector<std::uint8_t>& bytes) {
    ContextView view;
    EXPECT_TRUE(ContextView::parse(bytes, view));
    UnwindResult result;
    (void)unwinder.unwind(tid, view, result);
    std::vector<std::string> names;
    for (std::uint64_t pc : result.pcs)
        names.push_back(unwinder.symbol(pc).function);
    return names;
}

TEST(NativeFramePointer, BlockedThreadsRbpIsFoundOnItsStack) {
    int fds[2];
    ASSERT_EQ(::pipe(fds), 0);
    pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
        ::close(fds[1]);
        _exit(spyglass_fp_block1(fds[0]) == 4 ? 0 : 1);
    }
    ::close(fds[0]);
    std::optional<process::TaskSyscall> call = test_support::blocked_in_read(child);
    ASSERT_TRUE(call && call->number == SYS_read) << "the child never blocked in read()";
    ContextHeader header;
    header.regs[rsp] = call->sp;
    header.regs[rip] = call->pc;
    header.valid = (1u << rsp) | (1u << rip);
    process::LiveMemory memory(child);
    std::vector<std::uint8_t> bytes(sizeof(ContextHeader) + kMinStackCopy);
    auto got = memory.read_prefix(call->sp, bytes.data() + sizeof header, kMinStackCopy);
    ASSERT_TRUE(got.has_value());
    header.stack_size = static_cast<std::uint32_t>(*got);
    bytes.resize(sizeof header + header.stack_size);
    std::memcpy(bytes.data(), &header, sizeof header);

    Unwinder unwinder(child);
    ASSERT_TRUE(unwinder.ready());
    std::vector<std::string> names = unwound(unwinder, child, bytes);
    ASSERT_EQ(::write(fds[1], "x", 1), 1);
    ASSERT_EQ(::waitpid(child, nullptr, 0), child);
    auto at = std::find(names.begin(), names.end(), "spyglass_fp_block3");
    ASSERT_NE(at, names.end()) << test_support::joined_frames(names);
    ASSERT_GE(names.end() - at, 3) << test_support::joined_frames(names);
    EXPECT_EQ(at[1], "spyglass_fp_block2") << test_support::joined_frames(names);
    EXPECT_EQ(at[2], "spyglass_fp_block1") << test_support::joined_frames(names);
    EXPECT_EQ(unwinder.frame_pointers_found(), 1u);
}

TEST(NativeFramePointer, TheRedZoneHoldsTheCallersRbpAtTheLastRet) {
    ASSERT_EQ(spyglass_fp_outer(1), 4);
    // The leaf's `ret` after its `pop rbp` or `leave`.
    const auto* code = reinterpret_cast<const std::uint8_t*>(&spyglass_fp_leaf);
    std::uint64_t ret = 0;
    for (int i = 1; i < 512 && ret == 0; ++i)
        if (code[i] == 0xc3 && (code[i - 1] == 0x5d || code[i - 1] == 0xc9))
            ret = reinterpret_cast<std::uint64_t>(code + i);
    ASSERT_NE(ret, 0u) << "no pop rbp; ret in spyglass_fp_leaf";

    // A made-up stack at a made-up address (every read is served from the copy): the red zone
    // holds the popped rbp, which points at the middle frame's saved rbp and return address
    // into the outer frame, whose own saved rbp slot ends the chain.
    const std::uint64_t sp = 0x7000'0000'1000;
    std::vector<std::uint64_t> words(16, 0);
    const std::uint64_t middle_rbp = sp + 4 * 8, outer_rbp = sp + 8 * 8;
    words[0] = middle_rbp;              // below rsp: the red zone's last word
    words[1] = spyglass_fp_return_in_1; // [rsp]: into the middle frame
    words[5] = outer_rbp;               // [middle_rbp]
    words[6] = spyglass_fp_return_in_0; // [middle_rbp + 8]: into the outer frame
    auto context = [&](std::uint32_t below) {
        ContextHeader header;
        header.regs[rsp] = sp;
        header.regs[rip] = ret;
        header.regs[rbp] = outer_rbp; // already the middle frame's caller's, popped
        header.valid = (1u << kRegisterCount) - 1;
        header.below = below;
        const std::size_t skip = 8 - below;
        header.stack_size = static_cast<std::uint32_t>(words.size() * 8 - 8);
        std::vector<std::uint8_t> bytes(sizeof header);
        std::memcpy(bytes.data(), &header, sizeof header);
        const auto* raw = reinterpret_cast<const std::uint8_t*>(words.data());
        bytes.insert(bytes.end(), raw + skip, raw + words.size() * 8);
        return bytes;
    };
    Unwinder unwinder(::getpid());
    ASSERT_TRUE(unwinder.ready());
    std::vector<std::string> without = unwound(unwinder, ::getpid(), context(0));
    std::vector<std::string> with = unwound(unwinder, ::getpid(), context(8));
    // Without the red zone the middle frame's CFA (rbp + 16) has no rbp: the walk ends there.
    ASSERT_GE(without.size(), 2u) << test_support::joined_frames(without);
    EXPECT_EQ(without.size(), 2u) << test_support::joined_frames(without);
    ASSERT_GE(with.size(), 3u) << test_support::joined_frames(with);
    EXPECT_EQ(with[0], "spyglass_fp_leaf") << test_support::joined_frames(with);
    EXPECT_EQ(with[1], "spyglass_fp_middle") << test_support::joined_frames(with);
    EXPECT_EQ(with[2], "spyglass_fp_outer") << test_support::joined_frames(with);
}

TEST(NativeFramePointer, AReturnAddressFollowsACall) {
    ASSERT_EQ(spyglass_fp_outer(1), 4);
    Unwinder unwinder(::getpid());
    ASSERT_TRUE(unwinder.ready());
    EXPECT_TRUE(unwinder.follows_call(spyglass_fp_return_in_1));
    EXPECT_TRUE(unwinder.follows_call(spyglass_fp_return_in_0));
    EXPECT_FALSE(unwinder.follows_call(0)); // in no module
}

} // namespace
} // namespace spyglass::native
