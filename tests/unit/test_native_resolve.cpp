// The native resolver on this process: a sample whose native and Python frames disagree keeps
// its Python frames and is marked (its outermost frame) as well as counted; and when the
// target's modules change, the frames it cached by address are forgotten.
#include <cstring>
#include <vector>

#include "native_test_library.hpp"
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "spyglass/resolve/native_resolve.hpp"

extern "C" __attribute__((noinline)) int spyglass_resolve_test_leaf(int x) {
    asm volatile("" ::: "memory");
    return x + 1;
}

namespace spyglass::sampling {
namespace {

python::TargetInfo self_target() {
    python::TargetInfo target;
    target.pid = ::getpid();
    target.version = {3, 12, 0};
    return target;
}

// Stopped on the first instruction of `pc`'s function, called from nowhere (a return address
// of 0 on top of a stack copy of zeros).
std::vector<std::uint8_t> context_at(std::uint64_t pc) {
    std::vector<std::uint8_t> bytes(sizeof(native::ContextHeader) + 4096, 0);
    native::ContextHeader header;
    header.regs[native::rip] = pc;
    header.regs[native::rsp] = 0x7ffd00001000;
    header.valid = (1u << native::rip) | (1u << native::rsp);
    header.stack_size = 4096;
    std::memcpy(bytes.data(), &header, sizeof header);
    return bytes;
}

TEST(NativeResolve, AMismatchKeepsThePythonFramesAndIsMarked) {
    python::TargetInfo target = self_target();
    model::FrameTable frames;
    NativeResolver resolver(target, frames, false);
    model::FrameId f =
        frames.intern({frames.strings().intern("f"), frames.strings().intern("app.py"), 3, 1,
                       model::FrameKind::python});
    // One eval call in the Python chain, none on the native stack (the whole of it unwound).
    python::RawFrame raw;
    raw.flags = python::RawFrame::entry;
    std::vector<python::RawFrame> chain{raw};
    std::vector<model::FrameId> python{f};
    std::vector<std::uint32_t> kept{0};
    std::vector<model::FrameId> out;
    resolver.resolve(::getpid(),
                     context_at(reinterpret_cast<std::uint64_t>(&spyglass_resolve_test_leaf)),
                     chain, python, kept, out);
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0], f);
    EXPECT_EQ(frames.get(out[1]).kind, model::FrameKind::marker);
    EXPECT_EQ(frames.strings().view(frames.get(out[1]).function), kMismatchMarker);
    EXPECT_EQ(resolver.stats().mismatch, 1u);
    EXPECT_EQ(resolver.stats().merged, 0u);
}

TEST(NativeResolve, FramesCachedByAddressAreForgottenWhenTheModulesChange) {
    auto path = spyglass::test_support::build_native_test_library("libspyglass_unloaded.so");
    if (!path) GTEST_SKIP() << "no C compiler could build the test library";
    spyglass::test_support::NativeTestLibrary library;
    ASSERT_TRUE(library.open(*path)) << ::dlerror();
    python::TargetInfo target = self_target();
    model::FrameTable frames;
    // Maps read at every unwind: no waiting in a test.
    NativeResolver resolver(target, frames, false, native::RefreshPolicy{0, 0});
    const std::vector<std::uint8_t> context = context_at(library.sized);
    std::vector<model::FrameId> out;
    resolver.resolve(::getpid(), context, {}, {}, {}, out); // a native stack alone
    ASSERT_FALSE(out.empty());
    EXPECT_EQ(frames.strings().view(frames.get(out[0]).function), "spyglass_sym_sized");
    EXPECT_EQ(frames.get(out[0]).address, library.sized - library.base);
    EXPECT_EQ(resolver.stats().module_reports, 0u);

    // Unloaded: the same address is no function of any module now.
    library.close();
    Dl_info info{};
    ASSERT_EQ(::dladdr(reinterpret_cast<void*>(library.sized), &info), 0) << "still mapped";
    resolver.resolve(::getpid(), context, {}, {}, {}, out);
    ASSERT_FALSE(out.empty());
    EXPECT_EQ(resolver.stats().module_reports, 1u);
    EXPECT_NE(frames.strings().view(frames.get(out[0]).function), "spyglass_sym_sized");
    EXPECT_EQ(frames.strings().view(frames.get(out[0]).function),
              fmt::format("?+0x{:x}", library.sized));
}

} // namespace
} // namespace spyglass::sampling
