// Where the GIL's futex words are, per GIL model and with the generated layouts (a wrong
// runtime_gil or gil_size fails here), and which standard-library frames name a primitive.
#include <gtest/gtest.h>

#include "spyglass/process/fake_memory.hpp"
#include "spyglass/python/layout.hpp"
#include "spyglass/python/waits.hpp"

namespace {

using namespace spyglass;
using python::TargetInfo;

TargetInfo target_for(int major, int minor) {
    TargetInfo target;
    target.layout = *python::layout_for(major, minor);
    target.version = {major, minor, 0};
    return target;
}

TEST(GilWords, TheRuntimeGilOf37To311) {
    for (int minor : {7, 8, 9, 10, 11}) {
        process::FakeMemory memory;
        TargetInfo target = target_for(3, minor);
        target.runtime = 0x10000;
        const python::LayoutOffsets& o = target.layout.off;
        ASSERT_NE(o.runtime_gil, python::kAbsent) << minor;
        ASSERT_EQ(o.gil_size, 208u) << minor; // 2 x (pthread_cond_t, pthread_mutex_t) + 32
        // `locked` and `last_holder` are fields of the same struct.
        EXPECT_LT(o.runtime_gil_locked - o.runtime_gil, o.gil_size) << minor;
        python::GilWords gil(memory, target);
        EXPECT_TRUE(gil.known());
        const process::Address start = target.runtime + o.runtime_gil;
        EXPECT_TRUE(gil.is_gil(start, 0)) << minor;
        EXPECT_TRUE(gil.is_gil(start + o.gil_size - 4, 0)) << minor;
        EXPECT_FALSE(gil.is_gil(start + o.gil_size, 0)) << minor;
        EXPECT_FALSE(gil.is_gil(start - 4, 0)) << minor;
    }
}

TEST(GilWords, EachInterpretersGilFrom312) {
    for (int minor : {12, 13}) {
        process::FakeMemory memory;
        TargetInfo target = target_for(3, minor);
        const python::LayoutOffsets& o = target.layout.off;
        const process::Address interp = 0x20000, own = 0x30000, sub = 0x40000, gil = 0x50000;
        memory.map(interp, o.interp_ceval_gil + 8);
        memory.map(sub, o.interp_ceval_gil + 8);
        memory.put<std::uint64_t>(interp + o.interp_ceval_gil, gil);
        memory.put<std::uint64_t>(sub + o.interp_ceval_gil, own);
        python::GilWords words(memory, target);
        EXPECT_TRUE(words.is_gil(gil + 16, interp)) << minor;
        EXPECT_FALSE(words.is_gil(gil + 16, sub)) << minor; // a sub-interpreter with its own
        EXPECT_TRUE(words.is_gil(own, sub)) << minor;
        EXPECT_FALSE(words.is_gil(gil + o.gil_size, interp)) << minor;
        EXPECT_FALSE(words.is_gil(gil, 0)) << minor; // no interpreter: no GIL to compare with
    }
}

TEST(GilWords, TheStaticsOf36AndTheLockOf27) {
    process::FakeMemory memory;
    TargetInfo py36 = target_for(3, 6);
    py36.gil_statics = {{0x1000, 48}, {0x2000, 40}};
    python::GilWords words36(memory, py36);
    EXPECT_TRUE(words36.is_gil(0x1000 + 40, 0));
    EXPECT_TRUE(words36.is_gil(0x2000, 0));
    EXPECT_FALSE(words36.is_gil(0x1000 + 48, 0));

    TargetInfo py27 = target_for(2, 7);
    py27.gil_lock_slot = 0x3000;
    memory.map(0x3000, 8);
    python::GilWords words27(memory, py27);
    EXPECT_TRUE(words27.known());
    EXPECT_FALSE(words27.is_gil(0x7000, 0)); // interpreter_lock not made yet (no thread)
    memory.put<std::uint64_t>(0x3000, 0x7000);
    EXPECT_TRUE(words27.is_gil(0x7000, 0)); // read again until it is set
    EXPECT_FALSE(words27.is_gil(0x7000 + 32, 0));

    TargetInfo stripped = target_for(2, 7);
    EXPECT_FALSE(python::GilWords(memory, stripped).known());
}

TEST(SyncPrimitive, TheStandardLibrarysBlockingFunctions) {
    using python::sync_primitive;
    // 3.11+ names are qualified; older ones are named from the table where it can.
    EXPECT_EQ(sync_primitive("Queue.get", "/usr/lib/python3.12/queue.py"), "queue.Queue.get");
    EXPECT_EQ(sync_primitive("get", "/usr/lib/python3.8/queue.py"), "queue.Queue.get");
    EXPECT_EQ(sync_primitive("get", "/usr/lib/python2.7/Queue.py"), "queue.Queue.get");
    EXPECT_EQ(sync_primitive("Event.wait", "/x/lib/python3.12/threading.py"),
              "threading.Event.wait");
    EXPECT_EQ(sync_primitive("wait", "/x/lib/python3.8/threading.py"), "threading.wait");
    EXPECT_EQ(sync_primitive("_wait_for_tstate_lock", "/x/threading.py"), "threading.Thread.join");
    EXPECT_EQ(sync_primitive("Future.result", "/x/concurrent/futures/_base.py"),
              "concurrent.futures.Future.result");
    EXPECT_EQ(sync_primitive("result", "/srv/app/_base.py"), std::nullopt);
    EXPECT_EQ(sync_primitive("get", "/srv/app/cache.py"), std::nullopt);
    EXPECT_EQ(sync_primitive("handler", "/usr/lib/python3.12/threading.py"), std::nullopt);
    EXPECT_TRUE(python::is_event_loop_frame("BaseEventLoop._run_once",
                                            "/usr/lib/python3.12/asyncio/base_events.py"));
    EXPECT_TRUE(python::is_event_loop_frame("_run_once", "/x/python3.8/asyncio/base_events.py"));
    EXPECT_FALSE(python::is_event_loop_frame("_run_once", "/srv/app/base_events.py"));
    EXPECT_TRUE(python::futex_identifies_lock(target_for(3, 12)));
    EXPECT_FALSE(python::futex_identifies_lock(target_for(3, 13)));
}

} // namespace
