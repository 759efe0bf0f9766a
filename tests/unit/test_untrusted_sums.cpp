// Sums of what the target gives: a pointer read from it plus an offset may wrap around the
// address space, and then it is no address at all, never a read somewhere else.
//
// The GIL's words: from 3.12 each interpreter's GIL is a pointer read from the interpreter
// state, and a _Py_DebugOffsets can say where `locked` and `last_holder` are in it. A pointer
// near 2^64 made the span `max + 8 - low` wrap (to 0, or to a few bytes when the two words
// overlap), and the words were then loaded from outside the 64-byte stack buffer they were read
// into, or outside the batch's bytes. Such a GIL is no GIL: an error, the holder unknown.
#include <cstring>
#include <fstream>
#include <iterator>

#include "fake_python.hpp"
#include <gtest/gtest.h>

#include "spyglass/process/remote_field.hpp"
#include "spyglass/python/debug_offsets.hpp"

namespace {

using spyglass::Errc;
using spyglass::process::Address;
using spyglass::python::kAbsent;
using spyglass::python::Layout;
using spyglass::python::layout_for;
using spyglass::test_support::FakePython;

constexpr Address kTop = ~Address{0};

// The low page, where a wrapped sum lands: mapped and readable, so that only a check can stop
// a read there.
constexpr Address kLowPage = 0;

// One interpreter, one thread, and the interpreter's GIL pointer set to `gil`.
struct GilTarget {
    FakePython fake;
    Address interp = 0, tstate = 0;

