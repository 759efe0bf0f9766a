"""spyglass record against every installed interpreter: the expected stacks in the right
proportions, on/off-CPU tags, launch mode and its exit status, --subprocesses, Ctrl-C and a
target that exits both leaving a complete file, every format read back by a real consumer."""
import json
import os
import re
import signal
import subprocess
import sys
import unittest
import xml.etree.ElementTree as ElementTree

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

RATE = 200
OFF_CPU = "[off-cpu]"


def off_cpu_leaf(frames):
    """The sample's leaf says it was off-CPU: [off-cpu], or what it waited for ([wait ...]:
    docs/waits.md). Not [cpu-starved]: that is a runnable thread (state R) that waited for a
    CPU, an on-CPU sample, which a busy thread on a loaded machine often is."""
    return frames[-1] == OFF_CPU or frames[-1].startswith("[wait ")


def parse_folded(path):
    """[(frames root-first, count)]"""
    stacks = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line:
                continue
            frames, count = line.rsplit(" ", 1)
            stacks.append((frames.split(";"), int(count)))
    return stacks


def function_of(label):
    return label.split(" (", 1)[0]


def share(stacks, predicate):
    total = sum(c for _, c in stacks)
    return sum(c for frames, c in stacks if predicate(frames)) / float(total) if total else 0.0


class RecordCase(harness.InterpreterCase):
    def record(self, pid, output, *extra, **kwargs):
        result = harness.spyglass("record", "--pid", pid, "--rate", RATE, "-o", output, *extra,
                                  **kwargs)
        self.assertEqual(result.returncode, 0, result.stderr)
        return result

    def output(self, name):
        directory = os.path.join(os.environ.get("TMPDIR", "/tmp"), "spyglass-tests", self.label)
        os.makedirs(directory, exist_ok=True)
        path = os.path.join(directory, name)
        if os.path.exists(path):
            os.unlink(path)
        return path


