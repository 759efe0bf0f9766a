// Merging native and Python frames: roles of native frames by name and module, the eval-call
// grouping of raw chains, and the merge with its three outcomes.
#include <gtest/gtest.h>

#include "spyglass/native/frame_role.hpp"
#include "spyglass/sampling/native_merge.hpp"

namespace spyglass::sampling {
namespace {

using native::FrameOrigin;
using native::FrameRole;

FrameOrigin interpreter(int major = 3) {
    return {.known = true, .in_interpreter = true, .in_libc = false, .python_major = major};
}
FrameOrigin library() {
    return {.known = true, .in_interpreter = false, .in_libc = false, .python_major = 3};
}

TEST(FrameRole, EvalLoopPerMajorVersion) {
    EXPECT_EQ(native::frame_role("_PyEval_EvalFrameDefault", interpreter()), FrameRole::eval);
    EXPECT_EQ(native::frame_role("_PyEval_EvalFrameDefault.cold", interpreter()), FrameRole::eval);
    // On 3 PyEval_EvalFrameEx only wraps the eval loop: counting it would count a call twice.
    EXPECT_EQ(native::frame_role("PyEval_EvalFrameEx", interpreter()), FrameRole::plumbing);
    EXPECT_EQ(native::frame_role("PyEval_EvalFrameEx", interpreter(2)), FrameRole::eval);
    EXPECT_EQ(native::frame_role("_PyEval_EvalFrameDefault", interpreter(2)), FrameRole::plumbing);
    // The same name outside the interpreter is somebody else's function.
    EXPECT_EQ(native::frame_role("_PyEval_EvalFrameDefault", library()), FrameRole::shown);
}

TEST(FrameRole, PlumbingStartupAndShown) {
    EXPECT_EQ(native::frame_role("_PyObject_MakeTpCall", interpreter()), FrameRole::plumbing);
    EXPECT_EQ(native::frame_role("cfunction_vectorcall_O", interpreter()), FrameRole::plumbing);
    EXPECT_EQ(native::frame_role("main", interpreter()), FrameRole::plumbing);
    EXPECT_EQ(native::frame_role("function_call", interpreter()), FrameRole::plumbing); // 3.6
    EXPECT_EQ(native::frame_role("time_sleep", interpreter()), FrameRole::shown);
    EXPECT_EQ(native::frame_role("list_sort_impl", interpreter()), FrameRole::shown);
    EXPECT_EQ(native::frame_role("PyThread_acquire_lock_timed", interpreter()), FrameRole::shown);
    EXPECT_EQ(native::frame_role("start_thread", library()), FrameRole::startup);
    EXPECT_EQ(native::frame_role("__clone3", library()), FrameRole::startup);
    EXPECT_EQ(native::frame_role("_start", interpreter()), FrameRole::startup);
    EXPECT_EQ(native::frame_role("qsort", library()), FrameRole::shown);
    // Names of a library's own C API are its work, not the interpreter's calling.
    EXPECT_EQ(native::frame_role("PyArray_Sort", library()), FrameRole::shown);
    FrameOrigin stripped_libc{.known = false, .in_interpreter = false, .in_libc = true};
    EXPECT_EQ(native::frame_role("libc.so.6+0x8a1c2", stripped_libc), FrameRole::startup);
    FrameOrigin stripped_python{.known = false, .in_interpreter = true};
    EXPECT_EQ(native::frame_role("python3.11+0x1234", stripped_python), FrameRole::plumbing);
}

python::RawFrame raw(bool entry) {
    python::RawFrame frame;
    frame.flags = entry ? python::RawFrame::entry : 0;
    return frame;
}

TEST(EvalCalls, GroupsEndAtEntryFrames) {
    // 3.11+: f and g ran in one call of the eval loop (g called f inline), h in another.
    std::vector<python::RawFrame> chain = {raw(false), raw(true), raw(true)};
    std::vector<std::uint32_t> call;
    EXPECT_EQ(eval_calls(chain, call), 2u);
    EXPECT_EQ(call, (std::vector<std::uint32_t>{0, 0, 1}));
    // A chain cut before its outermost frame still ran in one more call.
    std::vector<python::RawFrame> cut = {raw(true), raw(false)};
    EXPECT_EQ(eval_calls(cut, call), 2u);
    EXPECT_EQ(eval_calls({}, call), 0u);
}

// Frame ids: Python frames 1.., native frames 100..
constexpr model::FrameId kEval = 100, kCall = 101, kQsort = 102, kCompare = 103, kStart = 104,
                         kMalloc = 105, kMain = 106;

NativeFrame eval() {
    return {kEval, FrameRole::eval};
}
NativeFrame plumbing(model::FrameId id = kCall) {
    return {id, FrameRole::plumbing};
}
NativeFrame startup() {
    return {kStart, FrameRole::startup};
}
NativeFrame shown(model::FrameId id) {
    return {id, FrameRole::shown};
}

struct Python {
    std::vector<model::FrameId> frames;
    std::vector<std::uint32_t> call;
    std::uint32_t calls;
    PythonPart part() const { return {frames, call, calls}; }
};

TEST(MergeNative, PythonFramesTakeTheEvalCallsPlaces) {
    // compare (Python, called back from qsort) <- qsort (libc) <- sort_it (Python) <- <module>
    Python python{{1, 2, 3}, {0, 1, 2}, 3};
    std::vector<NativeFrame> native = {eval(),          plumbing(), shown(kCompare), shown(kQsort),
                                       plumbing(),      eval(),     plumbing(),      eval(),
                                       plumbing(kMain), startup()};
    std::vector<model::FrameId> out;
    EXPECT_EQ(merge_native(native, true, python.part(), false, out), MergeOutcome::merged);
    EXPECT_EQ(out, (std::vector<model::FrameId>{1, kCompare, kQsort, 2, 3}));
}

TEST(MergeNative, AllKeepsEveryFrame) {
    Python python{{1, 2}, {0, 1}, 2};
    std::vector<NativeFrame> native = {eval(), plumbing(), eval(), plumbing(kMain), startup()};
    std::vector<model::FrameId> out;
    EXPECT_EQ(merge_native(native, true, python.part(), true, out), MergeOutcome::merged);
    EXPECT_EQ(out, (std::vector<model::FrameId>{1, kEval, kCall, 2, kEval, kMain, kStart}));
}

TEST(MergeNative, InterpreterWorkAtTheTopIsShown) {
    // On the CPU in an allocation under f: the allocator is where the time goes.
    Python python{{1}, {0}, 1};
    std::vector<NativeFrame> native = {plumbing(kMalloc), plumbing(), eval(), plumbing(kMain)};
    std::vector<model::FrameId> out;
    EXPECT_EQ(merge_native(native, true, python.part(), false, out), MergeOutcome::merged);
    EXPECT_EQ(out, (std::vector<model::FrameId>{kMalloc, kCall, 1}));
}

TEST(MergeNative, InlinedCallsShareOneEvalCall) {
    // 3.11+: three Python frames in one eval call, one in the outer call.
    Python python{{1, 2, 3, 4}, {0, 0, 0, 1}, 2};
    std::vector<NativeFrame> native = {shown(kQsort), eval(), plumbing(), eval(), startup()};
    std::vector<model::FrameId> out;
    EXPECT_EQ(merge_native(native, true, python.part(), false, out), MergeOutcome::merged);
    EXPECT_EQ(out, (std::vector<model::FrameId>{kQsort, 1, 2, 3, 4}));
}

TEST(MergeNative, CountsThatDisagreeGiveThePythonFramesAlone) {
    Python python{{1, 2}, {0, 1}, 2};
    std::vector<model::FrameId> out;
    // Two eval calls more than the chain has.
    std::vector<NativeFrame> more = {eval(), eval(), eval(), eval(), startup()};
    EXPECT_EQ(merge_native(more, true, python.part(), false, out), MergeOutcome::mismatch);
    EXPECT_EQ(out, (std::vector<model::FrameId>{1, 2}));
    // One fewer, with the whole native stack unwound.
    std::vector<NativeFrame> fewer = {shown(kQsort), eval(), startup()};
    EXPECT_EQ(merge_native(fewer, true, python.part(), false, out), MergeOutcome::mismatch);
    EXPECT_EQ(out, (std::vector<model::FrameId>{1, 2}));
}

TEST(MergeNative, TheInnermostEvalCallMayHaveNoFrameLinked) {
    // Stopped in the epilogue of compare's eval call: its frame already unlinked, the call
    // still on the native stack (3.10: _Py_CheckFunctionResult inside the eval loop).
    Python python{{2, 3}, {0, 1}, 2};
    std::vector<NativeFrame> native = {
        plumbing(kMalloc), eval(), shown(kCompare), shown(kQsort), eval(), eval(), startup()};
    std::vector<model::FrameId> out;
    EXPECT_EQ(merge_native(native, true, python.part(), false, out), MergeOutcome::merged);
    EXPECT_EQ(out, (std::vector<model::FrameId>{kMalloc, kCompare, kQsort, 2, 3}));
}

TEST(MergeNative, ACutNativeStackKeepsTheOuterPythonFrames) {
    // The copy of the stack ended after the first eval call: the outer frames follow.
    Python python{{1, 2, 3}, {0, 1, 2}, 3};
    std::vector<NativeFrame> native = {shown(kQsort), eval(), plumbing()};
    std::vector<model::FrameId> out;
    EXPECT_EQ(merge_native(native, false, python.part(), false, out), MergeOutcome::cut);
    EXPECT_EQ(out, (std::vector<model::FrameId>{kQsort, 1, 2, 3}));
}

TEST(MergeNative, FramesNotStartedStillTakeTheirEvalCall) {
    // The innermost call's only frame has not run its first instruction: not shown, but its
    // eval call is on the native stack.
    Python python{{2}, {1}, 2};
    std::vector<NativeFrame> native = {eval(), plumbing(), shown(kQsort), eval(), startup()};
    std::vector<model::FrameId> out;
    EXPECT_EQ(merge_native(native, true, python.part(), false, out), MergeOutcome::merged);
    EXPECT_EQ(out, (std::vector<model::FrameId>{kQsort, 2}));
}

TEST(MergeNative, ANativeOnlyStack) {
    Python python{{}, {}, 0};
    std::vector<NativeFrame> native = {shown(kQsort), shown(kCompare), startup()};
    std::vector<model::FrameId> out;
    EXPECT_EQ(merge_native(native, true, python.part(), false, out), MergeOutcome::merged);
    EXPECT_EQ(out, (std::vector<model::FrameId>{kQsort, kCompare}));
}

} // namespace
} // namespace spyglass::sampling
