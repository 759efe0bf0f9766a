"""--native when the target's modules change, and where its Python runs are placed, on every
installed interpreter:

* libraries loaded with ctypes after spyglass attached (workloads/late_library_target.py), one
  and then another, sit in the middle of the stack between Python frames and are named there
  (that a frame cached by address is forgotten when the modules change is
  tests/unit/test_native_resolve.cpp's: unloading races with the resolver, which names frames
  after the target ran on);
* on 3.11+ the Python runs are placed in the native stack by stack address (each run's C-stack
  entry frame or _PyCFrame lies in its eval call's frame), up to 3.10 by count.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

FRAME = re.compile(r"^(.*) \((.*?)(?::(\d+))?\)$")
NATIVE_LINE = re.compile(
    r"native stacks: (?P<stacks>\d+) unwound \((?P<failed>\d+) could not be\), "
    r"(?P<merged>\d+) merged with their Python frames, (?P<cut>\d+) cut where the copy of the "
    r"stack ended \((?P<by_address>\d+) of these placed by stack address, the others by count\), "
    r"(?P<mismatch>\d+) left as Python frames alone .*modules reported again (?P<reports>\d+) "
    r"times")
MISMATCH = "<native frames not merged>"


def thread_stacks(path, tid):
    """[(names, count)] of one thread in a folded file recorded with --threads, outermost
    first, the thread's root frame dropped."""
    stacks = []
    prefix = "thread %d " % tid
    with open(path, encoding="utf-8") as f:
        for line in f:
            stack, count = line.rstrip("\n").rsplit(" ", 1)
            if stack.startswith(prefix):
                names = []
                for part in stack.split(";")[1:]:
                    match = FRAME.match(part)
                    names.append(match.group(1) if match else part)
                stacks.append((names, int(count)))
    return stacks


def in_order(names, *wanted):
    """Whether every name of `wanted` is in `names`, in that order."""
    at = -1
    for name in wanted:
        if name not in names[at + 1:]:
            return False
        at = names.index(name, at + 1)
    return True


def native_counts(stderr):
    match = NATIVE_LINE.search(stderr)
    if match is None:
        raise AssertionError("no native stacks line in\n" + stderr)
    return dict((key, int(value)) for key, value in match.groupdict().items())


def build_late_libraries(directory):
    """libspyglass_late_{a,b}.so in directory; None when built, else why not."""
    source = os.path.join(harness.WORKLOADS, "late_library", "spyglass_late.c")
    for name in ("a", "b"):
        built = subprocess.run(
            ["gcc", "-shared", "-fPIC", "-O1", "-DLOOP_NAME=spyglass_late_%s_loop" % name,
             source, "-o", os.path.join(directory, "libspyglass_late_%s.so" % name)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, encoding="utf-8",
            timeout=harness.TIMEOUT)
        if built.returncode != 0:
            return "gcc failed: " + built.stdout
    return None


class NativeModulesBase(harness.InterpreterCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="spyglass-native-modules-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def record(self, target, seconds):
        out = os.path.join(self.tmp, "native.txt")
        result = harness.spyglass("-v", "record", "--pid", target.pid, "-r", "200", "-d",
                                  seconds, "--threads", "--native", "-o", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        return out, result.stderr

    def test_a_library_loaded_after_attach(self):
        why_not = build_late_libraries(self.tmp)
        if why_not:
            self.skipTest(why_not)
        out = os.path.join(self.tmp, "late.txt")
        with harness.Target(self.python, "late_library_target.py", self.tmp) as target:
            spyglass = subprocess.Popen(
                [harness.SPYGLASS, "-v", "record", "--pid", str(target.pid), "-r", "200", "-d",
                 "4", "--threads", "--native", "-o", out], stderr=subprocess.PIPE)
            try:
                # Library a is loaded once the unwinder has reported the modules the target
                # had (its -v line), b 1.5 s later.
                seen = ""
                while "native unwinder ready" not in seen:
                    seen += harness.read_line(spyglass.stderr.fileno(), harness.TIMEOUT,
                                              spyglass)
                with open(os.path.join(self.tmp, "go"), "w"):
                    pass
                rest = spyglass.communicate(timeout=harness.TIMEOUT)[1].decode("utf-8")
            finally:
                if spyglass.poll() is None:
                    spyglass.kill()
                    spyglass.wait()
            stderr = seen + rest
            self.assertEqual(spyglass.returncode, 0, stderr)
            addresses = target.read_line()
            main = thread_stacks(out, target.report["main"])
        self.assertTrue(main, "no samples of the main thread")
        counts = native_counts(stderr)

        def total(predicate):
            return sum(count for names, count in main if predicate(names))

        in_a = total(lambda n: "callback_a" in n)
        a_placed = total(lambda n: in_order(n, "phase_a", "spyglass_late_a_loop", "callback_a"))
        in_b = total(lambda n: "callback_b" in n)
        b_placed = total(lambda n: in_order(n, "phase_b", "spyglass_late_b_loop", "callback_b"))
        marked = total(lambda n: MISMATCH in n)
        summary = ("%d samples in callback_a (%d with library a in place), %d in callback_b (%d "
                   "with b in place), %d marked not merged; loops at %s; %s"
                   % (in_a, a_placed, in_b, b_placed, marked, addresses.strip(), counts))
        summary += "; stacks with a callback but not their library in place: %s" % [
            ";".join(names) for names, _ in main
            if ("callback_a" in names and "spyglass_late_a_loop" not in names)
            or ("callback_b" in names and "spyglass_late_b_loop" not in names)][:3]
        sys.stderr.write("\n%s: %s\n" % (type(self).__name__, summary))
        # Each library, loaded after the unwinder reported the modules, is found the first
        # time an unwind meets it (the old rule, "a leaf pc in no module, once a second",
        # never looked: the leaf is in the interpreter, running the callback).
        self.assertGreater(in_a, 0, summary)
        self.assertGreaterEqual(a_placed, in_a * 0.9, summary)
        self.assertGreater(in_b, 0, summary)
        self.assertGreaterEqual(b_placed, in_b * 0.9, summary)
        # (Once for each, or once for both when the resolver got to a's samples late.)
        self.assertGreaterEqual(counts["reports"], 1, summary)
        self.assertLess(marked, (in_a + in_b) * 0.1, summary)

    def test_runs_placed_by_stack_address(self):
        with harness.Target(self.python, "native_target.py") as target:
            _, stderr = self.record(target, 2)
        counts = native_counts(stderr)
        placed = counts["merged"] + counts["cut"]
        sys.stderr.write("\n%s: %s\n" % (type(self).__name__, counts))
        self.assertGreater(placed, 0, counts)
        if self.version() >= (3, 11):
            # Every stack placed by address but those whose anchors were not all known.
            self.assertGreaterEqual(counts["by_address"], placed * 0.95, counts)
        else:
            self.assertEqual(counts["by_address"], 0, counts)


harness.interpreter_tests(NativeModulesBase, globals())

if __name__ == "__main__":
    unittest.main()
