#include "spyglass/python/code.hpp"

#include <algorithm>

#include "spyglass/process/checked.hpp"
#include "spyglass/process/remote_field.hpp"
#include "spyglass/python/line_table.hpp"
#include "spyglass/python/strings.hpp"

namespace spyglass::python {

namespace {

// A field of the header, 0 when the layout lacks it (kAbsent lies beyond any header).
template <class T>
T load(std::span<const std::uint8_t> bytes, std::uint32_t offset) {
    return process::checked_load<T>(bytes, offset).value_or(T{});
}

} // namespace

std::size_t code_header_size(const Layout& layout) noexcept {
    const LayoutOffsets& o = layout.off;
    std::uint64_t end = 0;
    for (std::uint32_t offset :
         {o.object_type, o.var_size, o.code_firstlineno, o.code_filename, o.code_name,
          o.code_qualname, o.code_linetable, o.code_code, o.code_firsttraceable, o.code_argcount,
          o.code_nlocals, o.code_nlocalsplus, o.code_varnames, o.code_localsplusnames,
          o.code_localspluskinds, o.code_flags})
        if (offset != kAbsent) end = std::max(end, std::uint64_t{offset} + 8);
    return static_cast<std::size_t>(end);
}

CodeFingerprint code_fingerprint(const Layout& layout,
                                 std::span<const std::uint8_t> header) noexcept {
    const LayoutOffsets& o = layout.off;
    CodeFingerprint fp;
    fp.type = load<std::uint64_t>(header, o.object_type);
    fp.filename = load<std::uint64_t>(header, o.code_filename);
    fp.name = load<std::uint64_t>(header, o.code_name);
    fp.qualname = load<std::uint64_t>(header, o.code_qualname);
    fp.line_table = load<std::uint64_t>(header, o.code_linetable);
    fp.code = load<std::uint64_t>(header, o.code_code);
    if (layout.frame_model == FrameModel::interpreter_frames)
        fp.size = load<std::int64_t>(header, o.var_size);
    fp.first_line = load<std::int32_t>(header, o.code_firstlineno);
    return fp;
}

std::uint64_t fingerprint_hash(const CodeFingerprint& fp) noexcept {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (std::uint64_t word :
         {fp.type, fp.filename, fp.name, fp.qualname, fp.line_table, fp.code,
          static_cast<std::uint64_t>(fp.size),
          static_cast<std::uint64_t>(static_cast<std::uint32_t>(fp.first_line))})
        h = (h ^ word) * 0x100000001b3ull;
    return h == 0 ? 1 : h;
}

CodeHeader code_header(const Layout& layout, std::span<const std::uint8_t> header) noexcept {
    CodeHeader out;
    out.fingerprint = code_fingerprint(layout, header);
    out.hash = fingerprint_hash(out.fingerprint);
    out.flags = load<std::int32_t>(header, layout.off.code_flags);
    if (layout.frame_model == FrameModel::interpreter_frames)
        out.first_traceable = load<std::int32_t>(header, layout.off.code_firsttraceable);
    return out;
}

process::ReadStatus read_code(process::RemoteMemory& memory, const Layout& layout,
                              const TypeAddresses& types, Address code, CodeInfo& out) {
    const LayoutOffsets& o = layout.off;
    std::uint8_t buffer[kMaxCodeHeaderBytes];
    std::size_t size = code_header_size(layout);
    if (code == 0 || size > sizeof buffer) return std::unexpected(ReadError{Errc::corrupt, code});
    if (auto status = memory.read(code, buffer, size); !status) return status;
    std::span<const std::uint8_t> header(buffer, size);
    out.fingerprint = code_fingerprint(layout, header);
    if (types.code != 0 && out.fingerprint.type != types.code)
        return std::unexpected(ReadError{Errc::corrupt, code});

    Address name_type = types.name_type(layout);
    out.name.clear();
    out.qualname.clear();
    out.filename.clear();
    if (auto s = read_str(memory, layout, out.fingerprint.name, out.name, name_type); !s) return s;
    if (out.fingerprint.qualname != 0) {
        if (auto s = read_str(memory, layout, out.fingerprint.qualname, out.qualname, name_type);
            !s)
            return s;
    } else {
        out.qualname = out.name;
    }
    if (auto s = read_str(memory, layout, out.fingerprint.filename, out.filename, name_type); !s)
        return s;
    if (auto s = read_bytes(memory, layout, out.fingerprint.line_table, out.line_table,
                            kMaxLineTableBytes, types.bytes_type(layout));
        !s)
        return s;
    out.first_line = out.fingerprint.first_line;
    out.argcount = load<std::int32_t>(header, o.code_argcount);
    out.flags = load<std::int32_t>(header, o.code_flags);
    if (layout.frame_model == FrameModel::interpreter_frames) {
        if (out.fingerprint.size <= 0 || out.fingerprint.size > (1 << 28))
            return std::unexpected(ReadError{Errc::corrupt, code});
        out.length = static_cast<std::int32_t>(out.fingerprint.size);
        out.first_traceable = load<std::int32_t>(header, o.code_firsttraceable);
        out.nlocals = load<std::int32_t>(header, o.code_nlocalsplus);
        out.local_names = load<std::uint64_t>(header, o.code_localsplusnames);
        out.local_kinds = load<std::uint64_t>(header, o.code_localspluskinds);
    } else {
        // The length of co_code bounds f_lasti.
        auto length = process::read_field<std::int64_t>(memory, out.fingerprint.code, o.var_size);
        if (!length) return std::unexpected(length.error());
        if (*length <= 0 || *length > (1 << 28))
            return std::unexpected(ReadError{Errc::corrupt, code});
        out.length = static_cast<std::int32_t>(*length);
        out.first_traceable = 0;
        out.nlocals = load<std::int32_t>(header, o.code_nlocals);
        out.local_names = load<std::uint64_t>(header, o.code_varnames);
    }
    if (out.first_traceable < 0 || out.first_traceable > out.length) out.first_traceable = 0;
    return {};
}

int code_line(const Layout& layout, const CodeInfo& code, std::int32_t offset) noexcept {
    if (offset < 0) return code.first_line;
    int line = line_for_offset(layout.line_table, code.line_table, code.first_line, offset);
    return line == kNoLine ? code.first_line : line;
}

} // namespace spyglass::python
