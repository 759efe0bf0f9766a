"""Scale: a thousand threads (idle ones cost no read when the kernel's scheduler events are
available, and their stacks are right either way), a 5,000-deep stack (cut at the documented
limit, marked, not an error, and read once while its thread sleeps), short-lived children under
--subprocesses (seen as they fork, not at the next scan), and a root that is not Python."""
import os
import re
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from test_record import function_of, parse_folded  # noqa: E402

SUMMARY = re.compile(r"([\d,]+) sampling errors?")
COUNTS = re.compile(r"([\d]+) thread samples: (\d+) with the stack of the thread's previous "
                    r"sample, (\d+) of threads the scheduler's events showed idle")
SEIZED = re.compile(r"(\d+) threads seized, (\d+) asleep in the kernel read without a stop")
SCHED = "which threads ran comes from the kernel's scheduler events"


def number(text):
    return int(text.replace(",", ""))


class Scale(harness.InterpreterCase):
    def output(self, name):
        return os.path.join(tempfile.gettempdir(), "spyglass-scale-%s-%s" % (self.label, name))

    def test_a_thousand_threads(self):
        out = self.output("threads.txt")
        with harness.Target(self.python, "many_threads.py", 1000, 1) as target:
            for env in ({}, {"SPYGLASS_NO_SCHED_EVENTS": "1"}):
                result = harness.spyglass("-v", "record", "--pid", target.pid, "-r", 100, "-d", 1,
                                          "-o", out, env=dict(os.environ, **env))
                self.assertEqual(result.returncode, 0, result.stderr)
                stacks = parse_folded(out)
                waiting = [f for f, _ in stacks if any(function_of(x) == "wait_here" for x in f)]
                spinning = [f for f, _ in stacks if any(function_of(x) == "spin_here" for x in f)]
                self.assertEqual(len(waiting), 1, [f for f, _ in stacks][:3])  # one stack
                self.assertTrue(spinning)
                waited = sum(c for f, c in stacks if f in waiting)
                # 998 waiting threads, about 100 periods each. Reading every thread's schedstat
                # (the fallback: env set, or no scheduler events here) reaches about 71% of the rate on a quiet 2-core VM
                # (docs/performance.md) and 56% in CI with another test beside it: its bound
                # only says the path works; the scheduler-event path must keep the rate.
                events = not env and SCHED in result.stderr
                self.assertGreater(waited, 998 * (80 if events else 40), result.stderr)
                sys.stderr.write("NOTE %s: %s: %d of ~%d waiting-thread samples\n" % (
                    self.id(), "scheduler events" if events else "schedstat of every thread",
                    waited, 998 * 100))
                counts = COUNTS.search(result.stderr)
                self.assertTrue(counts, result.stderr)
                samples, reused, unread = (int(g) for g in counts.groups())
                self.assertGreater(reused, 0.9 * samples)
                if env:
                    self.assertEqual(unread, 0)
                elif SCHED in result.stderr:
                    self.assertGreater(unread, 0.9 * samples, result.stderr)
                else:
                    sys.stderr.write("NOTE %s: scheduler events not available here\n" % self.id())
            # --blocking stops only the threads that run: a waiting thread is read asleep and
            # checked not to have run meanwhile (stopping it would wake it from its call, and
            # it would be read, and stopped, again at every pass: 1,000 threads seized).
            result = harness.spyglass("-v", "record", "--pid", target.pid, "-r", 100, "-d", 1,
                                      "--blocking", "-o", out)
            self.assertEqual(result.returncode, 0, result.stderr)
            seized = SEIZED.search(result.stderr)
            self.assertTrue(seized, result.stderr)
            self.assertLessEqual(int(seized.group(1)), 3, result.stderr)
            self.assertGreaterEqual(int(seized.group(2)), 998, result.stderr)
            waiting = [f for f, _ in parse_folded(out)
                       if any(function_of(x) == "wait_here" for x in f)]
            self.assertEqual(len(waiting), 1, waiting[:2])

    def test_a_stack_deeper_than_the_limit(self):
        out = self.output("deep.txt")
        with harness.Target(self.python, "deep_sleeper.py", 5000) as target:
            result = harness.spyglass("-v", "record", "--pid", target.pid, "-r", 200, "-d", 1,
                                      "-o", out)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(number(SUMMARY.search(result.stderr).group(1)), 0, result.stderr)
        stacks = parse_folded(out)
        deep = [f for f, _ in stacks if any(function_of(x) == "level" for x in f)]
        self.assertTrue(deep)
        for frames in deep:
            self.assertTrue(frames[0].startswith("<deeper"), frames[:2])  # root first
            self.assertEqual(sum(1 for x in frames if function_of(x) == "level"), 4096,
                             frames[-3:])
        samples, reused, _ = (int(g) for g in COUNTS.search(result.stderr).groups())
        self.assertGreater(reused, 0.8 * samples, result.stderr)

    def test_short_lived_children_are_seen(self):
        out = self.output("children.txt")
        with harness.Target(self.python, "short_children.py", 20, 0.4) as target:
            result = harness.spyglass("-v", "record", "--pid", target.pid, "--subprocesses",
                                      "-r", 100, "-o", out, timeout=120)
        self.assertEqual(result.returncode, 0, result.stderr)
        children = {f[0] for f, _ in parse_folded(out)
                    if any(function_of(x) == "child_work" for x in f)}
        if SCHED in result.stderr:
            self.assertGreaterEqual(len(children), 18, result.stderr)
        else:
            self.assertGreaterEqual(len(children), 1, result.stderr)

    def test_a_root_that_is_not_python(self):
        # py-spy's delayed_launch.sh: --subprocesses attached to a shell that starts Python
        # once it is told to.
        out = self.output("delayed.txt")
        read_fd, write_fd = os.pipe()
        go_read, go_write = os.pipe()
        script = "read line <&%d; %s %s %d 1" % (
            go_read, self.python, os.path.join(harness.WORKLOADS, "record_target.py"), write_fd)
        shell = subprocess.Popen(["bash", "-c", script], pass_fds=(write_fd, go_read))
        os.close(write_fd)
        os.close(go_read)
        try:
            recorder = subprocess.Popen(
                [harness.SPYGLASS, "-v", "record", "--pid", str(shell.pid), "--subprocesses",
                 "-r", "100", "-o", out], stderr=subprocess.PIPE, encoding="utf-8")
            from test_weights import wait_for_thread
            wait_for_thread(recorder.pid, "spyglass-res")  # attached to the shell
            os.write(go_write, b"go\n")
            harness.read_line(read_fd, 60, shell)
            _, stderr = recorder.communicate(timeout=120)
        finally:
            os.close(go_write)
            os.close(read_fd)
            shell.wait(timeout=60)
        self.assertEqual(recorder.returncode, 0, stderr)
        self.assertIn("is not Python: sampling the Python processes it starts", stderr)
        functions = {function_of(x) for f, _ in parse_folded(out) for x in f}
        self.assertIn("slow_part", functions)


harness.interpreter_tests(Scale, globals())

if __name__ == "__main__":
    unittest.main()