    GilTarget(const Layout& layout, Address gil) : fake(layout) {
        interp = fake.interpreter();
        tstate = fake.thread(interp, 0x7f00'0000'1000);
        fake.put<std::uint64_t>(interp, fake.off().interp_ceval_gil, gil);
        fake.memory().map(kLowPage, 4096);
    }
};

// The 3.13 descriptor as the interpreter has it, with its GIL words moved: `locked` 4 bytes past
// `last_holder`. Each is inside the 256 bytes the reader allows, so the descriptor is accepted.
Layout overlapping_gil_words() {
    std::ifstream in(std::string(SPYGLASS_SOURCE_DIR) + "/tests/unit/data/debug_offsets_3.13.0.bin",
                     std::ios::binary);
    std::vector<std::uint8_t> bytes{std::istreambuf_iterator<char>(in), {}};
    EXPECT_GE(bytes.size(), spyglass::python::kDebugOffsetsReadSize);
    std::uint64_t base = 0;
    std::memcpy(&base, bytes.data() + 120, 8); // positions in 3.13's _Py_DebugOffsets
    std::uint64_t locked = base + 4, holder = base;
    std::memcpy(bytes.data() + 136, &locked, 8);
    std::memcpy(bytes.data() + 144, &holder, 8);
    auto parsed = spyglass::python::layout_from_debug_offsets(bytes, std::nullopt);
    EXPECT_TRUE(parsed) << parsed.error().message;
    Layout layout = parsed->layout;
    EXPECT_EQ(layout.off.gil_locked, 4u);
    EXPECT_EQ(layout.off.gil_last_holder, 0u);
    // As on 3.14: the thread state has no holds_gil bit, so the GIL itself is read.
    layout.off.tstate_status = kAbsent;
    layout.off.tstate_holds_gil_bit = kAbsent;
    return layout;
}

// Each thread's GIL flag over two reads of the thread list: the first walks the lists, the
// second is the one-batch path.
std::vector<std::int8_t> holds_gil_twice(spyglass::python::PythonProcess& process) {
    std::vector<std::int8_t> flags;
    for (int pass = 0; pass < 2; ++pass) {
        std::vector<spyglass::python::ThreadRecord> threads;
        EXPECT_TRUE(process.read_threads(threads));
        EXPECT_EQ(threads.size(), 1u);
        for (const auto& thread : threads)
            flags.push_back(thread.holds_gil);
    }
    EXPECT_EQ(process.fast_thread_reads(), 1u);
    return flags;
}

TEST(UntrustedGil, AGilThatIsWhereItSaysIsRead) {
    const Layout& layout = *layout_for(3, 12);
    GilTarget target(layout, 0);
    Address gil = target.fake.alloc(layout.off.gil_size);
    target.fake.put<std::uint64_t>(target.interp, layout.off.interp_ceval_gil, gil);
    target.fake.put<std::int32_t>(gil, layout.off.gil_locked, 1);
    target.fake.put<std::uint64_t>(gil, layout.off.gil_last_holder, target.tstate);
    auto process = target.fake.process();
    auto holder = process->gil_holder(target.interp);
    ASSERT_TRUE(holder);
    EXPECT_EQ(*holder, target.tstate);
    EXPECT_EQ(holds_gil_twice(*process), (std::vector<std::int8_t>{1, 1}));
}

// 3.12's words (`last_holder` at 8, `locked` at 16) at a GIL pointer 12 bytes below 2^64:
// `locked` wraps to address 4 and the span came out as 0 bytes.
TEST(UntrustedGil, AGilPointerNearTheTopIsNoGil) {
    const Layout& layout = *layout_for(3, 12);
    ASSERT_EQ(layout.off.gil_locked, 16u);
    ASSERT_EQ(layout.off.gil_last_holder, 8u);
    GilTarget target(layout, kTop - 11);
    target.fake.memory().put<std::int32_t>(4, 1); // `locked`, wrapped
    auto process = target.fake.process();
    auto holder = process->gil_holder(target.interp);
    ASSERT_FALSE(holder) << "holder 0x" << std::hex << *holder;
    EXPECT_EQ(holder.error().code, Errc::corrupt);
    EXPECT_EQ(holds_gil_twice(*process), (std::vector<std::int8_t>{-1, -1}));
}

// Words that overlap (a descriptor the reader accepts) at a pointer 2 bytes below 2^64: the
// span came out as 4 bytes, `locked` was read at address 2 and `last_holder` 4 bytes before
// the stack buffer (ASan: stack-buffer-underflow), or before the GIL's bytes in the batch.
TEST(UntrustedGil, OverlappingWordsNearTheTopAreNoGil) {
    Layout layout = overlapping_gil_words();
    GilTarget target(layout, kTop - 1);
    target.fake.memory().put<std::int32_t>(2, 1); // `locked`, wrapped
    auto process = target.fake.process();
    auto holder = process->gil_holder(target.interp);
    ASSERT_FALSE(holder) << "holder 0x" << std::hex << *holder;
    EXPECT_EQ(holder.error().code, Errc::corrupt);
    EXPECT_EQ(holds_gil_twice(*process), (std::vector<std::int8_t>{-1, -1}));
}

// The same words at a sane address are read (the overlap is odd, not wrong).
TEST(UntrustedGil, OverlappingWordsInPlaceAreRead) {
    Layout layout = overlapping_gil_words();
    GilTarget target(layout, 0);
    Address gil = target.fake.alloc(64);
    target.fake.put<std::uint64_t>(target.interp, layout.off.interp_ceval_gil, gil);
    target.fake.memory().put<std::uint64_t>(gil, target.tstate & 0xffff'ffff);
    target.fake.memory().put<std::int32_t>(gil + 4, 1);
    auto process = target.fake.process();
    auto holder = process->gil_holder(target.interp);
    ASSERT_TRUE(holder);
    EXPECT_EQ(*holder, (target.tstate & 0xffff'ffff) | (Address{1} << 32));
}

// 3.8 - 3.11: the GIL is in _PyRuntime, whose address comes from the ELF file's symbols.
TEST(UntrustedGil, ARuntimeNearTheTopHasNoGil) {
    const Layout& layout = *layout_for(3, 11);
    FakePython fake(layout);
    Address interp = fake.interpreter();
    fake.thread(interp, 0x7f00'0000'1000);
    fake.memory().map(kLowPage, 4096);
    // `locked` 4 bytes past the top, `last_holder` 4 bytes below it.
    fake.target().runtime = kTop - layout.off.runtime_gil_locked + 5;
    fake.memory().put<std::int32_t>(4, 1);
    auto process = fake.process();
    auto holder = process->gil_holder(interp);
    ASSERT_FALSE(holder) << "holder 0x" << std::hex << *holder;
    EXPECT_EQ(holder.error().code, Errc::corrupt);
    EXPECT_EQ(holds_gil_twice(*process), (std::vector<std::int8_t>{-1, -1}));
}

// Up to 3.10 a thread's kernel TID is read from glibc's struct pthread, at the thread id (a
// pointer the thread state holds) plus the offset glibc publishes. A thread id near 2^64 made
// the sum wrap into the low page, and whatever was there became the thread's TID.
TEST(UntrustedSums, AThreadIdNearTheTopHasNoTid) {
    const Layout& layout = *layout_for(3, 10);
    ASSERT_EQ(layout.off.tstate_native_thread_id, kAbsent);
    FakePython fake(layout);
    fake.target().pthread_tid_offset = 0x2d0;
    fake.memory().map(kLowPage, 4096);
    fake.memory().put<std::int32_t>(0x100, 4242);
    Address interp = fake.interpreter();
    Address wrapping = fake.thread(interp, kTop - 0x2d0 + 0x101); // + 0x2d0 = 0x100
    Address sane = fake.alloc(0x400);
    fake.put<std::int32_t>(sane, 0x2d0, 777);
    fake.thread(interp, sane, wrapping); // the list: this one, then the one above
    auto process = fake.process();
    std::vector<spyglass::python::ThreadRecord> threads;
    ASSERT_TRUE(process->read_threads(threads));
    ASSERT_EQ(threads.size(), 2u);
    EXPECT_EQ(threads[0].tid, 777);
    EXPECT_EQ(threads[1].tid, 0); // unknown, not 4242
}

TEST(UntrustedSums, AFieldPastTheTopIsNotRead) {
    spyglass::process::FakeMemory memory;
    memory.map(kLowPage, 4096);
    memory.put<std::uint64_t>(8, 0x1234);
    using spyglass::process::field_address;
    using spyglass::process::read_field;
    EXPECT_EQ(field_address(0x1000, 0x10, 8), Address{0x1010});
    EXPECT_FALSE(field_address(kTop - 7, 16, 8)); // the field's address wraps
    EXPECT_FALSE(field_address(kTop - 15, 8, 8)); // its end does
    EXPECT_EQ(field_address(kTop - 15, 8, 7), kTop - 7);
    EXPECT_EQ(*read_field<std::uint64_t>(memory, 0, 8), 0x1234u);
    auto wrapped = read_field<std::uint64_t>(memory, kTop - 7, 16); // 8, wrapped
    ASSERT_FALSE(wrapped);
    EXPECT_EQ(wrapped.error().code, Errc::corrupt);
    std::uint64_t word = 0;
    EXPECT_FALSE(spyglass::process::read_field_bytes(memory, kTop, 9, &word, sizeof word));
    EXPECT_EQ(word, 0u);
}

} // namespace
