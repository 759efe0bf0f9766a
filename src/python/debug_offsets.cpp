#include "spyglass/python/debug_offsets.hpp"

#include <algorithm>
#include <cstring>
#include <initializer_list>
#include <tuple>
#include <utility>

#include "spyglass/python/code.hpp"
#include "spyglass/python/strings.hpp"

namespace spyglass::python {

namespace {

using Member = std::uint32_t LayoutOffsets::*;

struct Field {
    std::uint16_t position; // byte position of the uint64 inside _Py_DebugOffsets
    Member member;
};

struct Section {
    const char* name;
    std::uint16_t size_position;
    Member size_member; // nullptr when the layout does not keep the struct size
    std::initializer_list<Field> fields;
};

// A value that every build of a minor has at a position of its _Py_DebugOffsets: the sizes and
// offsets of the object structs that have not moved since 3.12 (PyObject, float, int, bytes,
// str). Read at the newest descriptor's positions, they prove that a newer minor's struct has not
// moved anything before them, which is where every field spyglass reads lies.
struct Anchor {
    const char* name;
    std::uint16_t position;
    std::uint64_t value;
};

struct Descriptor {
    int minor;                                      // the minor version whose header this describes
    std::uint16_t total;                            // sizeof(_Py_DebugOffsets)
    std::uint16_t gil_base, gil_locked, gil_holder; // interpreter_state.gil_runtime_state*
    std::uint16_t ascii_size;                       // unicode_object.asciiobject_size
    std::initializer_list<Section> sections;
    std::initializer_list<Anchor> anchors;
};

// Every position measured with scripts/debug_offsets_probe.c against the headers of 3.13.0
// (pyenv), 3.13.18, 3.14.10 and 3.15.2 (Debian sid's -dev packages).
const Descriptor kDescriptor313{
    13,
    584,
    120,
    136,
    144,
    560,
    {
        {"runtime_state",
         24,
         &LayoutOffsets::runtime_size,
         {{40, &LayoutOffsets::runtime_interpreters_head}}},
        {"interpreter_state",
         48,
         &LayoutOffsets::interp_size,
         {{56, &LayoutOffsets::interp_id},
          {64, &LayoutOffsets::interp_next},
          {72, &LayoutOffsets::interp_threads_head},
          {88, &LayoutOffsets::interp_modules},
          {112, &LayoutOffsets::interp_ceval_gil}}},
        {"thread_state",
         152,
         &LayoutOffsets::tstate_size,
         {{168, &LayoutOffsets::tstate_next},
          {176, &LayoutOffsets::tstate_interp},
          {184, &LayoutOffsets::tstate_current_frame},
          {192, &LayoutOffsets::tstate_thread_id},
          {200, &LayoutOffsets::tstate_native_thread_id},
          {208, &LayoutOffsets::tstate_datastack_chunk},
          {216, &LayoutOffsets::tstate_status}}},
        {"interpreter_frame",
         224,
         &LayoutOffsets::iframe_size,
         {{232, &LayoutOffsets::iframe_previous},
          {240, &LayoutOffsets::iframe_code},
          {248, &LayoutOffsets::iframe_instr},
          {256, &LayoutOffsets::iframe_localsplus},
          {264, &LayoutOffsets::iframe_owner}}},
        {"code_object",
         272,
         &LayoutOffsets::code_size,
         {{280, &LayoutOffsets::code_filename},
          {288, &LayoutOffsets::code_name},
          {296, &LayoutOffsets::code_qualname},
          {304, &LayoutOffsets::code_linetable},
          {312, &LayoutOffsets::code_firstlineno},
          {320, &LayoutOffsets::code_argcount},
          {328, &LayoutOffsets::code_localsplusnames},
          {336, &LayoutOffsets::code_localspluskinds},
          {344, &LayoutOffsets::code_code_adaptive}}},
        {"pyobject", 352, nullptr, {{360, &LayoutOffsets::object_type}}},
        {"type_object",
         368,
         nullptr,
         {{376, &LayoutOffsets::type_name}, {392, &LayoutOffsets::type_flags}}},
        {"tuple_object",
         400,
         nullptr,
         {{408, &LayoutOffsets::tuple_items}, {416, &LayoutOffsets::var_size}}},
        {"list_object", 424, nullptr, {{432, &LayoutOffsets::list_items}}},
        {"dict_object",
         448,
         nullptr,
         {{456, &LayoutOffsets::dict_keys}, {464, &LayoutOffsets::dict_values}}},
        {"float_object", 472, nullptr, {{480, &LayoutOffsets::float_value}}},
        {"long_object",
         488,
         nullptr,
         {{496, &LayoutOffsets::long_tag}, {504, &LayoutOffsets::long_digits}}},
        {"bytes_object", 512, nullptr, {{528, &LayoutOffsets::bytes_data}}},
        {"unicode_object",
         536,
         nullptr,
         {{544, &LayoutOffsets::unicode_state}, {552, &LayoutOffsets::unicode_length}}},
    },
    {}};

// 3.14: the interpreter state gained threads_main and the GIL fields moved; the thread state
// gained fields before size; holds_gil left _status (so status is not read); set_object added.
const Descriptor kDescriptor314{
    14,
    760,
    128,
    144,
    152,
    640,
    {
        {"runtime_state",
         24,
         &LayoutOffsets::runtime_size,
         {{40, &LayoutOffsets::runtime_interpreters_head}}},
        {"interpreter_state",
         48,
         &LayoutOffsets::interp_size,
         {{56, &LayoutOffsets::interp_id},
          {64, &LayoutOffsets::interp_next},
          {72, &LayoutOffsets::interp_threads_head},
          {96, &LayoutOffsets::interp_modules},
          {120, &LayoutOffsets::interp_ceval_gil}}},
        {"thread_state",
         176,
         &LayoutOffsets::tstate_size,
         {{192, &LayoutOffsets::tstate_next},
          {200, &LayoutOffsets::tstate_interp},
          {208, &LayoutOffsets::tstate_current_frame},
          {216, &LayoutOffsets::tstate_thread_id},
          {224, &LayoutOffsets::tstate_native_thread_id},
          {232, &LayoutOffsets::tstate_datastack_chunk}}},
        {"interpreter_frame",
         248,
         &LayoutOffsets::iframe_size,
         {{256, &LayoutOffsets::iframe_previous},
          {264, &LayoutOffsets::iframe_code},
          {272, &LayoutOffsets::iframe_instr},
          {280, &LayoutOffsets::iframe_localsplus},
          {288, &LayoutOffsets::iframe_owner}}},
        {"code_object",
         312,
         &LayoutOffsets::code_size,
         {{320, &LayoutOffsets::code_filename},
          {328, &LayoutOffsets::code_name},
          {336, &LayoutOffsets::code_qualname},
          {344, &LayoutOffsets::code_linetable},
          {352, &LayoutOffsets::code_firstlineno},
          {360, &LayoutOffsets::code_argcount},
          {368, &LayoutOffsets::code_localsplusnames},
          {376, &LayoutOffsets::code_localspluskinds},
          {384, &LayoutOffsets::code_code_adaptive}}},
        {"pyobject", 400, nullptr, {{408, &LayoutOffsets::object_type}}},
        {"type_object",
         416,
         nullptr,
         {{424, &LayoutOffsets::type_name}, {440, &LayoutOffsets::type_flags}}},
        {"tuple_object",
         448,
         nullptr,
         {{456, &LayoutOffsets::tuple_items}, {464, &LayoutOffsets::var_size}}},
        {"list_object", 472, nullptr, {{480, &LayoutOffsets::list_items}}},
        {"dict_object",
         528,
         nullptr,
         {{536, &LayoutOffsets::dict_keys}, {544, &LayoutOffsets::dict_values}}},
        {"float_object", 552, nullptr, {{560, &LayoutOffsets::float_value}}},
        {"long_object",
         568,
         nullptr,
         {{576, &LayoutOffsets::long_tag}, {584, &LayoutOffsets::long_digits}}},
        {"bytes_object", 592, nullptr, {{608, &LayoutOffsets::bytes_data}}},
        {"unicode_object",
         616,
         nullptr,
         {{624, &LayoutOffsets::unicode_state}, {632, &LayoutOffsets::unicode_length}}},
    },
    {}};

// 3.15: the thread state gained base_frame and the last-profiled-frame pair before thread_id,
// and holds_gil (read as a status word whose bit 0 it is); err_stackitem, the frame's
// stackpointer/tlbc_index, code's co_tlbc, type's basicsize/dictoffset and heap_type_object
// moved everything after them.
const Descriptor kDescriptor315{
    15,
    888,
    128,
    144,
    152,
    736,
    {
        {"runtime_state",
         24,
         &LayoutOffsets::runtime_size,
         {{40, &LayoutOffsets::runtime_interpreters_head}}},
        {"interpreter_state",
         48,
         &LayoutOffsets::interp_size,
         {{56, &LayoutOffsets::interp_id},
          {64, &LayoutOffsets::interp_next},
          {72, &LayoutOffsets::interp_threads_head},
          {96, &LayoutOffsets::interp_modules},
          {120, &LayoutOffsets::interp_ceval_gil}}},
        {"thread_state",
         176,
         &LayoutOffsets::tstate_size,
         {{192, &LayoutOffsets::tstate_next},
          {200, &LayoutOffsets::tstate_interp},
          {208, &LayoutOffsets::tstate_current_frame},
          {240, &LayoutOffsets::tstate_thread_id},
          {248, &LayoutOffsets::tstate_native_thread_id},
          {256, &LayoutOffsets::tstate_datastack_chunk},
          {272, &LayoutOffsets::tstate_status}}},
        {"interpreter_frame",
         312,
         &LayoutOffsets::iframe_size,
         {{320, &LayoutOffsets::iframe_previous},
          {328, &LayoutOffsets::iframe_code},
          {336, &LayoutOffsets::iframe_instr},
          {344, &LayoutOffsets::iframe_localsplus},
          {352, &LayoutOffsets::iframe_owner}}},
        {"code_object",
         376,
         &LayoutOffsets::code_size,
         {{384, &LayoutOffsets::code_filename},
          {392, &LayoutOffsets::code_name},
          {400, &LayoutOffsets::code_qualname},
          {408, &LayoutOffsets::code_linetable},
          {416, &LayoutOffsets::code_firstlineno},
          {424, &LayoutOffsets::code_argcount},
          {432, &LayoutOffsets::code_localsplusnames},
          {440, &LayoutOffsets::code_localspluskinds},
          {448, &LayoutOffsets::code_code_adaptive}}},
        {"pyobject", 464, nullptr, {{472, &LayoutOffsets::object_type}}},
        {"type_object",
         480,
         nullptr,
         {{488, &LayoutOffsets::type_name},
          {504, &LayoutOffsets::type_flags},
          {512, &LayoutOffsets::type_basicsize},
          {520, &LayoutOffsets::type_dictoffset}}},
        {"heap_type_object", 528, nullptr, {{536, &LayoutOffsets::heaptype_cached_keys}}},
        {"tuple_object",
         544,
         nullptr,
         {{552, &LayoutOffsets::tuple_items}, {560, &LayoutOffsets::var_size}}},
        {"list_object", 568, nullptr, {{576, &LayoutOffsets::list_items}}},
        {"dict_object",
         624,
         nullptr,
         {{632, &LayoutOffsets::dict_keys}, {640, &LayoutOffsets::dict_values}}},
        {"float_object", 648, nullptr, {{656, &LayoutOffsets::float_value}}},
        {"long_object",
         664,
         nullptr,
         {{672, &LayoutOffsets::long_tag}, {680, &LayoutOffsets::long_digits}}},
        {"bytes_object", 688, nullptr, {{704, &LayoutOffsets::bytes_data}}},
        {"unicode_object",
         712,
         nullptr,
         {{720, &LayoutOffsets::unicode_state}, {728, &LayoutOffsets::unicode_length}}},
    },
    {{"pyobject.size", 464, 16},
     {"pyobject.ob_type", 472, 8},
     {"float_object.size", 648, 24},
     {"float_object.ob_fval", 656, 16},
     {"long_object.lv_tag", 672, 16},
     {"long_object.ob_digit", 680, 24},
     {"bytes_object.ob_sval", 704, 32},
     {"unicode_object.state", 720, 32},
     {"unicode_object.length", 728, 16},
     {"unicode_object.asciiobject_size", 736, 40}}};

const Descriptor* const kDescriptors[] = {&kDescriptor313, &kDescriptor314, &kDescriptor315};
const Descriptor& kNewestDescriptor = kDescriptor315;

constexpr std::uint64_t kMaxStructSize = 1u << 20;

std::uint64_t word(std::span<const std::uint8_t> bytes, std::size_t position) {
    std::uint64_t value = 0;
    std::memcpy(&value, bytes.data() + position, sizeof value);
    return value;
}

const char* field_name(Member member) {
    for (const LayoutField& field : layout_fields())
        if (field.member == member) return field.name.data();
    return "?";
}

// Fills `layout` from the descriptor; fails if any value is inconsistent with its struct size.
Result<void> apply(const Descriptor& descriptor, std::span<const std::uint8_t> bytes,
                   Layout& layout, const Layout* table, std::vector<std::string>& notes) {
    // Patch releases grow structs (3.13.18's thread state is 8 bytes longer than 3.13.0's) but
    // keep the offsets of the fields: a size that differs from the table is not worth a note.
    auto set = [&](Member member, std::uint64_t value, bool is_size = false) {
        auto narrowed = static_cast<std::uint32_t>(value);
        if (table != nullptr && !is_size && table->off.*member != kAbsent &&
            table->off.*member != narrowed)
            notes.push_back(fmt::format("_Py_DebugOffsets says {} = {}, the compiled-in table {}; "
                                        "using the interpreter's value",
                                        field_name(member), narrowed, table->off.*member));
        layout.off.*member = narrowed;
    };
    for (const Section& section : descriptor.sections) {
        std::uint64_t size = word(bytes, section.size_position);
        if (size == 0 || size > kMaxStructSize)
            return fail(Errc::unsupported, "_Py_DebugOffsets: implausible size {} of {}", size,
                        section.name);
        if (section.size_member != nullptr) set(section.size_member, size, true);
        for (const Field& field : section.fields) {
            std::uint64_t value = word(bytes, field.position);
            if (value >= size)
                return fail(Errc::unsupported,
                            "_Py_DebugOffsets: {}.{} = {} is outside the struct ({} bytes)",
                            section.name, field_name(field.member), value, size);
            set(field.member, value);
        }
    }
    std::uint64_t gil_base = word(bytes, descriptor.gil_base);
    std::uint64_t gil_locked = word(bytes, descriptor.gil_locked);
    std::uint64_t gil_holder = word(bytes, descriptor.gil_holder);
    if (gil_locked < gil_base || gil_holder < gil_base || gil_locked - gil_base > 256 ||
        gil_holder - gil_base > 256)
        return fail(Errc::unsupported, "_Py_DebugOffsets: implausible GIL offsets");
    set(&LayoutOffsets::gil_locked, gil_locked - gil_base);
    set(&LayoutOffsets::gil_last_holder, gil_holder - gil_base);
    std::uint64_t ascii_size = word(bytes, descriptor.ascii_size);
    if (ascii_size == 0 || ascii_size > 256)
        return fail(Errc::unsupported, "_Py_DebugOffsets: implausible unicode header size");
    set(&LayoutOffsets::unicode_ascii_data, ascii_size);
    // Not in the debug offsets before 3.15; these hold from 3.12 to 3.15.
    set(&LayoutOffsets::unicode_compact_data, ascii_size + 16); // + utf8_length + utf8
    if (layout.off.tstate_datastack_chunk != kAbsent)
        layout.off.tstate_datastack_top = layout.off.tstate_datastack_chunk + 8;
    return {};
}

// The end of the furthest present field of `fields` (offset, width); nothing when one of
// `required` is absent.
std::optional<std::uint64_t>
fields_end(std::initializer_list<std::pair<std::uint32_t, std::uint32_t>> fields,
           std::initializer_list<std::uint32_t> required) {
    for (std::uint32_t offset : required)
        if (offset == kAbsent) return std::nullopt;
    std::uint64_t end = 0;
    for (auto [offset, width] : fields)
        if (offset != kAbsent) end = std::max<std::uint64_t>(end, std::uint64_t{offset} + width);
    return end;
}

Result<void> within(std::optional<std::uint64_t> size, std::size_t limit, std::string_view what) {
    if (!size) return fail(Errc::unsupported, "the layout lacks a field of the {} header", what);
    if (*size > limit)
        return fail(Errc::unsupported,
                    "the {} header would take {} bytes, more than the {} spyglass reads", what,
                    *size, limit);
    return {};
}

// A minor newer than every descriptor is read by the newest descriptor only if its struct still
// has that shape where spyglass reads it: the runtime state's size (the first field read) is the
// .PyRuntime section's, and every anchor after the last section read holds its value. A field
// added or removed anywhere before them moves the anchors; only fields swapped in place (same
// count) would go unseen.
Result<void> prove_newest_shape(std::span<const std::uint8_t> bytes, const PythonVersion& version,
                                std::optional<std::uint64_t> section_size) {
    auto refuse = [&](const std::string& why) -> Result<void> {
        return fail(Errc::unsupported,
                    "Python {} is newer than spyglass knows (_Py_DebugOffsets of 3.13 to 3.{}) "
                    "and {}: spyglass cannot read it without a descriptor for 3.{} (upgrade "
                    "spyglass; docs/adding-a-python-version.md)",
                    version.to_string(), kNewestDescriptor.minor, why, version.minor);
    };
    const std::uint64_t runtime_size =
        word(bytes, kNewestDescriptor.sections.begin()->size_position);
    if (!section_size) return refuse("without a .PyRuntime section its layout cannot be checked");
    if (runtime_size != *section_size)
        return refuse(fmt::format("its _Py_DebugOffsets is not laid out as 3.{}'s (runtime size "
                                  "{}, .PyRuntime section {} bytes)",
                                  kNewestDescriptor.minor, runtime_size, *section_size));
    for (const Anchor& anchor : kNewestDescriptor.anchors)
        if (std::uint64_t value = word(bytes, anchor.position); value != anchor.value)
            return refuse(fmt::format("its _Py_DebugOffsets is not laid out as 3.{}'s ({} "
                                      "reads {} where 3.{} has {})",
                                      kNewestDescriptor.minor, anchor.name, value,
                                      kNewestDescriptor.minor, anchor.value));
    return {};
}

} // namespace

std::optional<std::uint64_t> frame_header_size(const Layout& layout) noexcept {
    const LayoutOffsets& o = layout.off;
    if (layout.frame_model == FrameModel::object_frames)
        return fields_end(
            {{o.object_type, 8}, {o.frame_back, 8}, {o.frame_code, 8}, {o.frame_lasti, 4}},
            {o.frame_back, o.frame_code, o.frame_lasti});
    return fields_end({{o.iframe_code, 8},
                       {o.iframe_previous, 8},
                       {o.iframe_instr, 8},
                       {o.iframe_owner, 1},
                       {o.iframe_is_entry, 1}},
                      {o.iframe_code, o.iframe_previous, o.iframe_instr, o.iframe_owner});
}

std::optional<std::uint64_t> thread_state_read_size(const Layout& layout) noexcept {
    const LayoutOffsets& o = layout.off;
    return fields_end({{o.tstate_next, 8},
                       {o.tstate_interp, 8},
                       {o.tstate_frame, 8},
                       {o.tstate_cframe, 8},
                       {o.tstate_current_frame, 8},
                       {o.tstate_thread_id, 8},
                       {o.tstate_native_thread_id, 8},
                       {o.tstate_datastack_chunk, 8},
                       {o.tstate_datastack_top, 8},
                       {o.tstate_status, 8}},
                      {o.tstate_next, o.tstate_interp});
}

std::optional<std::uint64_t> interpreter_span_size(const Layout& layout) noexcept {
    const LayoutOffsets& o = layout.off;
    if (o.interp_next == kAbsent || o.interp_threads_head == kAbsent) return std::nullopt;
    return std::uint64_t{std::max(o.interp_next, o.interp_threads_head)} + 8 -
           std::min(o.interp_next, o.interp_threads_head);
}

Result<void> check_reader_bounds(const Layout& layout) {
    const LayoutOffsets& o = layout.off;
    auto data_start = layout.py2_strings
                          ? std::optional<std::uint64_t>(o.bytes_data)
                          : fields_end({{o.unicode_ascii_data, 0}, {o.unicode_compact_data, 0}},
                                       {o.unicode_ascii_data, o.unicode_compact_data});
    auto str = str_header_size(layout);
    if (str) str = data_start ? std::optional(std::max(*str, *data_start)) : std::nullopt;
    for (auto [size, limit, what] :
         {std::tuple{str, kStrProbeBytes, "str"},
          std::tuple{bytes_header_size(layout), kStrProbeBytes, "bytes"},
          std::tuple{std::optional<std::uint64_t>(code_header_size(layout)), kMaxCodeHeaderBytes,
                     "code object"},
          std::tuple{frame_header_size(layout),
                     layout.frame_model == FrameModel::object_frames ? kMaxFrameObjectHeaderBytes
                                                                     : kMaxFrameHeaderBytes,
                     "frame"},
          std::tuple{thread_state_read_size(layout), kMaxThreadStateReadBytes, "thread state"},
          std::tuple{interpreter_span_size(layout), kMaxInterpreterSpanBytes, "interpreter state"}})
        if (auto fits = within(size, limit, what); !fits) return fits;
    return {};
}

bool is_free_threaded(std::span<const std::uint8_t> bytes) noexcept {
    return bytes.size() >= 24 && has_debug_cookie(bytes) && word(bytes, 16) != 0;
}

std::string free_threaded_message(const PythonVersion& version) {
    return fmt::format("Python {} is a free-threaded build (python{}.{}t), which spyglass cannot "
                       "read yet: its thread states, frames and objects are laid out and shared "
                       "differently; profile the same code on the GIL build",
                       version.to_string(), version.major, version.minor);
}

bool has_debug_cookie(std::span<const std::uint8_t> bytes) noexcept {
    return bytes.size() >= 8 && std::memcmp(bytes.data(), "xdebugpy", 8) == 0;
}

Result<DebugOffsetsLayout> layout_from_debug_offsets(std::span<const std::uint8_t> bytes,
                                                     std::optional<std::uint64_t> section_size) {
    if (!has_debug_cookie(bytes)) return fail(Errc::not_found, "no _Py_DebugOffsets cookie");
    if (bytes.size() < kDebugOffsetsReadSize)
        return fail(Errc::invalid_argument, "short _Py_DebugOffsets read");
    std::uint64_t hex = word(bytes, 8);
    PythonVersion version{static_cast<int>((hex >> 24) & 0xff),
                          static_cast<int>((hex >> 16) & 0xff),
                          static_cast<int>((hex >> 8) & 0xff)};
    if (version.major != 3 || version.minor < 13)
        return fail(Errc::unsupported, "_Py_DebugOffsets names version 0x{:08x}", hex);
    if (is_free_threaded(bytes))
        return fail(Errc::unsupported, "{}", free_threaded_message(version));

    DebugOffsetsLayout result;
    result.version = version;
    const Layout* table = layout_for(3, version.minor);
    result.layout = table != nullptr ? *table : newest_layout();
    const Descriptor* descriptor = nullptr;
    for (const Descriptor* known : kDescriptors)
        if (known->minor == version.minor) descriptor = known;
    if (descriptor == nullptr) {
        // Newer than every descriptor: its struct is read by the newest one's rules only where
        // that is proven to be its shape.
        if (auto proven = prove_newest_shape(bytes, version, section_size); !proven)
            return std::unexpected(proven.error());
        descriptor = &kNewestDescriptor;
    }
    if (table == nullptr) {
        result.layout.version = {3, version.minor, 0};
        result.layout.from_debug_offsets = true;
        result.notes.push_back(fmt::format(
            "Python {} is newer than spyglass's layout tables (newest: {}.{}): reading it from "
            "the interpreter's own _Py_DebugOffsets, laid out as {}.{}'s",
            version.to_string(), newest_layout().version.major, newest_layout().version.minor, 3,
            kNewestDescriptor.minor));
    }
    if (auto applied = apply(*descriptor, bytes, result.layout, table, result.notes); !applied)
        return std::unexpected(applied.error());
    if (auto fits = check_reader_bounds(result.layout); !fits)
        return fail(Errc::unsupported, "_Py_DebugOffsets: {}", fits.error().message);
    if (section_size && *section_size != result.layout.off.runtime_size)
        return fail(Errc::unsupported,
                    "_Py_DebugOffsets: runtime size {} differs from the .PyRuntime section ({})",
                    result.layout.off.runtime_size, *section_size);
    return result;
}

} // namespace spyglass::python
