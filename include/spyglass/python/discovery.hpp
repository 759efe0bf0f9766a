// Finding the CPython interpreter inside a process: which ELF object holds it, its version and
// layout, the runtime roots (with fallbacks for stripped binaries), type objects, and how to map
// a thread state to a kernel thread id.
#pragma once

#include <optional>
#include <span>

#include <sys/types.h>

#include "spyglass/error.hpp"
#include "spyglass/process/memory.hpp"
#include "spyglass/process/procfs.hpp"
#include "spyglass/python/target.hpp"

namespace spyglass::python {

// Everything about the target that attaching needs. Fails with a one-line, user-facing message:
// process_gone, permission_denied (with how to grant access), not_python (naming what was found),
// unsupported (naming the version), or not_found when the interpreter is not initialized yet.
Result<TargetInfo> discover(pid_t pid, process::RemoteMemory& memory);

// The text to print when ptrace access is refused.
std::string permission_advice(pid_t pid);

// ---- pieces, exposed for unit tests --------------------------------------------------------

// Finds "X.Y.Z (" (as sys.version starts) in a memory image, e.g. Py_GetVersion's buffer.
std::optional<PythonVersion> find_version_string(std::span<const std::uint8_t> bytes);

// "libpython3.9.so.1.0", "python3.11", "libpython2.7.so" -> the minor version.
std::optional<PythonVersion> version_from_file_name(std::string_view path);

// Decodes PyInterpreterState_Head of 2.7/3.6 (`mov rax, [rip+disp32]; ret`) into &interp_head.
std::optional<Address> decode_interp_head_function(std::span<const std::uint8_t> code,
                                                   Address function_address);

// Scans `region` (bytes read from the target at `region_address`) for a pointer to a plausible
// PyInterpreterState: its thread list's first thread points back to it, has a thread id, and its
// current frame runs a code object. Returns the address of the slot holding the pointer.
std::optional<Address> scan_for_interpreter(process::RemoteMemory& memory, const Layout& layout,
                                            const TypeAddresses& types,
                                            const process::AddressSpace& space,
                                            Address region_address,
                                            std::span<const std::uint8_t> region);

} // namespace spyglass::python