class RecordTests(RecordCase):
    def test_known_workload_proportions_and_cpu_tags(self):
        out = self.output("proportions.txt")
        with harness.Target(self.python, "record_target.py") as target:
            self.record(target.pid, out, "--duration", 2, "--threads")
        stacks = parse_folded(out)
        busy = [(f, c) for f, c in stacks if "busy" in f[0]]
        sleeper = [(f, c) for f, c in stacks if "sleeper" in f[0]]
        self.assertTrue(busy and sleeper, stacks[:5])
        fast = share(busy, lambda f: any(function_of(x) == "fast_part" for x in f))
        slow = share(busy, lambda f: any(function_of(x) == "slow_part" for x in f))
        # The busy thread spends 1/4 in fast_part and 3/4 in slow_part (loose bounds).
        self.assertAlmostEqual(fast, 0.25, delta=0.10)
        self.assertAlmostEqual(slow, 0.75, delta=0.10)
        # The busy thread runs; the sleeper waits, with its Python frames intact.
        self.assertLess(share(busy, off_cpu_leaf), 0.10)
        self.assertGreater(share(sleeper, off_cpu_leaf), 0.95)
        self.assertTrue(any(function_of(x) == "sleeping_function"
                            for f, _ in sleeper for x in f))

    def test_cpu_mode_keeps_only_running_samples(self):
        out = self.output("cpu.txt")
        with harness.Target(self.python, "record_target.py") as target:
            self.record(target.pid, out, "--duration", 1, "--mode", "cpu")
        stacks = parse_folded(out)
        self.assertTrue(stacks)
        self.assertFalse([f for f, _ in stacks if off_cpu_leaf(f)])
        self.assertFalse([f for f, _ in stacks
                          if any(function_of(x) == "sleeping_function" for x in f)])

    def test_gil_keeps_only_the_holder(self):
        out = self.output("gil.txt")
        with harness.Target(self.python, "record_target.py") as target:
            self.record(target.pid, out, "--duration", 1, "--gil", "--threads")
        stacks = parse_folded(out)
        self.assertTrue(stacks)
        # Only the busy thread runs Python; the sleeper never holds the GIL while it sleeps.
        self.assertGreater(share(stacks, lambda f: "busy" in f[0]), 0.95)

    def test_function_and_nolineno_labels(self):
        out = self.output("function.txt")
        with harness.Target(self.python, "record_target.py") as target:
            self.record(target.pid, out, "--duration", 1, "--function")
            first_lines = set()
            for frames, _ in parse_folded(out):
                first_lines.update(x for x in frames if function_of(x) == "slow_part")
            # --function: every sample of slow_part has the function's first line.
            self.assertEqual(len(first_lines), 1, first_lines)
            self.record(target.pid, out, "--duration", 1, "--nolineno")
            labels = {x for frames, _ in parse_folded(out) for x in frames}
            self.assertIn("slow_part (record_target.py)", {x.replace(
                os.path.join(harness.WORKLOADS, ""), "") for x in labels})

    def test_target_exit_leaves_a_complete_file(self):
        out = self.output("exit.txt")
        with harness.Target(self.python, "record_target.py", 1.0) as target:
            result = self.record(target.pid, out, "--duration", 60, timeout=60)
        self.assertIn("target exited", result.stderr)
        stacks = parse_folded(out)
        self.assertTrue(any(function_of(x) == "slow_part" for f, _ in stacks for x in f))

    def test_ctrl_c_leaves_a_complete_file(self):
        out = self.output("interrupt.svg")
        with harness.Target(self.python, "record_target.py") as target:
            recorder = subprocess.Popen(
                [harness.SPYGLASS, "record", "--pid", str(target.pid), "-o", out],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, encoding="utf-8")
            # Interrupt once samples are being written: the summary of a recording needs some.
            try:
                recorder.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                pass
            recorder.send_signal(signal.SIGINT)
            _, stderr = recorder.communicate(timeout=60)
        self.assertEqual(recorder.returncode, 0, stderr)
        root = ElementTree.parse(out).getroot()
        self.assertTrue(root.tag.endswith("svg"))
        text = ElementTree.tostring(root, encoding="unicode")
        self.assertIn("slow_part", text)

    def test_launch_mode_propagates_the_exit_status(self):
        out = self.output("launch.txt")
        code = ("import sys, time\n"
                "def launched_work(until):\n"
                "    while time.time() < until: pass\n"
                "launched_work(time.time() + 1.0)\n"
                "sys.exit(3)\n")
        result = harness.spyglass("record", "--rate", RATE, "-o", out, "--", self.python, "-c",
                                  code)
        self.assertEqual(result.returncode, 3, result.stderr)
        stacks = parse_folded(out)
        self.assertTrue(any(function_of(x) == "launched_work" for f, _ in stacks for x in f),
                        stacks[:5])

    def test_subprocesses_are_followed(self):
        # The command is a shell that starts a `sleep` (a child that is not Python, which -v
        # names as skipped) and execs the Python parent.
        out = self.output("children.txt")
        result = harness.spyglass("-v", "record", "--rate", RATE, "--subprocesses", "-o", out,
                                  "--", "sh", "-c", 'sleep 1 & exec "$0" "$@"', self.python,
                                  os.path.join(harness.WORKLOADS, "subprocess_parent.py"),
                                  "-1", "1.5")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertRegex(result.stderr, r"process \d+ \(sleep\) is not Python: not sampled, its "
                         r"children are followed")
        stacks = parse_folded(out)
        roots = {f[0] for f, _ in stacks}
        self.assertGreaterEqual(len(roots), 2, roots)  # a root frame per process
        self.assertTrue(any(function_of(x) == "child_work" for f, _ in stacks for x in f))
        self.assertTrue(any(function_of(x) == "parent_wait" for f, _ in stacks for x in f))

    def test_blocking_mode_never_leaves_the_target_stopped(self):
        out = self.output("blocking.txt")
        with harness.Target(self.python, "record_target.py") as target:
            recorder = subprocess.Popen(
                [harness.SPYGLASS, "record", "--pid", str(target.pid), "--blocking", "--rate",
                 "500", "-o", out], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            try:
                recorder.wait(timeout=1.0)
            except subprocess.TimeoutExpired:
                pass
            recorder.kill()  # SIGKILL: no chance to clean up; the kernel must detach
            recorder.communicate(timeout=60)
            states = harness.task_states(target.pid)
            self.assertFalse([s for s in states.values() if s in "tT"], states)
            # And it keeps running: the busy thread is still on the CPU.
            busy = [tid for tid, s in states.items() if s == "R"]
            self.assertTrue(busy, states)


def go_pprof_raw(test, path):
    try:
        result = subprocess.run(["go", "tool", "pprof", "-raw", path], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, encoding="utf-8", timeout=300,
                                env=dict(os.environ, HOME=os.environ.get("HOME", "/tmp")))
    except OSError as error:
        test.fail("go tool pprof is needed (package golang-go, installed by scripts/setup): %s"
                  % error)
    test.assertEqual(result.returncode, 0, result.stderr)
    return result.stdout


harness.interpreter_tests(RecordTests, globals())


class RecordFormatTests(RecordCase):
    """What the pprof and speedscope writers make of a recording does not depend on the
    interpreter it came from: read back by their consumers on the oldest and the newest."""

    def test_pprof_read_by_go_tool_pprof(self):
        out = self.output("profile.pb.gz")
        with harness.Target(self.python, "record_target.py") as target:
            self.record(target.pid, out, "--duration", 1)
        raw = go_pprof_raw(self, out)
        self.assertRegex(raw, r"samples/count wall/nanoseconds\[dflt\] cpu/nanoseconds")
        self.assertIn("slow_part", raw)
        self.assertRegex(raw, r"state:\[off-cpu\]")
        self.assertRegex(raw, r"state:\[on-cpu\]")
        self.assertRegex(raw, r"thread:\[busy\]")

    def test_speedscope_structure(self):
        out = self.output("profile.json")
        with harness.Target(self.python, "record_target.py") as target:
            self.record(target.pid, out, "--duration", 1)
        with open(out, encoding="utf-8") as f:
            document = json.load(f)
        frames = document["shared"]["frames"]
        self.assertTrue(any(fr["name"].startswith("slow_part (") for fr in frames), frames[:5])
        names = [p["name"] for p in document["profiles"]]
        self.assertTrue(any("busy" in n for n in names) and any("sleeper" in n for n in names))
        for profile in document["profiles"]:
            self.assertEqual(profile["type"], "sampled")
            self.assertEqual(len(profile["samples"]), len(profile["weights"]))
            for sample in profile["samples"]:
                self.assertTrue(all(0 <= i < len(frames) for i in sample))


harness.interpreter_tests(RecordFormatTests, globals(), labels=["2.7", "3.13"])


class RecordErrors(unittest.TestCase):
    def test_unwritable_output_is_found_before_attaching(self):
        sleeper = subprocess.Popen(["sleep", "300"])
        try:
            result = harness.spyglass("record", "--pid", sleeper.pid, "-o",
                                      "/nonexistent-dir/profile.svg", timeout=30)
            self.assertEqual(result.returncode, 1)
            self.assertIn("cannot write the output to /nonexistent-dir/profile.svg",
                          result.stderr)
            self.assertNotIn("not a Python process", result.stderr)
        finally:
            sleeper.kill()
            sleeper.wait()

    def test_pid_and_command_together_is_a_usage_error(self):
        result = harness.spyglass("record", "--pid", 1, "-o", "/tmp/x.svg", "--", "true",
                                  timeout=30)
        self.assertEqual(result.returncode, 2)
        self.assertIn("either --pid", result.stderr)

    def test_command_that_cannot_run(self):
        result = harness.spyglass("record", "-o", "/tmp/spyglass-never.svg", "--",
                                  "/nonexistent/python", timeout=30)
        self.assertEqual(result.returncode, 1)
        self.assertIn("cannot run /nonexistent/python", result.stderr)
        self.assertFalse(os.path.exists("/tmp/spyglass-never.svg"))


if __name__ == "__main__":
    unittest.main()
