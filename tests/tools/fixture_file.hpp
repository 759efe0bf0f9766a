// Captured fixtures: the memory a real interpreter's known stack spans, as spyglass read it,
// with what the interpreter itself said the stack was. tests/tools/capture_fixture.cpp writes
// them from a live target; tests/unit/test_captured_stacks.cpp replays them in FakeMemory, so
// that the layout tables are checked against real bytes, not against fakes built with the same
// tables. The format is text: a header of `key value...` lines, then each region in hex.
#pragma once

#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "spyglass/process/memory.hpp"
#include "spyglass/python/target.hpp"

namespace spyglass::test_support {

struct FixtureFrame {
    std::string function, file;
    int line = 0;
};

struct Fixture {
    std::string version;       // e.g. 3.12.1
    int major = 0, minor = 0;  // the layout table to read it with
    python::TargetInfo target; // as discovery found it (the layout is not kept)
    std::uint64_t thread_id = 0;
    std::vector<FixtureFrame> frames; // innermost first, as Python saw them
    std::map<process::Address, std::vector<std::uint8_t>> regions;
};

// Every successful read, recorded (for capture_fixture).
class RecordingMemory final : public process::RemoteMemory {
  public:
    explicit RecordingMemory(std::shared_ptr<process::RemoteMemory> inner)
        : inner_(std::move(inner)) {}
    process::ReadStatus read(process::Address address, void* destination,
                             std::size_t length) override {
        auto status = inner_->read(address, destination, length);
        if (status) keep(address, destination, length);
        return status;
    }
    std::expected<std::size_t, ReadError> read_prefix(process::Address address, void* destination,
                                                      std::size_t length) override {
        auto got = inner_->read_prefix(address, destination, length);
        if (got) keep(address, destination, *got);
        return got;
    }
    // Merged: overlapping or adjacent reads become one region (the later bytes win).
    std::map<process::Address, std::vector<std::uint8_t>> regions() const {
        std::map<process::Address, std::vector<std::uint8_t>> out;
        for (const auto& [address, bytes] : reads_) {
            auto next = out.upper_bound(address);
            if (next != out.begin()) {
                auto previous = std::prev(next);
                if (previous->first + previous->second.size() >= address) {
                    std::vector<std::uint8_t>& into = previous->second;
                    std::size_t at = address - previous->first;
                    if (into.size() < at + bytes.size()) into.resize(at + bytes.size());
                    std::copy(bytes.begin(), bytes.end(), into.begin() + static_cast<long>(at));
                    continue;
                }
            }
            out[address] = bytes;
        }
        // A later merge may have made two regions touch.
        for (auto it = out.begin(); it != out.end();) {
            auto next = std::next(it);
            if (next != out.end() && it->first + it->second.size() >= next->first) {
                std::size_t at = next->first - it->first;
                if (it->second.size() < at + next->second.size())
                    it->second.resize(at + next->second.size());
                std::copy(next->second.begin(), next->second.end(),
                          it->second.begin() + static_cast<long>(at));
                out.erase(next);
                continue;
            }
            ++it;
        }
        return out;
    }

