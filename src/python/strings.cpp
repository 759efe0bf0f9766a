#include "spyglass/python/strings.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <initializer_list>
#include <utility>

#include "spyglass/process/bytes.hpp"
#include "spyglass/process/checked.hpp"
#include "spyglass/process/remote_field.hpp"

namespace spyglass::python {

namespace {

constexpr std::size_t kProbe = kStrProbeBytes;

using process::checked_load;
using process::load;

std::unexpected<ReadError> corrupt(Address address) {
    return std::unexpected(ReadError{Errc::corrupt, address});
}

// A header field that the caller checked lies inside the probe.
template <class T>
T field(std::span<const std::uint8_t> probe, std::uint32_t offset) {
    return checked_load<T>(probe, offset).value_or(T{});
}

// The end of the furthest of `fields` (offset, width), or nothing when one is absent.
std::optional<std::uint64_t>
fields_end(std::initializer_list<std::pair<std::uint32_t, std::uint32_t>> fields) {
    std::uint64_t end = 0;
    for (auto [offset, width] : fields) {
        if (offset == kAbsent) return std::nullopt;
        end = std::max<std::uint64_t>(end, std::uint64_t{offset} + width);
    }
    return end;
}

// Points `data` at [offset, offset + length) of the object: in `probe` when it holds them, else
// read into `scratch`.
process::ReadStatus read_span(RemoteMemory& memory, Address object, std::uint64_t offset,
                              std::uint64_t length, std::span<const std::uint8_t> probe,
                              std::vector<std::uint8_t>& scratch, const std::uint8_t*& data) {
    if (auto inside = process::checked_subspan(probe, offset, length)) {
        data = inside->data();
        return {};
    }
    if (length > kMaxStrBytes) return corrupt(object);
    scratch.resize(static_cast<std::size_t>(length));
    if (auto status =
            process::read_field_bytes(memory, object, offset, scratch.data(), scratch.size());
        !status)
        return status;
    data = scratch.data();
    return {};
}

} // namespace

std::optional<std::uint64_t> str_header_size(const Layout& layout) noexcept {
    const LayoutOffsets& o = layout.off;
    if (layout.py2_strings) return fields_end({{o.object_type, 8}, {o.var_size, 8}});
    return fields_end({{o.object_type, 8}, {o.unicode_length, 8}, {o.unicode_state, 4}});
}

std::optional<std::uint64_t> bytes_header_size(const Layout& layout) noexcept {
    const LayoutOffsets& o = layout.off;
    return fields_end({{o.object_type, 8}, {o.var_size, 8}, {o.bytes_data, 0}});
}

void append_utf8(std::string& out, std::uint32_t cp) {
    if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) cp = 0xFFFD;
    if (cp < 0x80) {
        out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
        out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
        out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
}

void append_utf8_lossy(std::string& out, std::span<const std::uint8_t> bytes) {
    std::size_t i = 0;
    while (i < bytes.size()) {
        std::uint8_t b = bytes[i];
        if (b < 0x80) {
            out.push_back(static_cast<char>(b));
            ++i;
            continue;
        }
        int extra = (b & 0xE0) == 0xC0 ? 1 : (b & 0xF0) == 0xE0 ? 2 : (b & 0xF8) == 0xF0 ? 3 : -1;
        std::uint32_t cp = extra == 1 ? (b & 0x1F) : extra == 2 ? (b & 0x0F) : (b & 0x07);
        bool ok = extra > 0 && i + static_cast<std::size_t>(extra) < bytes.size();
        for (int k = 1; ok && k <= extra; ++k) {
            std::uint8_t c = bytes[i + k];
            if ((c & 0xC0) != 0x80)
                ok = false;
            else
                cp = (cp << 6) | (c & 0x3F);
        }
        // Reject overlong forms and surrogates, as a strict decoder does.
        if (ok &&
            ((extra == 1 && cp < 0x80) || (extra == 2 && cp < 0x800) ||
             (extra == 3 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF)))
            ok = false;
        if (!ok) {
            append_utf8(out, 0xFFFD);
            ++i;
            continue;
        }
        out.append(reinterpret_cast<const char*>(bytes.data() + i), extra + 1);
        i += extra + 1;
    }
}

void append_unicode_kind(std::string& out, int kind, std::span<const std::uint8_t> data) {
    switch (kind) {
    case 1:
        for (std::uint8_t c : data)
            append_utf8(out, c);
        break;
    case 2:
        for (std::size_t i = 0; i + 2 <= data.size(); i += 2)
            append_utf8(out, load<std::uint16_t>(data.data() + i));
        break;
    case 4:
        for (std::size_t i = 0; i + 4 <= data.size(); i += 4)
            append_utf8(out, load<std::uint32_t>(data.data() + i));
        break;
    default:
        break;
    }
}

process::ReadStatus read_str(RemoteMemory& memory, const Layout& layout, Address object,
                             std::string& out, Address expected_type, std::size_t max_chars,
                             Overlong overlong) {
    if (object == 0) return std::unexpected(ReadError{Errc::bad_address, object});
    const LayoutOffsets& o = layout.off;
    auto header = str_header_size(layout);
    if (!header || *header > kProbe) return corrupt(object);
    std::array<std::uint8_t, kProbe> probe_buffer;
    auto got = memory.read_prefix(object, probe_buffer.data(), probe_buffer.size());
    if (!got) return std::unexpected(got.error());
    std::span<const std::uint8_t> probe(probe_buffer.data(), *got);
    if (probe.size() < *header)
        return std::unexpected(ReadError{Errc::bad_address, object + probe.size()});
    if (expected_type != 0 && field<std::uint64_t>(probe, o.object_type) != expected_type)
        return corrupt(object);

    std::vector<std::uint8_t> scratch;
    const std::uint8_t* data = nullptr;
    if (layout.py2_strings) {
        auto length = field<std::int64_t>(probe, o.var_size);
        if (length < 0) return corrupt(object);
        std::size_t take = static_cast<std::size_t>(length);
        bool cut = take > max_chars;
        if (cut && overlong == Overlong::fail) return corrupt(object);
        if (cut) take = max_chars;
        if (auto status = read_span(memory, object, o.bytes_data, take, probe, scratch, data);
            !status)
            return status;
        append_utf8_lossy(out, {data, take});
        if (cut) out += "...";
        return {};
    }

    auto length = field<std::int64_t>(probe, o.unicode_length);
    auto state = field<std::uint32_t>(probe, o.unicode_state);
    int kind = static_cast<int>((state >> o.unicode_kind_shift) & 7);
    bool compact = (state >> o.unicode_compact_bit) & 1;
    bool ascii = (state >> o.unicode_ascii_bit) & 1;
    if (length < 0 || (kind != 1 && kind != 2 && kind != 4) || (ascii && kind != 1))
        return corrupt(object);
    std::size_t chars = static_cast<std::size_t>(length);
    bool cut = chars > max_chars;
    if (cut && overlong == Overlong::fail) return corrupt(object);
    if (cut) chars = max_chars;
    auto byte_count = process::checked_mul(chars, static_cast<std::uint64_t>(kind));
    if (!byte_count || *byte_count > kMaxStrBytes) return corrupt(object);
    auto bytes = static_cast<std::size_t>(*byte_count);

    if (compact) {
        std::uint32_t offset = ascii ? o.unicode_ascii_data : o.unicode_compact_data;
        if (offset == kAbsent) return corrupt(object);
        if (auto status = read_span(memory, object, offset, bytes, probe, scratch, data); !status)
            return status;
    } else {
        // A legacy (non-compact) string keeps its characters behind a pointer (up to 3.11).
        auto buffer = checked_load<std::uint64_t>(probe, o.unicode_legacy_data);
        if (!buffer) return corrupt(object);
        scratch.resize(bytes);
        if (auto status = memory.read(*buffer, scratch.data(), bytes); !status) return status;
        data = scratch.data();
    }
    if (ascii)
        out.append(reinterpret_cast<const char*>(data), bytes);
    else
        append_unicode_kind(out, kind, {data, bytes});
    if (cut) out += "...";
    return {};
}

process::ReadStatus read_bytes(RemoteMemory& memory, const Layout& layout, Address object,
                               std::vector<std::uint8_t>& out, std::size_t max_bytes,
                               Address expected_type) {
    const LayoutOffsets& o = layout.off;
    auto header = bytes_header_size(layout);
    if (!header || *header > kProbe) return corrupt(object);
    std::array<std::uint8_t, kProbe> probe_buffer;
    auto got = memory.read_prefix(object, probe_buffer.data(), probe_buffer.size());
    if (!got) return std::unexpected(got.error());
    if (*got < *header) return std::unexpected(ReadError{Errc::bad_address, object + *got});
    std::span<const std::uint8_t> probe(probe_buffer.data(), *got);
    if (expected_type != 0 && field<std::uint64_t>(probe, o.object_type) != expected_type)
        return corrupt(object);
    auto length = field<std::int64_t>(probe, o.var_size);
    if (length < 0 || static_cast<std::uint64_t>(length) > max_bytes ||
        static_cast<std::uint64_t>(length) > kMaxStrBytes)
        return corrupt(object);
    out.resize(static_cast<std::size_t>(length));
    std::size_t in_probe = std::min(out.size(), probe.size() - o.bytes_data);
    if (in_probe > 0) std::memcpy(out.data(), probe.data() + o.bytes_data, in_probe);
    if (in_probe < out.size())
        return process::read_field_bytes(memory, object, o.bytes_data + in_probe,
                                         out.data() + in_probe, out.size() - in_probe);
    return {};
}

} // namespace spyglass::python
