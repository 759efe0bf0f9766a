// Fuzz targets over in-memory input: everything spyglass decodes from a target's bytes must
// neither crash nor hang nor read out of bounds, whatever the bytes are. One entry point,
// LLVMFuzzerTestOneInput, dispatching on the first byte; driver.cpp runs it without libFuzzer
// (g++ has none), and a libFuzzer build can link this file as it is.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "cli_inputs.hpp"
#include "fake_python.hpp"
#include "raw_fixture.hpp"
#include <zlib.h>

#include "spyglass/process/fake_memory.hpp"
#include "spyglass/process/proc_waits.hpp"
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
    (void)process.read_threads(threads); // the one-batch path, with the GIL's words
    spyglass::python::ThreadRecord forged;
    forged.tstate = pointer(data, 16);
    forged.frame = pointer(data, 24);
    forged.cframe = pointer(data, 32);
    forged.datastack_chunk = pointer(data, 40);
    forged.datastack_top = forged.datastack_chunk + word(data, 48) % 65536;
    threads.push_back(forged);
    spyglass::model::FrameTable frames;
    spyglass::sampling::StackReader reader(process, frames, {});
    std::vector<spyglass::model::FrameId> ids;
    for (const auto& thread : threads)
        (void)reader.read(thread, ids);
}

void text(std::span<const std::uint8_t> data) {
    std::string_view input(reinterpret_cast<const char*>(data.data()), data.size());
    (void)spyglass::process::parse_stat(input);
    (void)spyglass::process::parse_maps(input);
    // What the wait reasons are read from.
    (void)spyglass::process::parse_syscall(input);
    (void)spyglass::process::parse_fd_link(input);
    (void)spyglass::process::parse_epoll_fdinfo(input);
    spyglass::process::SocketTable sockets;
    spyglass::process::parse_net_inet(input, spyglass::process::SocketProtocol::tcp, false,
                                      sockets);
    spyglass::process::parse_net_inet(input, spyglass::process::SocketProtocol::udp, true, sockets);
    spyglass::process::parse_net_unix(input, sockets);
    (void)spyglass::python::find_version_string(data);
    (void)spyglass::python::version_from_file_name(input);
    (void)spyglass::python::decode_interp_head_function(data, kBase);
}

// A live-looking process, built once per layout with real structures: an interpreter, a thread
// with a 6-frame stack (3.11+: in its data-stack chunk, and a generator frame outside it), an
// idle thread, the GIL held by the first. Each input then corrupts it in place (and the corruption
// is undone after): bytes flipped, words set to 0, -1 or pointers elsewhere in the heap, as a torn
// read or a freed object would leave them.
struct Scenario {
    std::unique_ptr<spyglass::test_support::FakePython> fake;
    std::vector<std::pair<Address, std::size_t>> hot; // where corruption is worth making
};

// The GIL, held by `holder`, where the layout's GIL model has it: a static current thread state
// (2.7), two statics (3.6), in _PyRuntime (3.7 - 3.11), behind the interpreter's pointer (3.12+).
// The pointer and the words are in the corrupted memory: a GIL pointer near 2^64 reaches the
// GIL reads of both ways of reading the thread list.
void hold_the_gil(spyglass::test_support::FakePython& fake, Address interp, Address holder) {
    using spyglass::python::GilModel;
    const spyglass::python::LayoutOffsets& o = fake.off();
    spyglass::python::TargetInfo& target = fake.target();
    switch (fake.target().layout.gil_model) {
    case GilModel::thread_state_current:
        target.tstate_current = fake.alloc(8);
        fake.put<std::uint64_t>(target.tstate_current, 0, holder);
        break;
    case GilModel::static_globals:
        target.gil_locked = fake.alloc(8);
        target.gil_last_holder = fake.alloc(8);
        fake.put<std::int32_t>(target.gil_locked, 0, 1);
        fake.put<std::uint64_t>(target.gil_last_holder, 0, holder);
        break;
    case GilModel::runtime_gil:
        target.runtime = fake.alloc(std::max(o.runtime_gil_locked, o.runtime_gil_last_holder) + 8);
        fake.put<std::int32_t>(target.runtime, o.runtime_gil_locked, 1);
        fake.put<std::uint64_t>(target.runtime, o.runtime_gil_last_holder, holder);
        break;
    case GilModel::interpreter_gil: {
        Address gil = fake.alloc(o.gil_size);
        fake.put<std::uint64_t>(interp, o.interp_ceval_gil, gil);
        fake.put<std::int32_t>(gil, o.gil_locked, 1);
        fake.put<std::uint64_t>(gil, o.gil_last_holder, holder);
        break;
    }
    }
}

