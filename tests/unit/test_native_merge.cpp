// Merging native and Python frames: roles of native frames by name and module, the eval-call
// grouping of raw chains, and the merge with its three outcomes, by count and by stack address.
#include <gtest/gtest.h>

#include "spyglass/native/frame_role.hpp"
#include "spyglass/resolve/native_merge.hpp"

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
constexpr std::uint32_t kEval = 100, kCall = 101, kQsort = 102, kCompare = 103, kStart = 104,
                        kMalloc = 105, kMain = 106;

// Frame ids written as their numbers.
struct MergeFrameIds : std::vector<model::FrameId> {
    MergeFrameIds(std::initializer_list<std::uint32_t> numbers) {
        for (std::uint32_t number : numbers)
            push_back(model::FrameId(number));
    }
};

NativeFrame eval() {
    return {model::FrameId(kEval), FrameRole::eval};
}
NativeFrame plumbing(std::uint32_t id = kCall) {
    return {model::FrameId(id), FrameRole::plumbing};
}
NativeFrame startup() {
    return {model::FrameId(kStart), FrameRole::startup};
}
NativeFrame shown(std::uint32_t id) {
    return {model::FrameId(id), FrameRole::shown};
}

struct Python {
    MergeFrameIds frames;
    std::vector<std::uint32_t> call;
    std::uint32_t calls;
    std::vector<std::uint64_t> anchors = {};
    PythonPart part() const { return {frames, call, calls, anchors}; }
};

// By count: no stack pointers, no anchors.
MergeOutcome merge(std::span<const NativeFrame> native, bool complete, const PythonPart& python,
                   bool all, std::vector<model::FrameId>& out) {
    NativePart part{native, {}, kAnchorBeyond, complete};
    MergeResult result = merge_native(part, python, all, out);
    EXPECT_EQ(result.method, MergeMethod::count);
    return result.outcome;
}

TEST(MergeNative, PythonFramesTakeTheEvalCallsPlaces) {
    // compare (Python, called back from qsort) <- qsort (libc) <- sort_it (Python) <- <module>
    Python python{{1, 2, 3}, {0, 1, 2}, 3};
    std::vector<NativeFrame> native = {eval(),          plumbing(), shown(kCompare), shown(kQsort),
                                       plumbing(),      eval(),     plumbing(),      eval(),
                                       plumbing(kMain), startup()};
    std::vector<model::FrameId> out;
    EXPECT_EQ(merge(native, true, python.part(), false, out), MergeOutcome::merged);
    EXPECT_EQ(out, (MergeFrameIds{1, kCompare, kQsort, 2, 3}));
}

TEST(MergeNative, AllKeepsEveryFrame) {
    Python python{{1, 2}, {0, 1}, 2};
    std::vector<NativeFrame> native = {eval(), plumbing(), eval(), plumbing(kMain), startup()};
    std::vector<model::FrameId> out;
    EXPECT_EQ(merge(native, true, python.part(), true, out), MergeOutcome::merged);
    EXPECT_EQ(out, (MergeFrameIds{1, kEval, kCall, 2, kEval, kMain, kStart}));
}

TEST(MergeNative, InterpreterWorkAtTheTopIsShown) {
    // On the CPU in an allocation under f: the allocator is where the time goes.
    Python python{{1}, {0}, 1};
    std::vector<NativeFrame> native = {plumbing(kMalloc), plumbing(), eval(), plumbing(kMain)};
    std::vector<model::FrameId> out;
    EXPECT_EQ(merge(native, true, python.part(), false, out), MergeOutcome::merged);
    EXPECT_EQ(out, (MergeFrameIds{kMalloc, kCall, 1}));
}

TEST(MergeNative, InlinedCallsShareOneEvalCall) {
    // 3.11+: three Python frames in one eval call, one in the outer call.
    Python python{{1, 2, 3, 4}, {0, 0, 0, 1}, 2};
    std::vector<NativeFrame> native = {shown(kQsort), eval(), plumbing(), eval(), startup()};
    std::vector<model::FrameId> out;
    EXPECT_EQ(merge(native, true, python.part(), false, out), MergeOutcome::merged);
    EXPECT_EQ(out, (MergeFrameIds{kQsort, 1, 2, 3, 4}));
}

