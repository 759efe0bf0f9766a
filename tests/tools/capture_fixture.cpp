// Writes a captured fixture (fixture_file.hpp) from a live target:
//   capture_fixture PID EXPECTED OUT
// EXPECTED holds "thread <id hex>" and "frame <line>\t<function>\t<file>" lines: the stack the
// target itself reported (scripts/capture_fixtures.py runs tests/workloads/fixture_target.py).
// The target is read the way the sampler reads it: thread list, then each thread's stack.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "fixture_file.hpp"

#include "spyglass/process/live_memory.hpp"
#include "spyglass/python/interpreter.hpp"
#include "spyglass/sampling/stack_reader.hpp"

int main(int argc, char** argv) {
    using namespace spyglass;
    if (argc != 4) {
        std::fprintf(stderr, "usage: capture_fixture PID EXPECTED OUT\n");
        return 2;
    }
    pid_t pid = static_cast<pid_t>(std::atoi(argv[1]));
    auto attached = python::PythonProcess::attach(pid);
    if (!attached) {
        std::fprintf(stderr, "capture_fixture: %s\n", attached.error().message.c_str());
        return 1;
    }
    test_support::Fixture fixture;
    fixture.target = (*attached)->target();
    fixture.version = fixture.target.version.to_string();
    fixture.major = fixture.target.layout.version.major;
    fixture.minor = fixture.target.layout.version.minor;

    auto recording =
        std::make_shared<test_support::RecordingMemory>(std::make_shared<process::LiveMemory>(pid));
    python::PythonProcess process(recording, fixture.target);
    std::vector<python::ThreadRecord> threads;
    if (!process.read_threads(threads)) {
        std::fprintf(stderr, "capture_fixture: cannot read the thread list\n");
        return 1;
    }
    model::FrameTable frames;
    sampling::StackReader reader(process, frames, {});
    std::vector<model::FrameId> ids;
    for (const python::ThreadRecord& thread : threads)
        if (reader.read(thread, ids) != sampling::StackOutcome::ok) {
            std::fprintf(stderr, "capture_fixture: a stack did not read whole\n");
            return 1;
        }
    fixture.regions = recording->regions();

    std::ifstream expected(argv[2]);
    std::string line;
    while (std::getline(expected, line)) {
        if (line.rfind("thread ", 0) == 0) {
            fixture.thread_id = std::stoull(line.substr(7), nullptr, 16);
        } else if (line.rfind("frame ", 0) == 0) {
            std::size_t tab1 = line.find('\t'), tab2 = line.find('\t', tab1 + 1);
            fixture.frames.push_back({line.substr(tab1 + 1, tab2 - tab1 - 1), line.substr(tab2 + 1),
                                      std::stoi(line.substr(6, tab1 - 6))});
        }
    }
    std::ofstream out(argv[3]);
    test_support::write_fixture(out, fixture);
    return out ? 0 : 1;
}