Scenario& scenario_for(const spyglass::python::Layout& layout) {
    static std::map<const spyglass::python::Layout*, Scenario> built;
    Scenario& scenario = built[&layout];
    if (scenario.fake) return scenario;
    using spyglass::test_support::FakePython;
    scenario.fake = std::make_unique<FakePython>(layout, 1u << 20);
    FakePython& fake = *scenario.fake;
    bool new_model = layout.frame_model == spyglass::python::FrameModel::interpreter_frames;
    Address interp = fake.interpreter();
    scenario.hot.emplace_back(interp, 512);
    Address after_interp = FakePython::kHeap + fake.used();
    Address idle = fake.thread(interp, 0x7f0000002000);
    Address busy = fake.thread(interp, 0x7f0000001000, idle);
    FakePython::Chunk chunk{};
    if (new_model) chunk = fake.chunk(16 * 1024);
    Address previous = 0;
    for (int i = 5; i >= 0; --i) {
        Address code = fake.code("f" + std::to_string(i), "/app/m.py", 10 * i + 1);
        if (!new_model) {
            previous = fake.frame_object(code, previous, i + 1);
        } else if (i == 1 && layout.off.owner_generator != spyglass::python::kAbsent) {
            previous = fake.interpreter_frame(
                fake.alloc(layout.off.iframe_size + 64), code, previous, i + 1,
                static_cast<std::uint8_t>(layout.off.owner_generator));
        } else {
            previous = fake.push_frame(chunk, code, previous, i + 1);
        }
    }
    fake.set_frame(busy, previous, new_model ? &chunk : nullptr);
    fake.set_frame(idle, 0, new_model ? &chunk : nullptr);
    hold_the_gil(fake, interp, busy);
    scenario.hot.emplace_back(after_interp, FakePython::kHeap + fake.used() - after_interp);
    return scenario;
}

// Applies 6-byte records of `edits` to `bytes`: 3 bytes of offset, a kind, a value.
void corrupt(std::span<std::uint8_t> bytes, std::span<const std::uint8_t> edits, Address heap) {
    for (std::size_t i = 0; i + 6 <= edits.size() && !bytes.empty(); i += 6) {
        std::size_t at = (edits[i] | edits[i + 1] << 8 | edits[i + 2] << 16) % bytes.size();
        std::uint64_t value = 0;
        switch (edits[i + 3] % 5) {
        case 0:
            bytes[at] ^= edits[i + 4];
            continue;
        case 1:
            value = 0;
            break;
        case 2:
            value = ~std::uint64_t{0} - edits[i + 4];
            break;
        case 3:
            value = heap + 8u * (edits[i + 4] | edits[i + 5] << 8);
            break;
        default:
            value = static_cast<std::uint64_t>(edits[i + 4]) << (8 * (edits[i + 5] % 8));
            break;
        }
        at &= ~std::size_t{7};
        std::memcpy(bytes.data() + at, &value, std::min<std::size_t>(8, bytes.size() - at));
    }
}

