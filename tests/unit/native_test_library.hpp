// A small shared library built by the test that uses it, with the C compiler the tests find on
// the path, stripped of its .symtab (-s): only .dynsym names its functions, as in a stripped
// distribution library. In text order: a sized exported function, a static one, an exported
// assembly label without a size, another static one, and two exported functions that return
// the static ones' addresses.
#pragma once

#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include <dlfcn.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "spyglass/clock.hpp"
#include "spyglass/process/task_syscall.hpp"

namespace spyglass::test_support {

inline constexpr const char* kNativeTestLibrarySource = R"(
__attribute__((noinline)) int spyglass_sym_sized(int x) { return x * 3 + 1; }
static __attribute__((noinline, noclone, used)) int after_sized(int x) {
    int y = x;
    for (int i = 0; i < x; ++i) y = y * 7 + i;
    return y;
}
__asm__(".text\n.globl spyglass_sym_sizeless\n.type spyglass_sym_sizeless, @function\n"
        "spyglass_sym_sizeless:\n\tret\n");
static __attribute__((noinline, noclone, used)) int after_sizeless(int x) {
    int y = x;
    for (int i = 0; i < x; ++i) y = y * 5 + i;
    return y;
}
void* spyglass_sym_after_sized(void) { return (void*)&after_sized; }
void* spyglass_sym_after_sizeless(void) { return (void*)&after_sizeless; }
)";

// Builds the library as `name` in a new temporary directory: its path, or nothing when no
// compiler could build it.
inline std::optional<std::string> build_native_test_library(const std::string& name) {
    char dir[] = "/tmp/spyglass-native-lib-XXXXXX";
    if (::mkdtemp(dir) == nullptr) return std::nullopt;
    const std::string source = std::string(dir) + "/lib.c", out = std::string(dir) + "/" + name;
    std::ofstream(source) << kNativeTestLibrarySource;
    // -fno-toplevel-reorder keeps the functions and the assembly label in source order.
    const std::string command = "cc -shared -fPIC -O1 -fno-toplevel-reorder -s -o '" + out + "' '" +
                                source + "' >/dev/null 2>&1";
    if (std::system(command.c_str()) != 0 || ::access(out.c_str(), R_OK) != 0) return std::nullopt;
    return out;
}

// The library's addresses once loaded.
struct NativeTestLibrary {
    void* handle = nullptr;
    std::uint64_t base = 0; // where it is loaded (dladdr's dli_fbase)
    std::uint64_t sized = 0, sizeless = 0, after_sized = 0, after_sizeless = 0;

    bool open(const std::string& path) {
        handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (handle == nullptr) return false;
        auto address = [this](const char* name) {
            return reinterpret_cast<std::uint64_t>(::dlsym(handle, name));
        };
        using Getter = void* (*)();
        sized = address("spyglass_sym_sized");
        sizeless = address("spyglass_sym_sizeless");
        auto* get_after_sized =
            reinterpret_cast<Getter>(::dlsym(handle, "spyglass_sym_after_sized"));
        auto* get_after_sizeless =
            reinterpret_cast<Getter>(::dlsym(handle, "spyglass_sym_after_sizeless"));
        if (sized == 0 || sizeless == 0 || get_after_sized == nullptr ||
            get_after_sizeless == nullptr)
            return false;
        after_sized = reinterpret_cast<std::uint64_t>(get_after_sized());
        after_sizeless = reinterpret_cast<std::uint64_t>(get_after_sizeless());
        Dl_info info{};
        if (::dladdr(reinterpret_cast<void*>(sized), &info) == 0) return false;
        base = reinterpret_cast<std::uint64_t>(info.dli_fbase);
        return true;
    }
    void close() {
        if (handle != nullptr) ::dlclose(handle);
        handle = nullptr;
    }
};

// Frame names innermost first, as one line for a failed assertion's message.
inline std::string joined_frames(const std::vector<std::string>& names) {
    std::string out;
    for (const std::string& name : names)
        out += name + " <- ";
    return out;
}

// The syscall file of a child that is about to block in read(2), once it is blocked there
// (10 s at most); what was last read otherwise.
inline std::optional<process::TaskSyscall> blocked_in_read(pid_t child) {
    process::TaskSyscallReader reader(child, child);
    std::optional<process::TaskSyscall> call;
    const std::uint64_t deadline = monotonic_ns() + 10'000'000'000ull;
    while (monotonic_ns() < deadline) {
        call = reader.read();
        if (call && !call->running && call->number == SYS_read) break;
        ::sched_yield();
    }
    return call;
}

} // namespace spyglass::test_support
