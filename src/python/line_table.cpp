#include "spyglass/python/line_table.hpp"

#include <climits>

namespace spyglass::python {

namespace {

// Lines and addresses are summed in 64 bits: steps from the target (and a first line near
// INT_MAX) would overflow an int. A line outside int's range comes from no real table.
using Sum = std::int64_t;

bool fits_int(Sum line) {
    return line >= INT_MIN && line <= INT_MAX;
}

int lnotab(std::span<const std::uint8_t> table, int first_line, int offset, bool signed_steps) {
    Sum address = 0;
    Sum line = first_line;
    for (std::size_t i = 0; i + 1 < table.size(); i += 2) {
        address += table[i];
        if (address > offset) break;
        int step = table[i + 1];
        if (signed_steps && step >= 128) step -= 256;
        line += step;
        if (!fits_int(line)) return kNoLine;
    }
    return static_cast<int>(line);
}

int linetable_310(std::span<const std::uint8_t> table, int first_line, int offset) {
    Sum start = 0;
    Sum line = first_line;
    for (std::size_t i = 0; i + 1 < table.size(); i += 2) {
        int length = table[i];
        int delta = table[i + 1] >= 128 ? table[i + 1] - 256 : table[i + 1];
        Sum end = start + length;
        bool has_line = delta != -128;
        if (has_line) line += delta;
        if (!fits_int(line)) return kNoLine;
        if (offset >= start && offset < end) return has_line ? static_cast<int>(line) : kNoLine;
        start = end;
    }
    return static_cast<int>(line);
}

struct Cursor {
    std::span<const std::uint8_t> table;
    std::size_t at = 0;
    bool ok = true;

    std::uint32_t byte() {
        if (at >= table.size()) {
            ok = false;
            return 0;
        }
        return table[at++];
    }
    std::uint32_t varint() {
        std::uint32_t b = byte();
        std::uint32_t value = b & 63;
        unsigned shift = 0;
        while (ok && (b & 64) && shift < 30) {
            b = byte();
            shift += 6;
            value |= (b & 63) << shift;
        }
        return value;
    }
    int signed_varint() {
        std::uint32_t v = varint();
        return (v & 1) ? -static_cast<int>(v >> 1) : static_cast<int>(v >> 1);
    }
};

int location_table(std::span<const std::uint8_t> table, int first_line, int unit) {
    Cursor cursor{table};
    Sum address = 0;
    Sum line = first_line;
    while (cursor.at < table.size()) {
        std::uint32_t first = cursor.byte();
        if ((first & 0x80) == 0) break; // not at an entry start: malformed
        int code = static_cast<int>((first >> 3) & 15);
        int length = static_cast<int>(first & 7) + 1;
        bool has_line = true;
        if (code == 15) {
            has_line = false;
        } else if (code == 14) {
            line += cursor.signed_varint();
            cursor.varint();
            cursor.varint();
            cursor.varint();
        } else if (code == 13) {
            line += cursor.signed_varint();
        } else if (code >= 10) {
            line += code - 10;
            cursor.byte();
            cursor.byte();
        } else {
            cursor.byte();
        }
        if (!fits_int(line)) return kNoLine;
        if (!cursor.ok) break;
        if (unit >= address && unit < address + length)
            return has_line ? static_cast<int>(line) : kNoLine;
        address += length;
    }
    return static_cast<int>(line);
}

} // namespace

int line_for_offset(LineTableFormat format, std::span<const std::uint8_t> table, int first_line,
                    int offset) noexcept {
    switch (format) {
    case LineTableFormat::lnotab_unsigned:
        return lnotab(table, first_line, offset, false);
    case LineTableFormat::lnotab_signed:
        return lnotab(table, first_line, offset, true);
    case LineTableFormat::linetable_310:
        return linetable_310(table, first_line, offset);
    case LineTableFormat::location_table:
        return location_table(table, first_line, offset);
    }
    return first_line;
}

} // namespace spyglass::python