// Corrupts the scenario's hot memory in place for the life of the object, then restores it.
class Corruption {
  public:
    Corruption(Scenario& scenario, std::span<const std::uint8_t> edits) : scenario_(scenario) {
        auto& memory = scenario.fake->memory();
        for (const auto& [at, length] : scenario.hot) {
            saved_.emplace_back(length);
            (void)memory.read(at, saved_.back().data(), length);
        }
        std::size_t per_range = edits.size() / scenario.hot.size() / 6 * 6;
        for (std::size_t r = 0; r < scenario.hot.size(); ++r) {
            std::vector<std::uint8_t> bytes = saved_[r];
            corrupt(bytes, edits.subspan(r * per_range, per_range),
                    spyglass::test_support::FakePython::kHeap);
            memory.write(scenario.hot[r].first, bytes.data(), bytes.size());
        }
    }
    ~Corruption() {
        for (std::size_t r = 0; r < scenario_.hot.size(); ++r)
            scenario_.fake->memory().write(scenario_.hot[r].first, saved_[r].data(),
                                           saved_[r].size());
    }
    Corruption(const Corruption&) = delete;
    Corruption& operator=(const Corruption&) = delete;

  private:
    Scenario& scenario_;
    std::vector<std::vector<std::uint8_t>> saved_;
};

// Every thread's stack, read as the sampler reads it: running, and as if the thread was stopped.
void read_every_stack(spyglass::python::PythonProcess& process) {
    std::vector<spyglass::python::ThreadRecord> threads;
    (void)process.read_threads(threads);
    (void)process.read_threads(threads); // the one-batch path, with the GIL's words
    spyglass::model::FrameTable frames;
    spyglass::sampling::StackReader reader(process, frames, {});
    std::vector<spyglass::model::FrameId> ids;
    for (auto thread : threads) {
        (void)reader.read(thread, ids);
        (void)reader.read(thread, ids, {.thread_stopped = true, .retries = 1});
        (void)process.reread_thread(thread);
        (void)process.gil_holder(thread.interp);
    }
}

std::shared_ptr<spyglass::process::FakeMemory> shared_memory(Scenario& scenario) {
    // The scenario owns the memory; the process borrows it for one input.
    return {std::shared_ptr<void>(), &scenario.fake->memory()};
}

void corrupted_process(std::span<const std::uint8_t> data) {
    if (data.size() < 2) return;
    Scenario& scenario = scenario_for(layout_of(data[0]));
    Corruption corruption(scenario, data.subspan(1));
    spyglass::python::PythonProcess process(shared_memory(scenario), scenario.fake->target());
    read_every_stack(process);
}

const std::vector<std::uint8_t>& captured_debug_offsets() {
    static const std::vector<std::uint8_t> bytes = [] {
        std::ifstream in(std::string(SPYGLASS_SOURCE_DIR) +
                             "/tests/unit/data/debug_offsets_3.13.0.bin",
                         std::ios::binary);
        return std::vector<std::uint8_t>{std::istreambuf_iterator<char>(in), {}};
    }();
    return bytes;
}

// The target's own _Py_DebugOffsets, mutated, describing a 3.13 process that is itself
// corrupted: whatever layout the descriptor yields must be safe to walk with.
void corrupted_debug_offsets(std::span<const std::uint8_t> data) {
    const auto* real = spyglass::python::layout_for(3, 13);
    if (real == nullptr || data.size() < 2) return;
    std::vector<std::uint8_t> descriptor = captured_debug_offsets();
    if (descriptor.size() < spyglass::python::kDebugOffsetsReadSize) return;
    std::size_t split = std::min<std::size_t>(data.size(), 6 * (1 + data[0] % 16));
    corrupt(descriptor, data.subspan(1, split - 1), 0);
    auto parsed = spyglass::python::layout_from_debug_offsets(descriptor, std::nullopt);
    if (!parsed) return;
    Scenario& scenario = scenario_for(*real);
    Corruption corruption(scenario, data.subspan(split));
    spyglass::python::TargetInfo target = scenario.fake->target();
    target.layout = parsed->layout;
    if (data[0] & 0x80) {
        // As on 3.14: no holds_gil bit in the thread state, so the GIL itself is read, at the
        // mutated descriptor's offsets.
        target.layout.off.tstate_status = spyglass::python::kAbsent;
        target.layout.off.tstate_holds_gil_bit = spyglass::python::kAbsent;
    }
    spyglass::python::PythonProcess process(shared_memory(scenario), target);
    read_every_stack(process);
}

