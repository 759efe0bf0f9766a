"""Every sample weighs the time it stands for: when ticks come late (a busy machine, or here a
sampler that is stopped outright for a second), the next sample of each thread covers the time
it missed, so a thread that ran all along still gets all its time, in every format. The weight
is the sampler's, the same whatever the interpreter: checked on the oldest layout, the one the
issue measured (3.8) and a _PyInterpreterFrame one (3.12)."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
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
        with harness.Target(self.python, "busy_threads.py") as target:
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

if __name__ == "__main__":
    unittest.main()
