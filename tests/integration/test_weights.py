"""Every sample weighs the time it stands for: when ticks come late (a busy machine, or here a
sampler that is stopped outright for a second), the next sample of each thread covers the time
it missed, so a thread that ran all along still gets all its time, in every format. The weight
is the sampler's, the same whatever the interpreter: checked on the oldest layout, the one the
issue measured (3.8) and a _PyInterpreterFrame one (3.12)."""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import pprof_decode  # noqa: E402
from test_record import function_of, parse_folded  # noqa: E402

RATE = 100
SECONDS = 2.0
STALL = 1.0


def wait_for_thread(pid, name, timeout=30):
    """Polls /proc until `pid` has a thread called `name` (the session's resolver thread exists
    once sampling has started)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for tid in os.listdir("/proc/%d/task" % pid):
            try:
                with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                    if f.read().strip() == name:
                        return
            except OSError:
                pass
        time.sleep(0.01)
    raise AssertionError("spyglass never started sampling")


class Weights(harness.InterpreterCase):
    def stalled_recording(self, output, *extra):
        # Only the spinner runs: a thread that wakes now and then would take the GIL from it, and
        # a pass that found it waiting for the GIL would (in CPU mode) drop the whole stall.
        with harness.Target(self.python, "lone_spinner.py") as target:
            recorder = subprocess.Popen(
                [harness.SPYGLASS, "record", "--pid", str(target.pid), "--rate", str(RATE),
                 "--duration", str(SECONDS), "-o", output] + list(extra),
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, encoding="utf-8")
            try:
                wait_for_thread(recorder.pid, "spyglass-res")
                recorder.send_signal(signal.SIGSTOP)  # the sampler misses STALL seconds
                time.sleep(STALL)
                recorder.send_signal(signal.SIGCONT)
                _, stderr = recorder.communicate(timeout=60)
            finally:
                if recorder.poll() is None:
                    recorder.kill()
                    recorder.wait()
        self.assertEqual(recorder.returncode, 0, stderr)
        return stderr

    def spinner_periods(self, output):
        return sum(c for frames, c in parse_folded(output)
                   if any(function_of(f) == "spin_here" for f in frames))

    def test_late_ticks_keep_a_busy_threads_time(self):
        output = os.path.join(tempfile.gettempdir(), "spyglass-weights-%s.txt" % self.label)
        for mode in ("wall", "cpu"):
            stderr = self.stalled_recording(output, "--mode", mode)
            self.assertRegex(stderr, r"[1-9][\d,]* late ticks?")
            # The spinner ran for the whole recording: SECONDS * RATE periods, not fewer by the
            # STALL * RATE ticks that were missed.
            self.assertAlmostEqual(self.spinner_periods(output), SECONDS * RATE,
                                   delta=0.1 * SECONDS * RATE, msg=(mode, stderr))

    def test_speedscope_weights_follow_time(self):
        output = os.path.join(tempfile.gettempdir(), "spyglass-weights-%s.json" % self.label)
        self.stalled_recording(output)
        with open(output, encoding="utf-8") as f:
            document = json.load(f)
        spinner = [p for p in document["profiles"] if "spinner" in p["name"]]
        self.assertEqual(len(spinner), 1, [p["name"] for p in document["profiles"]])
        self.assertAlmostEqual(sum(spinner[0]["weights"]), SECONDS, delta=0.1 * SECONDS)


harness.interpreter_tests(Weights, globals(), labels=["2.7", "3.8", "3.12"])


def thread_run_ns(pid):
    """The kernel's CPU time of the main thread (schedstat's first field), and when it was read."""
    with open("/proc/%d/task/%d/schedstat" % (pid, pid)) as f:
        return int(f.read().split()[0]), time.monotonic()


class CpuTime(harness.InterpreterCase):
    """A thread that never leaves its CPU is mostly not read at all (the scheduler's events say
    it ran on; its CPU time is the interval): its CPU share in the profile must still be the
    kernel's, over the same stretch."""

    def test_cpu_time_of_an_always_running_thread_is_the_kernels(self):
        output = os.path.join(tempfile.gettempdir(), "spyglass-cputime-%s.pb.gz" % self.label)
        with harness.Target(self.python, "deep_stack.py") as target:
            run0, at0 = thread_run_ns(target.pid)
            result = harness.spyglass("-v", "record", "--pid", target.pid, "--rate", 1000,
                                      "--duration", 2, "-f", "pprof", "-o", output)
            run1, at1 = thread_run_ns(target.pid)
        self.assertEqual(result.returncode, 0, result.stderr)
        profile = pprof_decode.decode_file(output)
        cpu = sum(pprof_decode.totals(profile, "cpu").values())
        wall = sum(pprof_decode.totals(profile, "wall").values())
        self.assertGreater(wall, 1.5e9, result.stderr)
        kernel_share = (run1 - run0) / ((at1 - at0) * 1e9)
        # The kernel's window holds spyglass's start and end too; the thread's share is steady.
        self.assertAlmostEqual(cpu / wall, kernel_share, delta=0.15,
                               msg="profile %.3f, kernel %.3f\n%s" % (cpu / wall, kernel_share,
                                                                    result.stderr))
        if "scheduler's events" in result.stderr:
            running = re.search(r"([\d,]+) of threads they showed on one CPU since", result.stderr)
            self.assertIsNotNone(running, result.stderr)
            self.assertGreater(int(running.group(1).replace(",", "")), 0, result.stderr)


harness.interpreter_tests(CpuTime, globals(), labels=["3.13", "debian-sid-3.15"])

HOGS = 3


class Contention(harness.InterpreterCase):
    """A thread that waits for a CPU most of an interval may still hold one when the scheduler's
    events are polled, then run on and fall asleep elsewhere: it must be walked again, not
    shown asleep in the function it last burned in. ground_truth.py's burn() never sleeps, so
    a sample of burn() waiting in clock_nanosleep is a stale stack (before the fix, up to a
    quarter of all samples beside CPU hogs)."""

    def test_a_thread_starved_then_asleep_is_not_shown_where_it_burned(self):
        output = os.path.join(tempfile.gettempdir(), "spyglass-contention-%s.txt" % self.label)
        hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                for _ in range(HOGS)]
        try:
            with harness.Target(self.python, "ground_truth.py", 0.1, 0.3) as target:
                result = harness.spyglass("record", "--pid", target.pid, "--rate", 1000,
                                          "--duration", 4, "--mode", "wall", "-o", output)
        finally:
            for hog in hogs:
                hog.kill()
                hog.wait()
        self.assertEqual(result.returncode, 0, result.stderr)
        stacks = parse_folded(output)
        total = sum(c for _, c in stacks)
        stale = sum(c for frames, c in stacks
                    if any(function_of(f) == "burn" for f in frames) and
                    frames[-1] == "[wait clock_nanosleep]")
        burning = sum(c for frames, c in stacks if any(function_of(f) == "burn" for f in frames))
        self.assertGreater(burning, 0.1 * total, stacks)
        # A sample taken as the thread falls asleep may pair the two: a handful, not hundreds.
        self.assertLess(stale, 0.01 * total, stacks)


harness.interpreter_tests(Contention, globals(), labels=["3.12", "debian-sid-3.15"])

if __name__ == "__main__":
    unittest.main()