void debug_offsets(std::span<const std::uint8_t> data) {
    std::vector<std::uint8_t> bytes(spyglass::python::kDebugOffsetsReadSize, 0);
    std::memcpy(bytes.data(), "xdebugpy", 8);
    std::memcpy(bytes.data() + 8, data.data(), std::min(data.size(), bytes.size() - 8));
    (void)spyglass::python::layout_from_debug_offsets(bytes, std::nullopt);
}

// A raw recording's reader, on a real file cut and edited: the input picks where in the last
// blocks the file is cut, which bytes change, and whether the changed block's checksum is put
// right (so that edited zstd data and edited records reach the decoders); or the input is one
// stored (uncompressed) record block of its own, half the time behind a process record's tag
// (its pid and strings from the input). The fixture's second process record is in its last
// blocks. Every outcome must be a status, never a crash.
void raw_recording(std::span<const std::uint8_t> data) {
    static const spyglass::rawtest::RawFixture fixture =
        spyglass::rawtest::make_raw_recording(900, true, 3, 40'000'000);
    static const std::vector<std::size_t> blocks =
        spyglass::rawtest::raw_block_offsets(fixture.bytes);
    if (data.size() < 4 || blocks.size() < 5) return;
    std::string bytes;
    if (data[0] % 4 == 0) {
        // Header and info block of the fixture, then the input as one stored record block.
        bytes = fixture.bytes.substr(0, blocks[1]);
        std::size_t at = bytes.size();
        const bool process = data[0] % 8 == 4;
        std::uint32_t size = static_cast<std::uint32_t>(data.size() - 1 + (process ? 1 : 0));
        bytes.push_back(2); // records
        bytes.push_back(0); // stored
        bytes.append(2, '\0');
        for (int k = 0; k < 2; ++k)
            for (int i = 0; i < 4; ++i)
                bytes.push_back(static_cast<char>((size >> (8 * i)) & 0xff));
        bytes.append(4, '\0');
        if (process) bytes.push_back(0x09); // the process record's tag (raw_codec.hpp)
        bytes.append(reinterpret_cast<const char*>(data.data() + 1), data.size() - 1);
        spyglass::rawtest::set_block_crc(bytes, at);
    } else {
        std::size_t first = blocks[blocks.size() - 4];
        std::size_t span = fixture.bytes.size() - first;
        std::size_t cut = first + (data[1] | data[2] << 8) % (span + 1);
        bytes = fixture.bytes.substr(0, cut);
        bool fix = data[0] % 4 == 2;
        for (std::size_t i = 3; i + 1 < data.size() && !bytes.empty(); i += 2) {
            std::size_t at = first + (data[i] | (data[i + 1] & 0x3f) << 8) % span;
            if (at < bytes.size()) bytes[at] = static_cast<char>(bytes[at] ^ data[i + 1] ^ 0x5a);
        }
        if (fix)
            for (std::size_t b = 1; b + 1 < blocks.size(); ++b)
                spyglass::rawtest::set_block_crc(bytes, blocks[b]);
    }
    auto reader = spyglass::output::RawReader::from_memory(bytes);
    if (!reader) return;
    spyglass::rawtest::Transcript transcript((*reader)->frames(), (*reader)->stacks());
    auto status = (*reader)->replay(transcript);
    if (status.good_bytes > bytes.size() || status.samples != transcript.samples) __builtin_trap();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    std::span<const std::uint8_t> input(data + 1, size - 1);
    switch (data[0] % spyglass::fuzz::kFuzzTargets) {
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
    case 5:
        corrupted_process(input);
        break;
    case 6:
        corrupted_debug_offsets(input);
        break;
    case 7:
        raw_recording(input);
        break;
    case 8:
        spyglass::fuzz::cli_inputs(input);
        break;
    }
    return 0;
}
