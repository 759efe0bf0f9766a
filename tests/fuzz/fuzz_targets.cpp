// Fuzz targets over in-memory input: everything spyglass decodes from a target's bytes must
// neither crash nor hang nor read out of bounds, whatever the bytes are. One entry point,
// LLVMFuzzerTestOneInput, dispatching on the first byte; driver.cpp runs it without libFuzzer
// (g++ has none), and a libFuzzer build can link this file as it is.
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "spyglass/process/fake_memory.hpp"
#include "spyglass/process/procfs.hpp"
#include "spyglass/python/code.hpp"
#include "spyglass/python/debug_offsets.hpp"
#include "spyglass/python/discovery.hpp"
#include "spyglass/python/interpreter.hpp"
#include "spyglass/python/line_table.hpp"
#include "spyglass/python/strings.hpp"
#include "spyglass/sampling/stack_reader.hpp"

namespace {

using spyglass::process::Address;
constexpr Address kBase = 0x10000000;

std::uint64_t word(std::span<const std::uint8_t> data, std::size_t at) {
    std::uint64_t value = 0;
    if (at + 8 <= data.size()) std::memcpy(&value, data.data() + at, 8);
    return value;
}

// Pointers in the input are offsets into it, so that the fuzzer can build chains.
Address pointer(std::span<const std::uint8_t> data, std::size_t at) {
    std::uint64_t raw = word(data, at);
    return raw % 4 == 0 ? kBase + raw % (data.size() + 64) : raw;
}

const spyglass::python::Layout& layout_of(std::uint8_t selector) {
    auto layouts = spyglass::python::all_layouts();
    return *layouts[selector % layouts.size()];
}

void line_tables(std::span<const std::uint8_t> data) {
    if (data.size() < 2) return;
    auto format = static_cast<spyglass::python::LineTableFormat>(data[0] % 4);
    for (int offset = -1; offset < 300; offset += 7)
        (void)spyglass::python::line_for_offset(format, data.subspan(1), data[1], offset);
}

void objects(std::span<const std::uint8_t> data) {
    if (data.size() < 2) return;
    const auto& layout = layout_of(data[0]);
    spyglass::process::FakeMemory memory;
    memory.map(kBase, data.size());
    memory.write(kBase, data.data(), data.size());
    std::string text;
    (void)spyglass::python::read_str(memory, layout, kBase + data[1] % data.size(), text);
    std::vector<std::uint8_t> bytes;
    (void)spyglass::python::read_bytes(memory, layout, kBase, bytes, 1 << 16);
    spyglass::python::CodeInfo code;
    spyglass::python::TypeAddresses types;
    if (spyglass::python::read_code(memory, layout, types, kBase, code))
        for (int offset = -1; offset < 64; ++offset)
            (void)spyglass::python::code_line(layout, code, offset);
}

void stacks(std::span<const std::uint8_t> data) {
    if (data.size() < 64) return;
    const auto& layout = layout_of(data[0]);
    auto memory = std::make_shared<spyglass::process::FakeMemory>();
    memory->map(kBase, data.size() + 64);
    memory->write(kBase, data.data(), data.size());
    spyglass::python::TargetInfo target;
    target.layout = layout;
    target.interp_head_slot = kBase + 8;
    spyglass::python::PythonProcess process(memory, target);
    std::vector<spyglass::python::ThreadRecord> threads;
    (void)process.read_threads(threads);
    spyglass::python::ThreadRecord forged;
    forged.tstate = pointer(data, 16);
    forged.frame = pointer(data, 24);
    forged.cframe = pointer(data, 32);
    forged.datastack_chunk = pointer(data, 40);
    forged.datastack_top = forged.datastack_chunk + word(data, 48) % 65536;
    threads.push_back(forged);
    spyglass::sampling::FrameTable frames;
    spyglass::sampling::StackReader reader(process, frames, {});
    std::vector<spyglass::sampling::FrameId> ids;
    for (const auto& thread : threads)
        (void)reader.read(thread, ids);
}

void text(std::span<const std::uint8_t> data) {
    std::string_view input(reinterpret_cast<const char*>(data.data()), data.size());
    (void)spyglass::process::parse_stat(input);
    (void)spyglass::process::parse_maps(input);
    (void)spyglass::python::find_version_string(data);
    (void)spyglass::python::version_from_file_name(input);
    (void)spyglass::python::decode_interp_head_function(data, kBase);
}

void debug_offsets(std::span<const std::uint8_t> data) {
    std::vector<std::uint8_t> bytes(spyglass::python::kDebugOffsetsReadSize, 0);
    std::memcpy(bytes.data(), "xdebugpy", 8);
    std::memcpy(bytes.data() + 8, data.data(), std::min(data.size(), bytes.size() - 8));
    (void)spyglass::python::layout_from_debug_offsets(bytes, std::nullopt);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    std::span<const std::uint8_t> input(data + 1, size - 1);
    switch (data[0] % 5) {
    case 0:
        line_tables(input);
        break;
    case 1:
        objects(input);
        break;
    case 2:
        stacks(input);
        break;
    case 3:
        text(input);
        break;
    case 4:
        debug_offsets(input);
        break;
    }
    return 0;
}