TEST(MergeNative, CountsThatDisagreeGiveThePythonFramesAlone) {
    Python python{{1, 2}, {0, 1}, 2};
    std::vector<model::FrameId> out;
    // Two eval calls more than the chain has.
    std::vector<NativeFrame> more = {eval(), eval(), eval(), eval(), startup()};
    EXPECT_EQ(merge(more, true, python.part(), false, out), MergeOutcome::mismatch);
    EXPECT_EQ(out, (MergeFrameIds{1, 2}));
    // One fewer, with the whole native stack unwound.
    std::vector<NativeFrame> fewer = {shown(kQsort), eval(), startup()};
    EXPECT_EQ(merge(fewer, true, python.part(), false, out), MergeOutcome::mismatch);
    EXPECT_EQ(out, (MergeFrameIds{1, 2}));
}

TEST(MergeNative, TheInnermostEvalCallMayHaveNoFrameLinked) {
    // Stopped in the epilogue of compare's eval call: its frame already unlinked, the call
    // still on the native stack (3.10: _Py_CheckFunctionResult inside the eval loop).
    Python python{{2, 3}, {0, 1}, 2};
    std::vector<NativeFrame> native = {
        plumbing(kMalloc), eval(), shown(kCompare), shown(kQsort), eval(), eval(), startup()};
    std::vector<model::FrameId> out;
    EXPECT_EQ(merge(native, true, python.part(), false, out), MergeOutcome::merged);
    EXPECT_EQ(out, (MergeFrameIds{kMalloc, kCompare, kQsort, 2, 3}));
}

TEST(MergeNative, ACutNativeStackKeepsTheOuterPythonFrames) {
    // The copy of the stack ended after the first eval call: the outer frames follow.
    Python python{{1, 2, 3}, {0, 1, 2}, 3};
    std::vector<NativeFrame> native = {shown(kQsort), eval(), plumbing()};
    std::vector<model::FrameId> out;
    EXPECT_EQ(merge(native, false, python.part(), false, out), MergeOutcome::cut);
    EXPECT_EQ(out, (MergeFrameIds{kQsort, 1, 2, 3}));
}

TEST(MergeNative, FramesNotStartedStillTakeTheirEvalCall) {
    // The innermost call's only frame has not run its first instruction: not shown, but its
    // eval call is on the native stack.
    Python python{{2}, {1}, 2};
    std::vector<NativeFrame> native = {eval(), plumbing(), shown(kQsort), eval(), startup()};
    std::vector<model::FrameId> out;
    EXPECT_EQ(merge(native, true, python.part(), false, out), MergeOutcome::merged);
    EXPECT_EQ(out, (MergeFrameIds{kQsort, 2}));
}

TEST(MergeNative, ANativeOnlyStack) {
    Python python{{}, {}, 0};
    std::vector<NativeFrame> native = {shown(kQsort), shown(kCompare), startup()};
    std::vector<model::FrameId> out;
    EXPECT_EQ(merge(native, true, python.part(), false, out), MergeOutcome::merged);
    EXPECT_EQ(out, (MergeFrameIds{kQsort, kCompare}));
}

// --- by stack address ------------------------------------------------------------------------
// Stack pointers grow outwards (innermost first); frame i owns [sp[i], sp[i + 1]). Each eval
// frame below owns 0x100 bytes and its anchor lies at +0x80 of it, as gdb showed on 3.11-3.13
// (&cframe / &entry_frame inside _PyEval_EvalFrameDefault's own frame).

struct Stack {
    std::vector<NativeFrame> frames;
    std::vector<std::uint64_t> sp;
    void add(NativeFrame frame, std::uint64_t size) {
        sp.push_back(sp.empty() ? 0x7000 : sp.back() + last_size);
        frames.push_back(frame);
        last_size = size;
    }
    // Where the anchor of the eval frame at `index` lies.
    std::uint64_t anchor(std::size_t index) const { return sp[index] + 0x80; }
    NativePart part(bool complete = true, std::uint64_t end = kAnchorBeyond) const {
        return {frames, sp, end, complete};
    }
    std::uint64_t last_size = 0;
};

