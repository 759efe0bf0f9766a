// The raw format's byte-level pieces, shared by its writer and reader (docs/raw-format.md).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace spyglass::output::raw {

inline constexpr char kMagic[8] = {'\x89', 'S', 'G', 'R', '\r', '\n', '\x1a', '\n'};
inline constexpr std::size_t kFileHeaderSize = 16;
inline constexpr std::size_t kBlockHeaderSize = 16;
// Bounds a reader holds every block to (a writer's blocks are far smaller).
inline constexpr std::uint32_t kMaxStored = 16u << 20;
inline constexpr std::uint32_t kMaxRaw = 16u << 20;

enum BlockType : std::uint8_t { kInfoBlock = 1, kRecordBlock = 2 };
enum Codec : std::uint8_t { kStored = 0, kZstd = 1 };

enum Tag : std::uint8_t {
    kString = 0x01,
    kWait = 0x02,
    kFrame = 0x03,
    kStack = 0x04,
    kThread = 0x05,
    kReset = 0x06,
    kFinish = 0x07,
    kBuildId = 0x08,  // format 2
    kProcess = 0x09,  // format 3
    kLabelSet = 0x0a, // format 4
    kSample = 0x80,   // | flags below
};

// The low seven bits of a sample's tag.
enum SampleFlag : std::uint8_t {
    kOnCpu = 0x01,
    kGil = 0x02,
    kSameStack = 0x04,  // the thread's previous stack: no stack field
    kSameWeight = 0x08, // the previous sample's weight: no weight field
    kHasCpu = 0x10,     // a CPU time field (else 0)
    kHasExtra = 0x20,   // an extra byte: status, wait
    kHasTime = 0x40,    // a time delta field (else the previous sample's time)
};
// kHasLabels (format 4): a label set id follows the wait's: the label set of this sample and of
// its thread's next ones until another says otherwise (0 at the start and after a reset).
// kHasNewCalls (format 5): a varint follows the label set's: how many of the stack's innermost
// Python frames are calls begun since the thread's previous sample (model::Sample::new_calls), 0
// when not known. Without it: none (a version 5 sample), not known (older versions).
enum ExtraFlag : std::uint8_t {
    kStatusMask = 0x03,
    kHasWait = 0x04,
    kHasLabels = 0x08,
    kHasNewCalls = 0x10,
};

inline void put_u16(std::string& out, std::uint16_t v) {
    out.push_back(static_cast<char>(v & 0xff));
    out.push_back(static_cast<char>(v >> 8));
}
inline void put_u32(std::string& out, std::uint32_t v) {
    for (int i = 0; i < 4; ++i)
        out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
inline void put_varint(std::string& out, std::uint64_t v) {
    while (v >= 0x80) {
        out.push_back(static_cast<char>((v & 0x7f) | 0x80));
        v >>= 7;
    }
    out.push_back(static_cast<char>(v));
}
inline std::uint64_t zigzag(std::int64_t v) {
    return (static_cast<std::uint64_t>(v) << 1) ^ static_cast<std::uint64_t>(v >> 63);
}
inline std::int64_t unzigzag(std::uint64_t v) {
    return static_cast<std::int64_t>(v >> 1) ^ -static_cast<std::int64_t>(v & 1);
}
inline void put_string(std::string& out, std::string_view text) {
    put_varint(out, text.size());
    out.append(text);
}
inline std::uint16_t get_u16(const unsigned char* p) {
    return static_cast<std::uint16_t>(p[0] | (p[1] << 8));
}
inline std::uint32_t get_u32(const unsigned char* p) {
    return static_cast<std::uint32_t>(p[0]) | (static_cast<std::uint32_t>(p[1]) << 8) |
           (static_cast<std::uint32_t>(p[2]) << 16) | (static_cast<std::uint32_t>(p[3]) << 24);
}

// Reads what put_* wrote; any read past the end, or a varint longer than 10 bytes, clears ok
// and returns zeros from then on.
class Cursor {
  public:
    Cursor(const unsigned char* data, std::size_t size) : p_(data), end_(data + size) {}
    [[nodiscard]] bool ok() const noexcept { return ok_; }
    [[nodiscard]] bool at_end() const noexcept { return p_ == end_; }
    [[nodiscard]] std::size_t left() const noexcept { return static_cast<std::size_t>(end_ - p_); }
    void fail() noexcept {
        ok_ = false;
        p_ = end_;
    }
    std::uint8_t byte() {
        if (p_ == end_) {
            fail();
            return 0;
        }
        return *p_++;
    }
    std::uint64_t varint() {
        std::uint64_t v = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            std::uint8_t b = byte();
            if (!ok_) return 0;
            v |= static_cast<std::uint64_t>(b & 0x7f) << shift;
            if ((b & 0x80) == 0) return v;
        }
        fail();
        return 0;
    }
    std::string_view bytes(std::uint64_t n) {
        if (n > left()) {
            fail();
            return {};
        }
        std::string_view out(reinterpret_cast<const char*>(p_), static_cast<std::size_t>(n));
        p_ += n;
        return out;
    }
    std::string_view string() { return bytes(varint()); }
    double f64() {
        std::string_view raw = bytes(8);
        if (!ok_) return 0;
        std::uint64_t bits = 0;
        for (int i = 7; i >= 0; --i)
            bits = (bits << 8) | static_cast<unsigned char>(raw[static_cast<std::size_t>(i)]);
        double out;
        std::memcpy(&out, &bits, sizeof out);
        return out;
    }

  private:
    const unsigned char* p_;
    const unsigned char* end_;
    bool ok_ = true;
};

inline void put_f64(std::string& out, double v) {
    std::uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    for (int i = 0; i < 8; ++i)
        out.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
}

} // namespace spyglass::output::raw
