// One look at every thread of a process: what `spyglass dump` prints.
#pragma once

#include <cstddef>

#include "spyglass/capture/paused_read.hpp"
#include "spyglass/error.hpp"
#include "spyglass/model/frame_table.hpp"
#include "spyglass/model/snapshot.hpp"
#include "spyglass/python/interpreter.hpp"

namespace spyglass::sampling {

struct SnapshotOptions {
    bool locals = false; // read each frame's local variables (while the thread is paused, if)
    PauseMode pause = PauseMode::when_torn;
    std::size_t max_value_chars = 120;
    bool native = false;     // each thread's native frames merged in (--native)
    bool native_all = false; // keeping the interpreter's own (--native-all)
    model::WaitDetail waits = model::WaitDetail::full; // what to say of off-CPU threads' waits
};

Result<model::ProcessSnapshot> take_snapshot(python::PythonProcess& process,
                                             model::FrameTable& frames,
                                             const SnapshotOptions& options);

} // namespace spyglass::sampling