TEST(MergeByAddress, EachRunGoesToTheEvalFrameThatHoldsItsAnchor) {
    // compare <- qsort <- sort_it, <module> (one eval call for the two, 3.11+ inlining)
    Stack stack;
    stack.add(eval(), 0x100);         // 0: compare's call
    stack.add(plumbing(), 0x40);      // 1
    stack.add(shown(kCompare), 0x40); // 2 (ffi's closure, say)
    stack.add(shown(kQsort), 0x40);   // 3
    stack.add(plumbing(), 0x40);      // 4
    stack.add(eval(), 0x100);         // 5: sort_it and <module>
    stack.add(plumbing(kMain), 0x40); // 6
    stack.add(startup(), 0x40);       // 7
    Python python{{1, 2, 3}, {0, 1, 1}, 2, {stack.anchor(0), stack.anchor(5)}};
    std::vector<model::FrameId> out;
    MergeResult result = merge_native(stack.part(), python.part(), false, out);
    EXPECT_EQ(result.method, MergeMethod::address);
    EXPECT_EQ(result.outcome, MergeOutcome::merged);
    EXPECT_EQ(out, (MergeFrameIds{1, kCompare, kQsort, 2, 3}));
}

TEST(MergeByAddress, AnEvalCallEnteringHasNoRunOfItsOwn) {
    // The innermost eval call has not linked its frame yet: its part of the stack holds no
    // anchor, the next one holds run 0's.
    Stack stack;
    stack.add(eval(), 0x100);
    stack.add(plumbing(), 0x40);
    stack.add(shown(kQsort), 0x40);
    stack.add(eval(), 0x100);
    stack.add(startup(), 0x40);
    Python python{{1}, {0}, 1, {stack.anchor(3)}};
    std::vector<model::FrameId> out;
    MergeResult result = merge_native(stack.part(), python.part(), false, out);
    EXPECT_EQ(result.method, MergeMethod::address);
    EXPECT_EQ(result.outcome, MergeOutcome::merged);
    EXPECT_EQ(out, (MergeFrameIds{kQsort, 1}));
}

TEST(MergeByAddress, ACutCopyWhereCountingWouldShiftTheRuns) {
    // The copy ended after the second eval frame; the innermost eval call is entering (no
    // run). Counting pairs the two eval frames with runs 0 and 1 and puts run 0 above qsort;
    // the anchors put run 0 below it and leave runs 1 and 2 beyond the copy.
    Stack stack;
    stack.add(eval(), 0x100);
    stack.add(shown(kQsort), 0x40);
    stack.add(eval(), 0x100);
    const std::uint64_t end = stack.sp.back() + 0x100;
    Python python{{1, 2, 3}, {0, 1, 2}, 3, {stack.anchor(2), end + 0x200, kAnchorBeyond}};
    std::vector<model::FrameId> out;
    MergeResult result = merge_native(stack.part(false, end), python.part(), false, out);
    EXPECT_EQ(result.method, MergeMethod::address);
    EXPECT_EQ(result.outcome, MergeOutcome::cut);
    EXPECT_EQ(out, (MergeFrameIds{kQsort, 1, 2, 3}));
    // What counting alone makes of it: run 0 above qsort.
    std::vector<model::FrameId> counted;
    EXPECT_EQ(merge(stack.frames, false, Python{{1, 2, 3}, {0, 1, 2}, 3}.part(), false, counted),
              MergeOutcome::cut);
    EXPECT_EQ(counted, (MergeFrameIds{1, kQsort, 2, 3}));
}

