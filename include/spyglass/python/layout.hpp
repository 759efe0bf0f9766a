// The layout of CPython's structures for one minor version: byte offsets (generated from the
// installed headers by scripts/gen_layouts.py, see layout_tables.cpp) plus the few facts about a
// version that are not offsets (frame model, line-table format, how the GIL is found).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace spyglass::python {

inline constexpr std::uint32_t kAbsent = 0xffffffffu;

// Every offset the readers use, by name. The generator emits exactly these names; a field the
// version does not have keeps kAbsent.
// clang-format off
#define SPYGLASS_LAYOUT_FIELDS(X)                                                                  \
    /* _PyRuntimeState (3.7+) */                                                                   \
    X(runtime_size) X(runtime_interpreters_head) X(runtime_interpreters_main)                      \
    X(runtime_main_thread) X(runtime_gil_locked) X(runtime_gil_last_holder)                        \
    X(runtime_tstate_current) X(runtime_gil)                                                       \
    /* PyInterpreterState */                                                                       \
    X(interp_size) X(interp_next) X(interp_threads_head) X(interp_id) X(interp_modules)            \
    X(interp_ceval_gil)                                                                            \
    /* struct _gil_runtime_state (3.12+, reached through interp->ceval.gil); its size (3.7+):    \
       a thread waiting for the GIL waits on a futex word inside it (cond, mutex, switch_*) */    \
    X(gil_locked) X(gil_last_holder) X(gil_size)                                                   \
    /* PyThreadState */                                                                            \
    X(tstate_size) X(tstate_next) X(tstate_interp) X(tstate_frame) X(tstate_cframe)                \
    X(cframe_current_frame) X(cframe_previous) X(tstate_current_frame) X(tstate_thread_id)         \
    X(tstate_native_thread_id) X(tstate_datastack_chunk) X(tstate_datastack_top)                   \
    X(tstate_status) X(tstate_holds_gil_bit) X(tstate_state)                                       \
    /* PyFrameObject (up to 3.10) */                                                               \
    X(frame_back) X(frame_code) X(frame_lasti) X(frame_localsplus)                                 \
    /* _PyInterpreterFrame (3.11+) and the frame owner enum */                                     \
    X(iframe_size) X(iframe_code) X(iframe_previous) X(iframe_instr) X(iframe_owner)               \
    X(iframe_is_entry) X(iframe_localsplus) X(owner_thread) X(owner_generator)                     \
    X(owner_frame_object) X(owner_cstack)                                                          \
    /* _PyStackChunk (3.11+) */                                                                    \
    X(chunk_previous) X(chunk_size) X(chunk_top) X(chunk_data)                                     \
    /* PyCodeObject */                                                                             \
    X(code_size) X(code_argcount) X(code_nlocals) X(code_nlocalsplus) X(code_firstlineno)          \
    X(code_filename) X(code_name) X(code_qualname) X(code_linetable) X(code_code)                  \
    X(code_code_adaptive) X(code_firsttraceable) X(code_varnames) X(code_localsplusnames)          \
    X(code_localspluskinds) X(code_flags) X(code_kwonlyargcount) X(code_cellvars)                  \
    X(code_freevars)                                                                               \
    /* objects and types */                                                                        \
    X(object_type) X(var_size) X(type_name) X(type_flags) X(type_basicsize) X(type_dictoffset)     \
    X(heaptype_cached_keys) X(type_itemsize)                                                       \
    /* str / bytes / unicode */                                                                    \
    X(bytes_data) X(unicode_length) X(unicode_state) X(unicode_ascii_data)                         \
    X(unicode_compact_data) X(unicode_legacy_data) X(unicode_kind_shift) X(unicode_compact_bit)    \
    X(unicode_ascii_bit) X(py2_unicode_length) X(py2_unicode_str) X(py2_unicode_size)              \
    /* numbers, cells, functions, exceptions */                                                    \
    X(int_value) X(long_digits) X(long_tag) X(float_value) X(long_shift) X(cell_ref)               \
    X(function_name) X(function_qualname) X(exception_args)                                        \
    /* containers; dict: 2.7 open table, 3.6+ keys object with indices then entries */             \
    X(tuple_items) X(list_items) X(module_dict) X(dict_used) X(dict_keys) X(dict_values)           \
    X(dict_py2_mask) X(dict_py2_table) X(dict_py2_entry_size) X(keys_size) X(keys_log2_size)       \
    X(keys_log2_index_bytes) X(keys_kind) X(keys_nentries) X(keys_indices) X(keys_entry_size)      \
    X(keys_unicode_entry_size) X(values_values) X(values_capacity) X(values_valid) X(set_used)     \
    X(set_mask) X(set_table) X(set_entry_key) X(set_entry_size)
