"""--native on every installed interpreter (2.7 to 3.13 and Debian's static, stripped 3.11):
native frames merged with the Python ones in the right order (Python -> ctypes -> libffi ->
qsort -> Python callback, workloads/native_target.py), a C extension built against each
interpreter's own headers that spins in C and calls back into Python (workloads/cext_target.py),
threads blocked in C (sleep, read, a socket's recv, a Lock) shown in their system call, each
taken without a stop (-vv's per-thread counts), a thread blocked under a frame-pointer frame
that only a stop unwinds (the fallback), a deep thread whose stack copy grows, --native-all
keeping the eval loop, --nonblocking stopping nothing, dump --native (text and JSON, 100 times
on a target whose threads churn), a target SIGKILLed mid recording, and a target whose threads
churn recorded at 1 kHz and spyglass SIGKILLed while recording it.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

WORKLOAD = os.path.join(harness.WORKLOADS, "native_target.py")
WORKLOAD_CEXT = os.path.join(harness.WORKLOADS, "cext_target.py")
FRAME = re.compile(r"^(.*) \((.*?)(?::(\d+))?\)$")
SLEEP = re.compile(r"nanosleep|select")  # 3.11+ clock_nanosleep; older ones select
READ = re.compile(r"(^|_)read$")
RECV = re.compile(r"(^|_)recv(from)?$")
SYSCALL = re.compile(r"^syscall$")
# (3.13+ waits in _PySemaphore_Wait: over a stripped libc, whose sem_clockwait tail-calls an
# unnamed function, it is the innermost named frame.)
LOCK = re.compile(r"futex|sem_|pthread_cond|lll_lock|^_PySemaphore_Wait$")
UNNAMED_LIBC = re.compile(r"^libc(\.so\.\d+|-[\d.]+\.so)\+0x[0-9a-f]+$")
EVAL = re.compile(r"^(_PyEval_EvalFrameDefault|PyEval_EvalFrameEx)")
SUMMARY = re.compile(r"([\d,]+) samples in [\d.]+ s at [\d.]+ Hz \(asked \d+\), [\d,]+ late "
                     r"ticks?, ([\d,]+) sampling errors?")


def parse_frame(text):
    """(function, file, line or None) of one folded frame."""
    match = FRAME.match(text)
    if not match:
        return text, "", None
    line = match.group(3)
    return match.group(1), match.group(2), int(line) if line else None


def is_native(frame):
    """A native frame: "name (module)", or "name (source.c:line)" where DWARF has the line (not
    a marker such as the "[wait ...]" leaf)."""
    return not frame[0].startswith("[") and (frame[2] is None or not frame[1].endswith(".py"))


def thread_stacks(path, tid):
    """[(frames, count)] of one thread in a folded file recorded with --threads; frames are
    (function, file, line) tuples, the thread's root frame dropped."""
    stacks = []
    prefix = "thread %d " % tid
    with open(path, encoding="utf-8") as f:
        for line in f:
            stack, count = line.rstrip("\n").rsplit(" ", 1)
            if not stack.startswith(prefix):
                continue
            frames = [parse_frame(part) for part in stack.split(";")[1:]]
            stacks.append((frames, int(count)))
    return stacks


