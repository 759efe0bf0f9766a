// Micro-benchmarks of the sampling path's pieces, over fake memory (no syscalls): what the
// CPU does per sample besides reading the target. Run: build/tests/spyglass_micro_bench
#include "fake_python.hpp"
#include <benchmark/benchmark.h>

#include "spyglass/model/aggregator.hpp"
#include "spyglass/python/line_table.hpp"
#include "spyglass/resolve/call_identity.hpp"
#include "spyglass/sampling/stack_reader.hpp"

namespace {

using spyglass::process::Address;
using spyglass::python::FrameModel;
using spyglass::test_support::FakePython;

// A 30-deep stack of one thread, for the layout of `minor`.
struct DeepStack {
    FakePython fake;
    std::unique_ptr<spyglass::python::PythonProcess> process;
    std::vector<spyglass::python::ThreadRecord> threads;

    explicit DeepStack(int minor) : fake(*spyglass::python::layout_for(3, minor)) {
        const auto& layout = *spyglass::python::layout_for(3, minor);
        Address interp = fake.interpreter();
        Address tstate = fake.thread(interp, 0x7f0000001000);
        FakePython::Chunk chunk{};
        bool chunks = layout.frame_model == FrameModel::interpreter_frames;
        if (chunks) chunk = fake.chunk(64 * 1024);
        Address previous = 0;
        for (int i = 29; i >= 0; --i) {
            Address code = fake.code("level" + std::to_string(i), "/app/deep.py", 10 * i + 1);
            previous = chunks ? fake.push_frame(chunk, code, previous, 3)
                              : fake.frame_object(code, previous, 3);
        }
        fake.set_frame(tstate, previous, chunks ? &chunk : nullptr);
        process = fake.process();
        process->read_threads(threads);
    }
};

void BM_Walk(benchmark::State& state) {
    DeepStack stack(static_cast<int>(state.range(0)));
    spyglass::python::RawStack raw;
    for (auto _ : state) {
        stack.process->walker().walk(stack.threads[0], raw);
        benchmark::DoNotOptimize(raw.depth);
    }
}
BENCHMARK(BM_Walk)->Arg(10)->Arg(12);

void BM_ReadStackCached(benchmark::State& state) {
    DeepStack stack(static_cast<int>(state.range(0)));
    spyglass::model::FrameTable frames;
    spyglass::sampling::StackReader reader(*stack.process, frames, {});
    std::vector<spyglass::model::FrameId> ids;
    for (auto _ : state) {
        reader.read(stack.threads[0], ids);
        benchmark::DoNotOptimize(ids.data());
    }
}
BENCHMARK(BM_ReadStackCached)->Arg(10)->Arg(12);

void BM_ReadThreads(benchmark::State& state) {
    DeepStack stack(static_cast<int>(state.range(0)));
    for (auto _ : state) {
        stack.process->read_threads(stack.threads);
        benchmark::DoNotOptimize(stack.threads.data());
    }
}
BENCHMARK(BM_ReadThreads)->Arg(10)->Arg(12);

void BM_LocationTableLookup(benchmark::State& state) {
    std::vector<std::uint8_t> table;
    for (int i = 0; i < 200; ++i)
        table.insert(table.end(), {0x80 | (13 << 3), 2});
    int unit = 0;
    for (auto _ : state) {
        benchmark::DoNotOptimize(spyglass::python::line_for_offset(
            spyglass::python::LineTableFormat::location_table, table, 1, unit));
        unit = (unit + 37) % 200;
    }
}
BENCHMARK(BM_LocationTableLookup);

void BM_AggregateSample(benchmark::State& state) {
    spyglass::model::FrameTable frames;
    spyglass::model::StackTable stacks;
    spyglass::model::Aggregator aggregator(frames, stacks, false);
    aggregator.thread(0, {1, 1, 1, "main"});
    spyglass::model::Sample sample;
    std::uint32_t n = 0;
    for (auto _ : state) {
        sample.key.stack = spyglass::model::StackId(n++ % 64);
        aggregator.sample(sample);
    }
}
BENCHMARK(BM_AggregateSample);

// Which calls of a 30-frame sample are new (the resolver's part of following calls, for every
// sample): the innermost frame's call changes every other sample, its argument compared.
void BM_CallIdentity(benchmark::State& state) {
    std::vector<spyglass::python::RawFrame> raw(30);
    std::vector<std::uint32_t> kept(30);
    for (std::uint32_t i = 0; i < 30; ++i) {
        raw[i].frame = 0x1000 + 0x100 * i;
        raw[i].code = 0x9000 + 0x40 * i;
        raw[i].code_check = i + 1;
        raw[i].flags = spyglass::python::RawFrame::args;
        kept[i] = i;
    }
    spyglass::sampling::CallIdentity identity;
    std::uint8_t n = 0;
    for (auto _ : state) {
        raw[0].arg_hash[0] = static_cast<std::uint8_t>(n++ & 1);
        benchmark::DoNotOptimize(
            identity.next(raw, kept, [](Address) -> std::uint8_t { return 0b111; }));
    }
}
BENCHMARK(BM_CallIdentity);

// The aggregator with calls followed (-f calls): 30-frame samples of 4 threads, the innermost
// call of each ending every fourth sample.
void BM_AggregateSampleWithCalls(benchmark::State& state) {
    spyglass::model::FrameTable frames;
    spyglass::model::StackTable stacks;
    std::vector<spyglass::model::StackId> stack_ids;
    for (int variant = 0; variant < 2; ++variant) {
        std::vector<spyglass::model::FrameId> ids;
        for (int i = 0; i < 30; ++i) {
            spyglass::model::Frame frame;
            frame.function =
                frames.strings().intern("f" + std::to_string(i == 0 ? 100 + variant : i));
            frame.file = frames.strings().intern("/app/deep.py");
            frame.first_line = 10 * i + 1;
            frame.line = 10 * i + 2;
            ids.push_back(frames.intern(frame));
        }
        stack_ids.push_back(stacks.intern(ids));
    }
    spyglass::model::Aggregator aggregator(frames, stacks, false);
    // 0: calls not followed (the baseline), 1: merged, 2: per thread (--threads).
    if (state.range(0) > 0) aggregator.track_calls(state.range(0) == 2);
    for (std::uint32_t t = 0; t < 4; ++t)
        aggregator.thread(t, {1, static_cast<pid_t>(t + 1), t, "worker"});
    spyglass::model::Sample sample;
    sample.weight_ns = 1'000'000;
    std::uint32_t n = 0;
    for (auto _ : state) {
        sample.key.thread = n % 4;
        const bool ends = n / 4 % 4 == 0;
        sample.key.stack = stack_ids[n / 16 % 2];
        sample.new_calls = ends ? 1 : 0;
        aggregator.sample(sample);
        ++n;
    }
}
BENCHMARK(BM_AggregateSampleWithCalls)->Arg(0)->Arg(1)->Arg(2);

} // namespace

BENCHMARK_MAIN();