  private:
    void keep(process::Address address, const void* bytes, std::size_t length) {
        if (length == 0) return;
        auto* begin = static_cast<const std::uint8_t*>(bytes);
        std::vector<std::uint8_t>& slot = reads_[address];
        if (slot.size() < length) slot.resize(length);
        std::copy(begin, begin + length, slot.begin());
    }
    std::shared_ptr<process::RemoteMemory> inner_;
    std::map<process::Address, std::vector<std::uint8_t>> reads_;
};

// clang-format off
#define SPYGLASS_FIXTURE_ADDRESSES(X) \
    X(interp_head_slot) X(runtime) X(tstate_current) X(gil_locked) X(gil_last_holder)
#define SPYGLASS_FIXTURE_TYPES(X) \
    X(code) X(frame) X(unicode) X(str) X(bytes) X(type) X(dict) X(tuple) X(list) X(long_) \
    X(int_) X(float_) X(bool_) X(module) X(none) X(true_) X(false_)
// clang-format on

inline void write_fixture(std::ostream& out, const Fixture& f) {
    out << "spyglass-fixture 1\nversion " << f.version << "\nlayout " << f.major << ' ' << f.minor
        << "\npthread_tid_offset " << f.target.pthread_tid_offset << '\n'
        << std::hex;
#define SPYGLASS_WRITE_ADDRESS(name) out << "address " #name " " << f.target.name << '\n';
    SPYGLASS_FIXTURE_ADDRESSES(SPYGLASS_WRITE_ADDRESS)
#undef SPYGLASS_WRITE_ADDRESS
#define SPYGLASS_WRITE_TYPE(name) out << "type " #name " " << f.target.types.name << '\n';
    SPYGLASS_FIXTURE_TYPES(SPYGLASS_WRITE_TYPE)
#undef SPYGLASS_WRITE_TYPE
    out << "thread " << f.thread_id << std::dec << '\n';
    for (const FixtureFrame& frame : f.frames)
        out << "frame " << frame.line << '\t' << frame.function << '\t' << frame.file << '\n';
    static const char* digits = "0123456789abcdef";
    for (const auto& [address, bytes] : f.regions) {
        out << "region " << std::hex << address << ' ' << std::dec << bytes.size() << '\n';
        std::string line;
        for (std::size_t i = 0; i < bytes.size(); ++i) {
            line.push_back(digits[bytes[i] >> 4]);
            line.push_back(digits[bytes[i] & 15]);
            if (line.size() == 128 || i + 1 == bytes.size()) {
                out << line << '\n';
                line.clear();
            }
        }
    }
}

// Reads a fixture; false (with `error` set) when the file is not one.
inline bool read_fixture(const std::string& path, Fixture& f, std::string& error) {
    std::ifstream in(path);
    std::string line, word;
    if (!std::getline(in, line) || line != "spyglass-fixture 1") {
        error = path + ": not a spyglass fixture";
        return false;
    }
    while (std::getline(in, line)) {
        std::istringstream fields(line);
        fields >> word;
        if (word == "version") {
            fields >> f.version;
        } else if (word == "layout") {
            fields >> f.major >> f.minor;
        } else if (word == "pthread_tid_offset") {
            fields >> f.target.pthread_tid_offset;
        } else if (word == "address" || word == "type") {
            std::string name;
            std::uint64_t value = 0;
            fields >> name >> std::hex >> value;
            bool known = false;
#define SPYGLASS_READ_ADDRESS(field)                                                               \
    if (word == "address" && name == #field) f.target.field = value, known = true;
            SPYGLASS_FIXTURE_ADDRESSES(SPYGLASS_READ_ADDRESS)
#undef SPYGLASS_READ_ADDRESS
#define SPYGLASS_READ_TYPE(field)                                                                  \
    if (word == "type" && name == #field) f.target.types.field = value, known = true;
            SPYGLASS_FIXTURE_TYPES(SPYGLASS_READ_TYPE)
#undef SPYGLASS_READ_TYPE
            if (!known) {
                error = path + ": unknown " + word + " " + name;
                return false;
            }
        } else if (word == "thread") {
            fields >> std::hex >> f.thread_id;
        } else if (word == "frame") {
            FixtureFrame frame;
            std::size_t tab1 = line.find('\t'), tab2 = line.find('\t', tab1 + 1);
            frame.line = std::stoi(line.substr(6, tab1 - 6));
            frame.function = line.substr(tab1 + 1, tab2 - tab1 - 1);
            frame.file = line.substr(tab2 + 1);
            f.frames.push_back(frame);
        } else if (word == "region") {
            process::Address address = 0;
            std::size_t length = 0;
            fields >> std::hex >> address >> std::dec >> length;
            std::vector<std::uint8_t> bytes;
            bytes.reserve(length);
            while (bytes.size() < length && std::getline(in, line))
                for (std::size_t i = 0; i + 1 < line.size(); i += 2)
                    bytes.push_back(
                        static_cast<std::uint8_t>(std::stoul(line.substr(i, 2), nullptr, 16)));
            if (bytes.size() != length) {
                error = path + ": a region is cut short";
                return false;
            }
            f.regions[address] = std::move(bytes);
        }
    }
    return true;
}

} // namespace spyglass::test_support
