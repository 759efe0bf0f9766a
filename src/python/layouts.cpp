// The per-version layouts: generated offsets plus the hand-kept facts that are not offsets.
#include <array>

#include "spyglass/python/layout.hpp"

namespace spyglass::python {

namespace {

#include "layout_tables.inc"

constexpr Layout make(int major, int minor, const LayoutOffsets& offsets) {
    Layout layout;
    layout.version = {major, minor, 0};
    layout.off = offsets;
    layout.py2_strings = major == 2;
    if (major == 2) {
        layout.frame_model = FrameModel::object_frames;
        layout.line_table = LineTableFormat::lnotab_unsigned;
        layout.gil_model = GilModel::thread_state_current;
    } else if (minor <= 10) {
        layout.frame_model = FrameModel::object_frames;
        layout.line_table =
            minor == 10 ? LineTableFormat::linetable_310 : LineTableFormat::lnotab_signed;
        layout.gil_model = minor == 6 ? GilModel::static_globals : GilModel::runtime_gil;
        layout.lasti_scale = minor == 10 ? 2 : 1; // 3.10 counts f_lasti in code units
    } else {
        layout.frame_model = FrameModel::interpreter_frames;
        layout.line_table = LineTableFormat::location_table;
        layout.gil_model = minor >= 12 ? GilModel::interpreter_gil : GilModel::runtime_gil;
        if (minor >= 14) layout.code_tag_mask = 7; // f_executable is a tagged _PyStackRef
    }
    return layout;
}

constexpr Layout kLayouts[] = {
    make(2, 7, kOffsets_2_7),   make(3, 6, kOffsets_3_6),   make(3, 7, kOffsets_3_7),
    make(3, 8, kOffsets_3_8),   make(3, 9, kOffsets_3_9),   make(3, 10, kOffsets_3_10),
    make(3, 11, kOffsets_3_11), make(3, 12, kOffsets_3_12), make(3, 13, kOffsets_3_13),
    make(3, 14, kOffsets_3_14), make(3, 15, kOffsets_3_15),
};

constexpr auto kLayoutPointers = [] {
    std::array<const Layout*, std::size(kLayouts)> pointers{};
    for (std::size_t i = 0; i < std::size(kLayouts); ++i)
        pointers[i] = &kLayouts[i];
    return pointers;
}();

constexpr LayoutField kFields[] = {
#define SPYGLASS_FIELD_ENTRY(name) {#name, &LayoutOffsets::name},
    SPYGLASS_LAYOUT_FIELDS(SPYGLASS_FIELD_ENTRY)
#undef SPYGLASS_FIELD_ENTRY
};

} // namespace

std::string PythonVersion::to_string() const {
    return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(micro);
}

std::span<const LayoutField> layout_fields() {
    return kFields;
}

const Layout* layout_for(int major, int minor) noexcept {
    for (const Layout& layout : kLayouts)
        if (layout.version.major == major && layout.version.minor == minor) return &layout;
    return nullptr;
}

const Layout& newest_layout() noexcept {
    return kLayouts[std::size(kLayouts) - 1];
}

std::span<const Layout* const> all_layouts() noexcept {
    return kLayoutPointers;
}

} // namespace spyglass::python
