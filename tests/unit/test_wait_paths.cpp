// The path of an open that blocks is read from the target's memory after the sample, when the
// call may have returned and its buffer been reused: what is not a path is no target at all.
#include <memory>

#include <gtest/gtest.h>
#include <unistd.h>

#include "spyglass/model/frame_table.hpp"
#include "spyglass/process/fake_memory.hpp"
#include "spyglass/process/proc_waits.hpp"
#include "spyglass/resolve/wait_resolve.hpp"

namespace {

using namespace spyglass;

constexpr process::Address kPath = 0x10000;

sampling::WaitDescription open_wait(std::string_view bytes) {
    auto memory = std::make_shared<process::FakeMemory>();
    memory->map(kPath, 4096);
    memory->put_bytes(kPath, bytes);
    python::TargetInfo target;
    target.pid = ::getpid();
    sampling::WaitResolver resolver(memory, target);
    sampling::RawWait raw;
    raw.read = sampling::WaitRead::syscall;
    raw.state = 'S';
    raw.nr = *process::syscall_number("openat");
    raw.args = {static_cast<std::uint64_t>(-100), kPath, 0, 0}; // AT_FDCWD, path
    model::FrameTable frames;
    return resolver.describe(raw, ::gettid(), 0, {}, frames, 1);
}

TEST(WaitPaths, AnOpenNamesItsPath) {
    auto wait = open_wait(std::string_view("/no/such/dir/db.sqlite\0", 23));
    EXPECT_EQ(wait.kind, model::WaitKind::file);
    EXPECT_EQ(wait.target, "file /no/such/dir/db.sqlite");
}

TEST(WaitPaths, BytesThatAreNotUtf8AreNoPath) {
    // Seen in a folded output: "[wait openat file dtmp/gt2\xe4..." from a reused buffer.
    auto wait = open_wait(std::string_view("dtmp/gt2\xe4t\0", 11));
    EXPECT_EQ(wait.kind, model::WaitKind::file);
    EXPECT_EQ(wait.target, "");
}

TEST(WaitPaths, ControlCharactersAreNoPath) {
    auto wait = open_wait(std::string_view("/tmp/a\x01z\0", 9));
    EXPECT_EQ(wait.target, "");
}

} // namespace
