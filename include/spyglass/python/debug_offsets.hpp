// _Py_DebugOffsets (3.13+): the table of its own offsets that CPython keeps at the start of
// _PyRuntime. Used to cross-check the compiled-in layout, and to read a minor version newer than
// the compiled-in tables.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "spyglass/error.hpp"
#include "spyglass/python/layout.hpp"

namespace spyglass::python {

// Enough bytes of _PyRuntime to hold the debug offsets of every known layout.
inline constexpr std::size_t kDebugOffsetsReadSize = 1024;

// What the readers copy into fixed local buffers, or read per thread state or interpreter on
// every sample: a layout needing more is refused (check_reader_bounds) instead of being used.
inline constexpr std::size_t kMaxFrameHeaderBytes = 256;       // one _PyInterpreterFrame
inline constexpr std::size_t kMaxFrameObjectHeaderBytes = 512; // one PyFrameObject (<= 3.10)
inline constexpr std::size_t kMaxThreadStateReadBytes = 4096;
inline constexpr std::size_t kMaxInterpreterSpanBytes = 4096; // interp_next .. threads.head

// The bytes of a frame's header the walker reads (the fields it loads, for the layout's frame
// model), of a thread state read per sample, and of the span of an interpreter state read per
// sample; nothing when the layout lacks a field the reader needs.
std::optional<std::uint64_t> frame_header_size(const Layout& layout) noexcept;
std::optional<std::uint64_t> thread_state_read_size(const Layout& layout) noexcept;
std::optional<std::uint64_t> interpreter_span_size(const Layout& layout) noexcept;

// Whether every reader can use `layout`: str and bytes headers within their probe, the code
// header within kMaxCodeHeaderBytes, the frame header within kMaxFrameHeaderBytes (or
// kMaxFrameObjectHeaderBytes), thread states and interpreters within their per-sample limits.
// Fails with Errc::unsupported naming the first structure that does not fit.
Result<void> check_reader_bounds(const Layout& layout);

struct DebugOffsetsLayout {
    Layout layout;
    PythonVersion version; // from the embedded PY_VERSION_HEX
    std::vector<std::string> notes;
};

// True if the bytes start with the "xdebugpy" cookie.
bool has_debug_cookie(std::span<const std::uint8_t> runtime_bytes) noexcept;

// True if the debug offsets say the interpreter is a free-threaded build (3.13t, 3.14t): no
// compiled-in table describes one, so it is refused even where a table of its minor exists.
bool is_free_threaded(std::span<const std::uint8_t> runtime_bytes) noexcept;
// The one line that refuses a free-threaded build.
std::string free_threaded_message(const PythonVersion& version);

// Builds the layout for the interpreter whose _PyRuntime starts with `runtime_bytes`. For a
// version with a compiled-in table the table is cross-checked (differences are noted and the
// interpreter's own values win). The struct is read by the descriptor of its own minor (3.13,
// 3.14, 3.15); a newer minor by the newest descriptor only when its shape is proven to be that
// one's (the .PyRuntime section's size and the object structs' fixed values in place), else it
// is refused naming the version. Every offset must lie within its struct's size.
// `runtime_section_size` is the size of the .PyRuntime ELF section when there is one. A result
// that fails check_reader_bounds is refused.
Result<DebugOffsetsLayout>
layout_from_debug_offsets(std::span<const std::uint8_t> runtime_bytes,
                          std::optional<std::uint64_t> runtime_section_size);

} // namespace spyglass::python
