// The fallbacks of discovery for stripped or unusual binaries: version strings, file names,
// decoding a tiny function, and a plausibility-checked scan for the interpreter state.
#include <cstring>

#include "spyglass/process/bytes.hpp"
#include "spyglass/process/remote_field.hpp"
#include "spyglass/python/discovery.hpp"

namespace spyglass::python {

namespace {

bool is_digit(std::uint8_t c) {
    return c >= '0' && c <= '9';
}

// Parses 1-2 digits at bytes[at]; advances `at`.
std::optional<int> small_number(std::span<const std::uint8_t> bytes, std::size_t& at) {
    if (at >= bytes.size() || !is_digit(bytes[at])) return std::nullopt;
    int value = bytes[at++] - '0';
    if (at < bytes.size() && is_digit(bytes[at])) value = value * 10 + (bytes[at++] - '0');
    if (at < bytes.size() && is_digit(bytes[at])) return std::nullopt;
    return value;
}

using process::load;

} // namespace

std::optional<PythonVersion> find_version_string(std::span<const std::uint8_t> bytes) {
    for (std::size_t i = 0; i + 6 < bytes.size(); ++i) {
        if ((bytes[i] != '2' && bytes[i] != '3') || bytes[i + 1] != '.') continue;
        if (i > 0 && (is_digit(bytes[i - 1]) || bytes[i - 1] == '.')) continue;
        std::size_t at = i + 2;
        auto minor = small_number(bytes, at);
        if (!minor || at >= bytes.size() || bytes[at] != '.') continue;
        ++at;
        auto micro = small_number(bytes, at);
        if (!micro) continue;
        // Optional pre-release tag (a1, b2, rc1) and '+', then " (" as in sys.version.
        if (at + 1 < bytes.size() && (bytes[at] == 'a' || bytes[at] == 'b')) {
            ++at;
            if (!small_number(bytes, at)) continue;
        } else if (at + 2 < bytes.size() && bytes[at] == 'r' && bytes[at + 1] == 'c') {
            at += 2;
            if (!small_number(bytes, at)) continue;
        }
        if (at < bytes.size() && bytes[at] == '+') ++at;
        if (at + 1 < bytes.size() && bytes[at] == ' ' && bytes[at + 1] == '(')
            return PythonVersion{bytes[i] - '0', *minor, *micro};
    }
    return std::nullopt;
}

std::optional<PythonVersion> version_from_file_name(std::string_view path) {
    std::string_view name = path.substr(path.rfind('/') + 1);
    for (std::size_t at = name.find("python"); at != std::string_view::npos;
         at = name.find("python", at + 1)) {
        std::size_t i = at + 6;
        if (i + 3 > name.size() || (name[i] != '2' && name[i] != '3') || name[i + 1] != '.')
            continue;
        std::size_t end = i + 2;
        while (end < name.size() && is_digit(static_cast<std::uint8_t>(name[end])))
            ++end;
        if (end == i + 2 || end - (i + 2) > 2) continue;
        int minor = 0;
        for (std::size_t k = i + 2; k < end; ++k)
            minor = minor * 10 + (name[k] - '0');
        return PythonVersion{name[i] - '0', minor, 0};
    }
    return std::nullopt;
}

std::optional<Address> decode_interp_head_function(std::span<const std::uint8_t> code,
                                                   Address function_address) {
    // 48 8b 05 <disp32> c3   mov rax, QWORD PTR [rip + disp32]; ret
    if (code.size() < 8 || code[0] != 0x48 || code[1] != 0x8b || code[2] != 0x05 || code[7] != 0xc3)
        return std::nullopt;
    auto displacement = load<std::int32_t>(code.data() + 3);
    return function_address + 7 + static_cast<std::int64_t>(displacement);
}

std::optional<Address> scan_for_interpreter(process::RemoteMemory& memory, const Layout& layout,
                                            const TypeAddresses& types,
                                            const process::AddressSpace& space,
                                            Address region_address,
                                            std::span<const std::uint8_t> region) {
    const LayoutOffsets& o = layout.off;
    // The word `offset` bytes into the object at `base` (a candidate's pointer: its sums are
    // checked).
    auto read_word = [&](Address base, std::uint64_t offset) -> std::optional<std::uint64_t> {
        auto address = process::field_address(base, offset, 8);
        if (!address || !space.readable(*address, 8)) return std::nullopt;
        auto value = memory.read_value<std::uint64_t>(*address);
        if (!value) return std::nullopt;
        return *value;
    };
    for (std::size_t i = 0; i + 8 <= region.size(); i += 8) {
        Address candidate = load<std::uint64_t>(region.data() + i);
        if (candidate == 0 || candidate % 8 != 0 || !space.readable(candidate, 64)) continue;
        auto tstate = read_word(candidate, o.interp_threads_head);
        if (!tstate || *tstate == 0 || *tstate == candidate || *tstate % 8 != 0) continue;
        auto back = read_word(*tstate, o.tstate_interp);
        if (!back || *back != candidate) continue;
        auto thread_id = read_word(*tstate, o.tstate_thread_id);
        if (!thread_id || *thread_id == 0) continue;
        // The thread's current frame must run a code object.
        std::optional<std::uint64_t> frame;
        Address code_slot_offset = 0;
        if (layout.frame_model == FrameModel::object_frames) {
            frame = read_word(*tstate, o.tstate_frame);
            code_slot_offset = o.frame_code;
        } else if (o.tstate_current_frame != kAbsent) {
            frame = read_word(*tstate, o.tstate_current_frame);
            code_slot_offset = o.iframe_code;
        } else {
            auto cframe = read_word(*tstate, o.tstate_cframe);
            if (cframe && *cframe != 0) frame = read_word(*cframe, o.cframe_current_frame);
            code_slot_offset = o.iframe_code;
        }
        if (!frame || *frame == 0) continue;
        auto code = read_word(*frame, code_slot_offset);
        if (!code || *code == 0) continue;
        auto code_type = read_word(*code & ~layout.code_tag_mask, o.object_type);
        if (!code_type) continue;
        if (types.code != 0) {
            if (*code_type != types.code) continue;
        } else {
            auto name_pointer = read_word(*code_type, o.type_name);
            char name[8] = {};
            if (!name_pointer || !memory.read(*name_pointer, name, 5) ||
                std::memcmp(name, "code", 5) != 0)
                continue;
        }
        return region_address + i;
    }
    return std::nullopt;
}

} // namespace spyglass::python