def read_text(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def native_log(stderr):
    """The -v line's counts, summed over processes: {"unstopped", "stopped", "fallback" (blocked
    threads stopped because their unwind without a stop ended early), "fallback_threads",
    "not_taken", "grown" (threads whose stack copies grew)}."""
    counts = dict.fromkeys(("unstopped", "stopped", "fallback", "fallback_threads", "not_taken",
                            "grown"), 0)
    for match in re.finditer(r"native stacks: (\d+) of blocked threads taken without a stop "
                             r"\(\d+ moved while read\), (\d+) with a stop \((\d+) of blocked "
                             r"threads whose unwind without a stop had ended early: (\d+) threads, "
                             r"\d+ of them given up\), (\d+) not taken .*; stack copies of (\d+) "
                             r"threads grown", stderr):
        for key, group in zip(("unstopped", "stopped", "fallback", "fallback_threads",
                               "not_taken", "grown"), match.groups()):
            counts[key] += int(group)
    return counts


def thread_captures(stderr):
    """{tid: (taken without a stop, taken with a stop)} from -vv's per-thread line."""
    captures = {}
    for match in re.finditer(r"native captures per thread \(tid: without a stop/with a stop\):"
                             r"(.*)", stderr):
        for tid, unstopped, stopped in re.findall(r" (\d+): (\d+)/(\d+)", match.group(1)):
            captures[int(tid)] = (int(unstopped), int(stopped))
    return captures


def dump_thread(text, tid):
    """The frames of thread tid in a text dump, innermost first: [(function, rest)], where rest
    is what the parentheses hold ("module, file:line" or "path:line")."""
    frames, inside = [], False
    for line in text.splitlines():
        if line.startswith("Thread "):
            inside = line.startswith("Thread %d " % tid)
            continue
        match = re.match(r"^    (\S.*) \((.*)\)$", line)
        if inside and match:
            frames.append((match.group(1), match.group(2)))
    return frames


def summary_counts(stderr):
    """(samples, sampling errors) from the summary line."""
    match = SUMMARY.search(stderr)
    if not match:
        raise AssertionError("no summary line in\n" + stderr)
    return int(match.group(1).replace(",", "")), int(match.group(2).replace(",", ""))


def build_frame_pointer_library(directory):
    """Builds workloads/c_extension/frame_pointer_block.c into directory: (path, None), or
    (None, why not)."""
    source = os.path.join(harness.WORKLOADS, "c_extension", "frame_pointer_block.c")
    library = os.path.join(directory, "frame_pointer_block.so")
    built = subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-g", "-fno-omit-frame-pointer",
                            "-fno-optimize-sibling-calls", source, "-o", library],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, encoding="utf-8",
                           timeout=harness.TIMEOUT)
    if built.returncode != 0:
        return None, "gcc failed: " + built.stdout
    return library, None


def build_extension(python, directory):
    """Builds workloads/c_extension/spyglass_cext.c against python's own headers into
    directory. None when built, else why not."""
    query = ("import sysconfig; print(sysconfig.get_paths()['include']); "
             "print(sysconfig.get_config_var('EXT_SUFFIX') or '.so')")
    out = subprocess.run([python, "-c", query], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         encoding="utf-8", timeout=harness.TIMEOUT)
    if out.returncode != 0:
        return "cannot ask %s for its headers: %s" % (python, out.stderr.strip())
    include, suffix = out.stdout.split()
    include = harness.host_path(python, include)
    if not os.path.exists(os.path.join(include, "Python.h")):
        return "no Python.h in %s for %s" % (include, python)
    source = os.path.join(harness.WORKLOADS, "c_extension", "spyglass_cext.c")
    # -idirafter: Debian's pyconfig.h includes <x86_64-linux-gnu/python3.X/pyconfig.h>.
    built = subprocess.run(["gcc", "-shared", "-fPIC", "-O1", "-g", "-fno-inline",
                            "-I" + include, "-idirafter", os.path.dirname(include), source, "-o",
                            os.path.join(directory, "spyglass_cext" + suffix)],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, encoding="utf-8",
                           timeout=harness.TIMEOUT)
    return None if built.returncode == 0 else "gcc failed: " + built.stdout


