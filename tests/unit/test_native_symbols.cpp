// Native symbols of a stripped library built by the test (native_test_library.hpp), looked up
// in this process: a static function that lost its symbol is "module+0xoffset", never the
// name of the function before it, sized or not; and a library loaded after the unwinder was
// made is found as soon as an unwind meets it.
#include <cstring>
#include <vector>

#include "native_test_library.hpp"
#include <fmt/format.h>
#include <gtest/gtest.h>

#include "spyglass/native/unwinder.hpp"

namespace spyglass::native {
namespace {

std::string base_name(const std::string& path) {
    return path.substr(path.rfind('/') + 1);
}

TEST(NativeSymbols, AStrippedStaticFunctionIsItsModuleAndOffset) {
    auto path = spyglass::test_support::build_native_test_library("libspyglass_symbols.so");
    if (!path) GTEST_SKIP() << "no C compiler could build the test library";
    spyglass::test_support::NativeTestLibrary library;
    ASSERT_TRUE(library.open(*path)) << ::dlerror();
    Unwinder unwinder(::getpid());
    ASSERT_TRUE(unwinder.ready());
    const std::string module = base_name(*path);

    const NativeSymbol& sized = unwinder.symbol(library.sized + 1);
    EXPECT_TRUE(sized.known);
    EXPECT_EQ(sized.function, "spyglass_sym_sized");
    EXPECT_EQ(sized.module, module);
    EXPECT_EQ(sized.address, library.sized + 1 - library.base); // a .so's own addresses
    // The label without a size names its own address.
    EXPECT_EQ(unwinder.symbol(library.sizeless).function, "spyglass_sym_sizeless");

    // Past a sized symbol's end, and past a sizeless one: static functions with no symbol.
    for (std::uint64_t pc : {library.after_sized + 2, library.after_sizeless + 2}) {
        const NativeSymbol& symbol = unwinder.symbol(pc);
        EXPECT_FALSE(symbol.known) << symbol.function;
        EXPECT_EQ(symbol.function, fmt::format("{}+0x{:x}", module, pc - library.base));
        EXPECT_EQ(symbol.offset, pc - library.base);
        EXPECT_EQ(symbol.module, module);
    }
    library.close();
}

TEST(NativeSymbols, ALibraryLoadedAfterTheUnwinderWasMadeIsFoundByTheUnwindThatMeetsIt) {
    auto path = spyglass::test_support::build_native_test_library("libspyglass_late.so");
    if (!path) GTEST_SKIP() << "no C compiler could build the test library";
    Unwinder unwinder(::getpid());
    ASSERT_TRUE(unwinder.ready());
    spyglass::test_support::NativeTestLibrary library;
    ASSERT_TRUE(library.open(*path)) << ::dlerror();
    // Stopped on the first instruction of a function of the new library, called from
    // nowhere: the return address on top of the stack is 0.
    std::vector<std::uint8_t> bytes(sizeof(ContextHeader) + 4096, 0);
    ContextHeader header;
    header.regs[rip] = library.sized;
    header.regs[rsp] = 0x7ffd00001000; // the copy stands for the stack: never read live
    header.valid = (1u << rip) | (1u << rsp);
    header.stack_size = 4096;
    std::memcpy(bytes.data(), &header, sizeof header);
    ContextView view;
    ASSERT_TRUE(ContextView::parse(bytes, view));
    UnwindResult result;
    ASSERT_TRUE(unwinder.unwind(::getpid(), view, result));
    EXPECT_EQ(unwinder.generation(), 1u); // the modules were reported again
    ASSERT_FALSE(result.pcs.empty());
    EXPECT_EQ(result.pcs[0], library.sized);
    ASSERT_EQ(result.sps.size(), result.pcs.size());
    EXPECT_EQ(result.sps[0], header.regs[rsp]);
    EXPECT_EQ(unwinder.symbol(library.sized).function, "spyglass_sym_sized");
    // Nothing changed since: the next unwind reports nothing again.
    ASSERT_TRUE(unwinder.unwind(::getpid(), view, result));
    EXPECT_EQ(unwinder.generation(), 1u);
    library.close();
}

} // namespace
} // namespace spyglass::native