TEST(MergeByAddress, AnAnchorOutsideEveryEvalFrameIsAMismatch) {
    Stack stack;
    stack.add(eval(), 0x100);
    stack.add(shown(kQsort), 0x100);
    stack.add(eval(), 0x100);
    stack.add(startup(), 0x40);
    std::vector<model::FrameId> out;
    // Run 1's anchor in qsort's frame.
    Python in_qsort{{1, 2}, {0, 1}, 2, {stack.anchor(0), stack.anchor(1)}};
    MergeResult result = merge_native(stack.part(), in_qsort.part(), false, out);
    EXPECT_EQ(result.method, MergeMethod::address);
    EXPECT_EQ(result.outcome, MergeOutcome::mismatch);
    EXPECT_EQ(out, (MergeFrameIds{1, 2}));
    // Below the stack pointer (a dead frame's), and above the whole (complete) stack.
    Python below{{1, 2}, {0, 1}, 2, {0x10, stack.anchor(2)}};
    EXPECT_EQ(merge_native(stack.part(), below.part(), false, out).outcome, MergeOutcome::mismatch);
    Python above{{1, 2}, {0, 1}, 2, {stack.anchor(0), 0x7fff0000}};
    EXPECT_EQ(merge_native(stack.part(), above.part(), false, out).outcome, MergeOutcome::mismatch);
    // Two anchors in one eval frame: the second has no eval frame of its own.
    Python twice{{1, 2}, {0, 1}, 2, {stack.anchor(0), stack.anchor(0) + 8}};
    EXPECT_EQ(merge_native(stack.part(), twice.part(), false, out).outcome, MergeOutcome::mismatch);
}

TEST(MergeByAddress, AnEvalCallWithoutARunBetweenTwoThatHaveOneIsAMismatch) {
    Stack stack;
    stack.add(eval(), 0x100);
    stack.add(eval(), 0x100);
    stack.add(eval(), 0x100);
    stack.add(startup(), 0x40);
    Python python{{1, 2}, {0, 1}, 2, {stack.anchor(0), stack.anchor(2)}};
    std::vector<model::FrameId> out;
    EXPECT_EQ(merge_native(stack.part(), python.part(), false, out).outcome,
              MergeOutcome::mismatch);
    EXPECT_EQ(out, (MergeFrameIds{1, 2}));
}

TEST(MergeByAddress, WithoutEveryAnchorOrStackPointerRunsArePlacedByCount) {
    Stack stack;
    stack.add(shown(kQsort), 0x40);
    stack.add(eval(), 0x100);
    stack.add(eval(), 0x100);
    stack.add(startup(), 0x40);
    std::vector<model::FrameId> out;
    // The outermost run's anchor is not known (a chain cut short).
    Python partial{{1, 2}, {0, 1}, 2, {stack.anchor(1), 0}};
    MergeResult result = merge_native(stack.part(), partial.part(), false, out);
    EXPECT_EQ(result.method, MergeMethod::count);
    EXPECT_EQ(result.outcome, MergeOutcome::merged);
    EXPECT_EQ(out, (MergeFrameIds{kQsort, 1, 2}));
    // A frame whose stack pointer the unwind did not recover.
    Stack unknown = stack;
    unknown.sp[2] = 0;
    Python anchored{{1, 2}, {0, 1}, 2, {stack.anchor(1), stack.anchor(2)}};
    EXPECT_EQ(merge_native(unknown.part(), anchored.part(), false, out).method, MergeMethod::count);
    EXPECT_EQ(merge_native(stack.part(), anchored.part(), false, out).method, MergeMethod::address);
    EXPECT_EQ(out, (MergeFrameIds{kQsort, 1, 2}));
}

TEST(MergeByAddress, AllKeepsTheEvalFramesInPlace) {
    Stack stack;
    stack.add(eval(), 0x100);
    stack.add(shown(kQsort), 0x40);
    stack.add(eval(), 0x100);
    stack.add(plumbing(kMain), 0x40);
    Python python{{1, 2}, {0, 1}, 2, {stack.anchor(0), stack.anchor(2)}};
    std::vector<model::FrameId> out;
    EXPECT_EQ(merge_native(stack.part(), python.part(), true, out).outcome, MergeOutcome::merged);
    EXPECT_EQ(out, (MergeFrameIds{1, kEval, kQsort, 2, kEval, kMain}));
}

} // namespace
} // namespace spyglass::sampling