class NativeCase(harness.InterpreterCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="spyglass-native-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def record(self, target, *extra, **kwargs):
        out = os.path.join(self.tmp, "native.txt")
        result = harness.spyglass(kwargs.get("verbose", "-v"), "record", "--pid", target.pid,
                                  "-r", "200", "-d", kwargs.get("seconds", 2), "--threads",
                                  "-o", out, *extra)
        self.assertEqual(result.returncode, 0, result.stderr)
        return out, result.stderr

    def assert_blocked_in(self, path, tid, pattern, function, line):
        """Every sample of the thread with a native frame matching `pattern` (the blocking
        call) has one as its native leaf (the innermost frame but the [wait ...] marker), and
        `function` at `line` of the workload as its innermost Python frame; at least one sample
        has one. Returns those samples' frames."""
        stacks = thread_stacks(path, tid)
        self.assertTrue(stacks, "no samples of thread %s (%s) in\n%s" % (tid, function,
                                                                       read_text(path)))
        matched = []
        for frames, count in stacks:
            frames = [f for f in frames if not f[0].startswith("[")]
            if not any(is_native(f) and pattern.search(f[0]) for f in frames):
                continue
            # Under the call, a stripped C library's own unnamed syscall wrappers (glibc
            # 2.41's __syscall_cancel and __internal_syscall_cancel in Debian sid's libc).
            while len(frames) > 1 and UNNAMED_LIBC.match(frames[-1][0]):
                frames = frames[:-1]
            self.assertTrue(is_native(frames[-1]) and pattern.search(frames[-1][0]),
                            "%s: the leaf is not %s: %s" % (function, pattern.pattern, frames))
            python = [f for f in frames if not is_native(f)]
            self.assertTrue(python, frames)
            self.assertEqual(python[-1], (function, WORKLOAD, line), frames)
            matched.append(frames)
        self.assertTrue(matched, "%s: no native %s leaf in %s" % (
            function, pattern.pattern, [";".join(f[0] for f in fr) for fr, _ in stacks[:5]]))
        return matched


class NativeBase(NativeCase):
    def test_callback_order_and_blocked_threads(self):
        with harness.Target(self.python, "native_target.py") as target:
            tids, lines = target.report, target.report["lines"]
            out, stderr = self.record(target, "--native", verbose="-vv")
        main = thread_stacks(out, tids["main"])
        self.assertTrue(main, read_text(out))
        # Python -> native -> Python: sort_forever at its qsort call, qsort below it, the
        # callback compare above it, each Python frame with its exact line.
        ordered = 0
        for frames, count in main:
            names = [f[0] for f in frames]
            if "compare" not in names:
                continue
            top = names.index("sort_forever")
            self.assertEqual(frames[top][1:], (WORKLOAD, lines["qsort"]), frames)
            self.assertEqual(frames[0][0], "<module>", frames)
            sort = [i for i, name in enumerate(names) if name.startswith("qsort")]
            self.assertTrue(sort, "no qsort between sort_forever and compare: %s" % names)
            self.assertLess(top, sort[0], names)
            self.assertLess(sort[0], names.index("compare"), names)
            ordered += count
        self.assertGreater(ordered, 0, "no stack reached compare through qsort: %s" %
                           [";".join(f[0] for f in fr) for fr, _ in main[:5]])
        compare_lines = set(f[2] for frames, _ in main for f in frames if f[0] == "compare")
        self.assertIn(lines["compare"], compare_lines)
        # The interpreter's own frames are left out without --native-all. (On 3.x
        # PyEval_EvalFrameEx is only a wrapper of the eval loop: a sample taken in it, or in its
        # PLT stub on the way to it, before the callback's frame exists, shows it as the leaf,
        # where the interpreter's own work is shown. On 2.7 the same holds for the stub alone:
        # the callback's frame is made current only inside PyEval_EvalFrameEx.)
        python3 = self.version() >= (3, 0)
        on_the_way = ("PyEval_EvalFrameEx", "PyEval_EvalFrameEx@plt") if python3 else (
            "PyEval_EvalFrameEx@plt",)
        for frames, _ in main:
            evals = [i for i, f in enumerate(frames) if EVAL.match(f[0])]
            if evals == [len(frames) - 1]:
                evals = [] if frames[-1][0] in on_the_way else evals
            self.assertFalse(evals, frames)
        self.assert_blocked_in(out, tids["sleeper"], SLEEP, "sleeper", lines["sleep"])
        self.assert_blocked_in(out, tids["reader"], READ, "reader", lines["read"])
        self.assert_blocked_in(out, tids["receiver"], RECV, "receiver", lines["recv"])
        self.assert_blocked_in(out, tids["locker"], LOCK, "locker", lines["acquire"])
        # Each blocked thread is read from its syscall file, without a stop (the threads
        # blocked for good: never with one; the sleeper may be caught awake); the running
        # main thread with one.
        captures = thread_captures(stderr)
        for name in ("reader", "receiver", "locker", "sleeper"):
            unstopped, stopped = captures.get(tids[name], (0, 0))
            self.assertGreater(unstopped, 0, "%s: %s" % (name, stderr))
            if name != "sleeper":
                self.assertEqual(stopped, 0, "%s: %s" % (name, stderr))
        self.assertGreater(captures.get(tids["main"], (0, 0))[1], 0, stderr)
        self.assertEqual(native_log(stderr)["fallback_threads"], 0, stderr)

    def test_native_all_keeps_the_eval_loop(self):
        with harness.Target(self.python, "native_target.py") as target:
            out, _ = self.record(target, "--native-all")
            main = thread_stacks(out, target.report["main"])
        evals = [f for frames, _ in main for f in frames if EVAL.match(f[0])]
        self.assertTrue(evals, [";".join(f[0] for f in fr) for fr, _ in main[:3]])

    def test_zlib_bound_thread_merged_root_to_leaf(self):
        # Debian sid's stripped 3.13.18, 3.14 and 3.15 run most of the eval loop in a part GCC
        # split off _PyEval_EvalFrameDefault that their symbols do not name: every sample was
        # <native frames not merged> there. At least 80% of the thread's samples (measured:
        # 98-100% on every label) are whole: Python from its root to compress_forever at its
        # line, then libz's deflate, with a native leaf.
        with harness.Target(self.python, "zlib_target.py") as target:
            tid, line = target.report["compressor"], target.report["lines"]["compress"]
            out, _ = self.record(target, "--native")
        stacks = thread_stacks(out, tid)
        total = sum(count for _, count in stacks)
        whole = 0
        for frames, count in stacks:
            frames = [f for f in frames if not f[0].startswith("[")]
            python = [i for i, f in enumerate(frames) if not is_native(f)]
            caller = [i for i in python if frames[i][0] == "compress_forever"]
            if (frames and python and python[0] == 0 and caller and
                    frames[caller[0]][1:] == (os.path.join(harness.WORKLOADS, "zlib_target.py"),
                                              line) and
                    caller[0] == python[-1] and
                    any(f[0] == "deflate" for f in frames[caller[0] + 1:]) and
                    is_native(frames[-1])):
                whole += count
        self.assertGreater(total, 0, read_text(out))
        self.assertGreaterEqual(whole, 0.8 * total, "%d of %d merged root to leaf:\n%s" % (
            whole, total, read_text(out)[:4000]))

    def test_nonblocking_stops_nothing(self):
        with harness.Target(self.python, "native_target.py") as target:
            out, stderr = self.record(target, "--native", "--nonblocking")
            tids = target.report
        counts = native_log(stderr)
        self.assertEqual(counts["stopped"], 0, stderr)
        self.assertNotRegex(stderr.splitlines()[-1], r"\d+ pauses? \(p50", stderr)
        self.assert_blocked_in(out, tids["sleeper"], SLEEP, "sleeper", tids["lines"]["sleep"])
        # The running main thread is sampled Python-only, its Python frames still right.
        main = thread_stacks(out, tids["main"])
        self.assertTrue(any(f[0] == "sort_forever" for frames, _ in main for f in frames))

    def test_c_extension(self):
        why_not = build_extension(self.python, self.tmp)
        if why_not:
            sys.stderr.write("SKIP %s.test_c_extension: %s\n" % (type(self).__name__, why_not))
            self.skipTest(why_not)
        with harness.Target(self.python, "cext_target.py", self.tmp) as target:
            tids, lines = target.report, target.report["lines"]
            out, _ = self.record(target, "--native")
            dump = harness.spyglass("dump", "--pid", target.pid, "--native")
            self.assertEqual(dump.returncode, 0, dump.stderr)
            self.assertIsNone(target.process.poll(), "the target died")
        self.assertIn("spyglass_cext_spin (spyglass_cext", dump.stdout)
        # The spinning thread: its leaf is the C function, right under its Python caller.
        spinner = thread_stacks(out, tids["spinner"])
        self.assertTrue(spinner, read_text(out))
        total = sum(count for _, count in spinner)
        with open(os.path.join(harness.WORKLOADS, "c_extension", "spyglass_cext.c")) as f:
            start = [n for n, text in enumerate(f, 1) if "void spyglass_cext_spin(void)" in text]
        spin_lines = (start[0] + 1, start[0] + 2)  # for (;;) and its body
        in_c = 0
        for frames, count in spinner:
            # (A [cpu-starved] marker may follow: the spinner waits for a core on a busy box.)
            frames = [f for f in frames if not f[0].startswith("[")]
            if frames[-1][0] != "spyglass_cext_spin":
                continue
            # Built with -g: a line of the loop, from the extension's DWARF.
            self.assertEqual(frames[-1][1], "spyglass_cext.c", frames)
            self.assertIn(frames[-1][2], spin_lines, frames)
            python = [f for f in frames if not is_native(f)]
            self.assertEqual(python[-1], ("spin_in_c", WORKLOAD_CEXT, lines["spin"]), frames)
            in_c += count
        self.assertGreater(in_c, total // 2, "%d of %d spinner samples end in C: %s" % (
            in_c, total, [";".join(f[0] for f in fr) for fr, _ in spinner[:5]]))
        # The main thread: Python -> C -> Python, in that order, with the Python lines.
        ordered = 0
        for frames, count in thread_stacks(out, tids["main"]):
            names = [f[0] for f in frames]
            if "callback" not in names or "spyglass_cext_call_back" not in names:
                continue
            caller = names.index("calls_back")
            self.assertEqual(frames[caller][1:], (WORKLOAD_CEXT, lines["call_back"]), frames)
            self.assertLess(caller, names.index("spyglass_cext_call_back"), names)
            self.assertLess(names.index("spyglass_cext_call_back"), names.index("callback"),
                            names)
            ordered += count
        self.assertGreater(ordered, 0, read_text(out))

    def test_dump_native(self):
        with harness.Target(self.python, "native_target.py") as target:
            tids, lines = target.report, target.report["lines"]
            result = harness.spyglass("dump", "--pid", target.pid, "--native", "--json")
            self.assertEqual(result.returncode, 0, result.stderr)
            dump = json.loads(result.stdout)
            threads = dict((t["tid"], t) for t in dump["threads"])
            reader = threads[tids["reader"]]["frames"]
            natives = [f for f in reader if f.get("native")]
            self.assertTrue(natives and all(f.get("module") for f in natives), reader)
            self.assertTrue([f for f in natives if READ.search(f["function"])], reader)
            python = [f for f in reader if not f.get("native")]
            self.assertIn(("reader", lines["read"]),
                          [(f["function"], f.get("line")) for f in python], reader)
            # The main thread, innermost first: compare (Python), qsort (libc), then
            # sort_forever at its qsort call. It is in compare most of the time: a few dumps
            # catch it there.
            ordered = 0
            for _ in range(10):
                main = threads[tids["main"]]["frames"]
                names = [f["function"] for f in main]
                # (Python frames alone when its pause timed out, on a very busy box.)
                if "compare" in names and any(f.get("native") for f in main):
                    self.assert_callback_order(main, lines)
                    ordered += 1
                    if ordered == 3:
                        break
                again = harness.spyglass("dump", "--pid", target.pid, "--native", "--json")
                self.assertEqual(again.returncode, 0, again.stderr)
                threads = dict((t["tid"], t) for t in json.loads(again.stdout)["threads"])
            self.assertGreater(ordered, 0, "no dump caught the main thread in compare, merged")
            # Text: the sleeper thread's own frames show its sleep in libc, under sleeper()
            # (a few dumps: one may catch it awake between two sleeps).
            asleep = 0
            for _ in range(6):
                text = harness.spyglass("dump", "--pid", target.pid, "--native")
                self.assertEqual(text.returncode, 0, text.stderr)
                self.assertIn("sort_forever", text.stdout)
                frames = dump_thread(text.stdout, tids["sleeper"])
                functions = [function for function, _ in frames]
                self.assertIn("sleeper", functions, text.stdout)
                sleeps = [i for i, (function, where) in enumerate(frames)
                          if SLEEP.search(function) and where.startswith("libc")]
                if sleeps:
                    self.assertLess(sleeps[0], functions.index("sleeper"), frames)
                    self.assertEqual(frames[functions.index("sleeper")][1],
                                     "%s:%d" % (WORKLOAD, lines["sleep"]), frames)
                    asleep += 1
            self.assertGreater(asleep, 0, text.stdout)
            self.assertIsNone(target.process.poll())
            states = harness.task_states(target.pid)
            self.assertNotIn("t", states.values(), states)
            self.assertNotIn("T", states.values(), states)

    def assert_callback_order(self, frames, lines):
        """dump --json frames (innermost first) of the main thread in compare: compare at a line
        of its body, then qsort's frames, then sort_forever at its qsort call, then <module>."""
        names = [f["function"] for f in frames]
        compare = names.index("compare")
        sort = [i for i, name in enumerate(names) if name.startswith("qsort")]
        self.assertTrue(sort, names)
        top = names.index("sort_forever")
        self.assertLess(compare, sort[0], names)
        self.assertLess(sort[0], top, names)
        self.assertEqual(names[-1], "<module>", names)
        # The def line (a frame caught before its first instruction: f_lasti -1 reads as the
        # code's first line, as in CPython's own tracebacks), then the body: x = 0, the loop,
        # x += i (the marked line), the return.
        self.assertIn(frames[compare].get("line"),
                      range(lines["compare"] - 3, lines["compare"] + 2), frames[compare])
        self.assertEqual(frames[top].get("line"), lines["qsort"], frames[top])
        self.assertTrue(all(f.get("native") for f in frames[compare + 1:top]), names)
        self.assertFalse(frames[compare].get("native") or frames[top].get("native"), names)

    def test_target_killed_mid_recording(self):
        out = os.path.join(self.tmp, "killed.txt")
        with harness.Target(self.python, "native_target.py") as target:
            spyglass = subprocess.Popen(
                [harness.SPYGLASS, "record", "--pid", str(target.pid), "-r", "500", "-d", "60",
                 "--native", "-o", out], stderr=subprocess.PIPE)
            # Attached once the target's threads are seized (TracerPid).
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and tracer(target.pid) == 0:
                time.sleep(0.01)
            self.assertNotEqual(tracer(target.pid), 0, "spyglass never attached")
            # Killed once samples of the main thread were resolved (before, its code objects
            # could not be read any more): SIGUSR1 writes the recording so far and says so on
            # stderr; until that file shows sort_forever.
            for _ in range(100):
                spyglass.send_signal(signal.SIGUSR1)
                said = ""
                while "SIGUSR1: wrote" not in said:
                    said += harness.read_line(spyglass.stderr.fileno(), 60, spyglass)
                if "sort_forever" in read_text(out):
                    break
            target.process.send_signal(signal.SIGKILL)
            _, stderr = spyglass.communicate(timeout=60)
            stderr = stderr.decode("utf-8", "replace")
        self.assertEqual(spyglass.returncode, 0, stderr)
        self.assertIn("the target exited", stderr)
        with open(out, encoding="utf-8") as f:
            text = f.read()
        self.assertIn("sort_forever", text)
        self.assertRegex(text, r"qsort")

    def test_thread_churn(self):
        # 1 kHz on a target that starts and joins thousands of threads a second: no crash, few
        # errors and all counted, the worker's stacks there, the target never left stopped.
        out = os.path.join(self.tmp, "churn.txt")
        with harness.Target(self.python, "thread_churn.py") as target:
            result = harness.spyglass("-v", "record", "--pid", target.pid, "-r", "1000", "-d",
                                      "2", "--native", "-o", out)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertIsNone(target.process.poll(), "the target died")
            states = harness.task_states(target.pid)
        self.assertNotIn("t", states.values(), states)
        self.assertNotIn("T", states.values(), states)
        samples, errors = summary_counts(result.stderr)
        self.assertGreater(samples, 0, result.stderr)
        self.assertLessEqual(errors, max(10, samples // 20), result.stderr)
        # A thread that exited before it could be seized is gone, not a refusal to trace.
        self.assertNotIn("no permission", result.stderr)
        counts = native_log(result.stderr)
        self.assertGreater(counts["unstopped"] + counts["stopped"], 0, result.stderr)
        self.assertIn("compute", read_text(out))

    def test_spyglass_killed_while_threads_churn(self):
        # spyglass SIGKILLed while it records a churning target at 1 kHz, right after one of
        # the target's threads shows it as its tracer (a pause under way or just done), three
        # times: the kernel lets every thread go, none is left stopped (t or T) and the target
        # runs on. spyglass pauses only a thread it sees running, and a short-lived one may exit
        # before it is seen traced: the spinner is a long-lived thread that is always running
        # (or waiting for the GIL), so that one is seized soon (CI once saw none for a minute).
        with harness.Target(self.python, "thread_churn.py", "--spinner") as target:
            for _ in range(3):
                spyglass = subprocess.Popen(
                    [harness.SPYGLASS, "record", "--pid", str(target.pid), "-r", "1000", "-d",
                     "60", "--native", "-f", "folded", "-o", os.devnull],
                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, encoding="utf-8")
                try:
                    wait_until_traced(target, spyglass)
                finally:
                    spyglass.kill()
                    _, stderr = spyglass.communicate(timeout=60)
                self.assertEqual(spyglass.returncode, -signal.SIGKILL, stderr)
                self.assertIsNone(target.process.poll(), "the target died")
                states = harness.task_states(target.pid)
                self.assertNotIn("t", states.values(), states)
                self.assertNotIn("T", states.values(), states)


def wait_until_traced(target, spyglass, timeout=60):
    """Until a thread of the target has spyglass as its TracerPid (read from outside: a
    watcher thread inside the target, which needs the GIL, once reported nothing for a minute
    while spyglass paused its threads 3,000 times a second). Fails with spyglass's own words if
    it exits first, and on a timeout with what it says when stopped (its pause count) and the
    tracer and state of each of the target's threads."""
    deadline = time.monotonic() + timeout
    while spyglass.pid not in task_tracers(target.pid).values():
        if spyglass.poll() is not None:
            raise AssertionError("spyglass exited (%s) before it paused a thread: %s" % (
                spyglass.returncode, spyglass.stderr.read()))
        if time.monotonic() > deadline:
            tracers = task_tracers(target.pid)
            states = harness.task_states(target.pid)
            spyglass.send_signal(signal.SIGINT)
            _, stderr = spyglass.communicate(timeout=60)
            raise AssertionError(
                "no thread of the target traced by %d in %d s; tracers %s, states %s; spyglass "
                "said: %s" % (spyglass.pid, timeout, tracers, states, stderr))
        time.sleep(0.0005)  # polling the kernel's view; there is nothing to be told by


def task_tracers(pid):
    """{tid: TracerPid} of the threads of pid (the tracer is the thread that seized it)."""
    tracers = {}
    for task in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/status" % (pid, task)) as f:
                for line in f:
                    if line.startswith("TracerPid:"):
                        tracers[int(task)] = int(line.split()[1])
        except OSError:
            pass
    return tracers


def tracer(pid):
    """TracerPid of the main thread of pid (spyglass seizes the threads it may pause)."""
    return task_tracers(pid).get(pid, 0)


harness.interpreter_tests(NativeBase, globals())


class NativeCaptureTests(NativeCase):
    """How a capture is taken (the stop fallback, the copy's growth) and dump --native under
    churn depend on the C stack, not on the Python layout: checked on the oldest layout, the
    first _PyInterpreterFrame one, the newest, and Debian's static, stripped build."""

    def test_blocked_thread_stopped_when_its_syscall_registers_do_not_unwind(self):
        # fp_reader blocks in glibc's syscall() under a frame-pointer frame: from the syscall
        # file's sp and pc the unwind ends at that frame (rbp unknown, and not found on the
        # stack: 8 KiB of zeros lie between its stack pointer and its saved rbp), below every
        # Python frame. spyglass then stops that thread (only it) when it samples it blocked.
        # (Debian sid's interpreters, all frame-pointer frames, are unwound without a stop:
        # test_callback_order_and_blocked_threads on their labels.)
        library, why_not = build_frame_pointer_library(self.tmp)
        if why_not:
            sys.stderr.write("SKIP %s: %s\n" % (self.id(), why_not))
            self.skipTest(why_not)
        with harness.Target(self.python, "native_target.py", library) as target:
            tids, lines = target.report, target.report["lines"]
            # Longer: the first resolution (modules, DWARF) comes before the feedback does.
            out, stderr = self.record(target, "--native", verbose="-vv", seconds=4)
        for frames in self.assert_blocked_in(out, tids["fp_reader"], SYSCALL, "fp_reader",
                                             lines["fp_read"]):
            names = [f[0] for f in frames]
            self.assertIn("spyglass_fp_block", names, frames)
            self.assertLess(names.index("fp_reader"), names.index("spyglass_fp_block"), names)
        counts = native_log(stderr)
        self.assertEqual(counts["fallback_threads"], 1, stderr)
        self.assertGreater(counts["fallback"], 0, stderr)
        captures = thread_captures(stderr)
        self.assertGreater(captures.get(tids["fp_reader"], (0, 0))[1], 0, stderr)
        # The other blocked threads still are never stopped.
        for name in ("reader", "receiver", "locker"):
            self.assertEqual(captures.get(tids[name], (0, 1))[1], 0, "%s: %s" % (name, stderr))

    def test_blocking_stops_running_threads_only(self):
        # --blocking, as its help says, pauses each thread it reads except one asleep in the
        # kernel, read without a stop and checked not to have run: with --native too, the
        # threads blocked for good (reader, receiver, locker) are never stopped, their leaves
        # right, and the running main thread is stopped at every tick.
        with harness.Target(self.python, "native_target.py") as target:
            tids, lines = target.report, target.report["lines"]
            out, stderr = self.record(target, "--native", "--blocking", verbose="-vv")
        captures = thread_captures(stderr)
        for name in ("reader", "receiver", "locker"):
            self.assertIn(tids[name], captures, stderr)
            self.assertEqual(captures[tids[name]][1], 0, "%s stopped: %s" % (name, stderr))
            self.assertGreater(captures[tids[name]][0], 0, stderr)
        self.assertGreater(captures[tids["main"]][1], 100, stderr)
        self.assert_blocked_in(out, tids["reader"], READ, "reader", lines["read"])
        self.assert_blocked_in(out, tids["receiver"], RECV, "receiver", lines["recv"])

    def test_stack_copy_grows_for_a_deep_thread(self):
        # Thread "deep" blocks under about 48 KiB of stack (deep_stack says how much): the
        # first 32 KiB copy ends before its outer frames, the resolver says so, and the thread
        # is taken again (still without a stop) with a 64 KiB copy that holds its whole stack.
        with harness.Target(self.python, "native_target.py") as target:
            tids, lines = target.report, target.report["lines"]
            # --native-all: the eval frames between two calls of deep are kept, whatever
            # names the interpreter's own functions have (Debian's stripped build: map_next is
            # an address, and would be left out as the interpreter's plumbing).
            out, stderr = self.record(target, "--native-all", verbose="-vv", seconds=4)
        self.assertGreater(tids["deep_stack"], 36 << 10, tids)
        self.assertLess(tids["deep_stack"], 60 << 10, tids)
        self.assertGreaterEqual(native_log(stderr)["grown"], 1, stderr)
        unstopped, stopped = thread_captures(stderr).get(tids["deep"], (0, 0))
        self.assertGreaterEqual(unstopped, 2, stderr)
        self.assertEqual(stopped, 0, stderr)
        # Whole: native frames (map's) between every two calls of deep, the outermost too.
        whole = 0
        for frames in self.assert_blocked_in(out, tids["deep"], READ, "deep", lines["deep"]):
            levels = [i for i, f in enumerate(frames) if f[0] == "deep" and not is_native(f)]
            if all(any(is_native(f) for f in frames[a + 1:b])
                   for a, b in zip(levels, levels[1:])):
                whole += 1
        self.assertGreater(whole, 0, read_text(out))

    def test_dump_native_100_times_while_threads_churn(self):
        # py-spy's expectation for its thread_reuse.py: at most 3 of 100 dumps may fail on a
        # target whose threads come and go thousands of times a second; none may hang, every
        # one that answers shows the long-lived worker, and the target is never left stopped.
        failures = []
        with harness.Target(self.python, "thread_churn.py") as target:
            for _ in range(100):
                dump = harness.spyglass("dump", "--pid", target.pid, "--native")
                if dump.returncode != 0:
                    failures.append(dump.stderr.strip())
                    continue
                self.assertIn("compute", dump.stdout)
            self.assertIsNone(target.process.poll(), "the target died")
            states = harness.task_states(target.pid)
            self.assertNotIn("t", states.values(), states)
            self.assertNotIn("T", states.values(), states)
        self.assertLessEqual(len(failures), 3, failures)


harness.interpreter_tests(NativeCaptureTests, globals(),
                         labels=["2.7", "3.11", "3.13", "debian-3.11"])

if __name__ == "__main__":
    unittest.main()