// clang-format on

struct LayoutOffsets {
#define SPYGLASS_DECLARE_FIELD(name) std::uint32_t name = kAbsent;
    SPYGLASS_LAYOUT_FIELDS(SPYGLASS_DECLARE_FIELD)
#undef SPYGLASS_DECLARE_FIELD
};

// Names and values of the fields, in declaration order (for cross-checks and diagnostics).
struct LayoutField {
    std::string_view name;
    std::uint32_t LayoutOffsets::*member;
};
std::span<const LayoutField> layout_fields();

enum class FrameModel : std::uint8_t {
    object_frames,      // PyFrameObject linked by f_back (2.7 - 3.10)
    interpreter_frames, // _PyInterpreterFrame linked by previous (3.11+)
};

enum class LineTableFormat : std::uint8_t {
    lnotab_unsigned, // 2.7: (address step, line step) pairs, both unsigned
    lnotab_signed,   // 3.6 - 3.9: line step is int8
    linetable_310,   // 3.10: (length, signed delta) ranges, -128 = no line
    location_table,  // 3.11+: variable-length location entries, offsets in code units
};

enum class GilModel : std::uint8_t {
    thread_state_current, // 2.7 (and 3.6 without symtab): _PyThreadState_Current is the holder
    static_globals,       // 3.6: static gil_locked / gil_last_holder
    runtime_gil,          // 3.7 - 3.11: _PyRuntime.ceval.gil
    interpreter_gil,      // 3.12+: interp->ceval.gil -> {locked, last_holder}
};

struct PythonVersion {
    int major = 0;
    int minor = 0;
    int micro = 0;
    [[nodiscard]] std::string to_string() const;
    friend auto operator<=>(const PythonVersion&, const PythonVersion&) = default;
    [[nodiscard]] bool at_least(int major_, int minor_) const noexcept {
        return major > major_ || (major == major_ && minor >= minor_);
    }
};

struct Layout {
    PythonVersion version; // the minor version the table was made for (micro = 0)
    FrameModel frame_model = FrameModel::object_frames;
    LineTableFormat line_table = LineTableFormat::location_table;
    GilModel gil_model = GilModel::runtime_gil;
    bool py2_strings = false;        // code names are 2.7 str (bytes), not unicode
    std::uint8_t lasti_scale = 1;    // f_lasti * scale = byte offset (2 on 3.10)
    std::uint64_t code_tag_mask = 0; // low bits of f_executable to clear (tagged refs, 3.14)
    bool from_debug_offsets = false; // offsets were read from the target's _Py_DebugOffsets
    LayoutOffsets off;

    [[nodiscard]] bool has(std::uint32_t LayoutOffsets::*field) const noexcept {
        return off.*field != kAbsent;
    }
};

// The compiled-in table for a minor version, or nullptr.
const Layout* layout_for(int major, int minor) noexcept;
// The newest minor version with a compiled-in table.
const Layout& newest_layout() noexcept;
std::span<const Layout* const> all_layouts() noexcept;

} // namespace spyglass::python
