"""Signals sent to a target while spyglass holds its threads seized: each reaches the program at
once. A seized thread that gets a signal stops until its tracer passes the signal on; one that
was signalled while spyglass was busy with a pass (not asleep, where SIGCHLD wakes it) used to
stay stopped, its signal undelivered, for the rest of the recording."""
import os
import re
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faults  # noqa: E402
from faults import harness  # noqa: E402

SIGNALS = 20


def traced_tids(pid):
    """The target's threads that a tracer holds (TracerPid in their status)."""
    tids = []
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
                if re.search(r"^TracerPid:\s*[1-9]", f.read(), re.M):
                    tids.append(int(tid))
        except OSError:
            pass
    return tids


class Signals(harness.InterpreterCase):
    def test_signals_reach_a_seized_target(self):
        with faults.Workdir() as work, harness.Target(self.python, "signalled.py") as target:
            out = work.file("signals.txt")
            # --blocking at 1 kHz: both spinning threads are seized and paused all the time, so
            # signals come both while spyglass sleeps and while it is in a pass.
            recorder = faults.start_record("--pid", target.pid, "-o", out, "--blocking", "-r",
                                           1000, "-d", 30)
            try:
                deadline = time.monotonic() + 30
                while len(traced_tids(target.pid)) < 2:
                    self.assertIsNone(recorder.poll(), "spyglass exited before seizing")
                    self.assertLess(time.monotonic(), deadline, "spyglass never seized the target")
                    time.sleep(0.01)
                for n in range(1, SIGNALS + 1):
                    os.kill(target.pid, signal.SIGUSR1)
                    # The handler answers within a second, or its thread is held stopped.
                    line = target.read_line(timeout=5)
                    self.assertEqual(line.strip(), "handled %d" % n,
                                     "signal %d: %s" % (n, harness.task_states(target.pid)))
            finally:
                recorder.send_signal(signal.SIGINT)
                code, _, stderr = faults.finish(recorder)
            self.assertEqual(code, 0, stderr)
            self.assertEqual(faults.stopped_threads(target.pid), {})
            lines = faults.check_folded(self, out)
            self.assertFalse([line for line in lines if "[wait stopped]" in line], lines[:5])


harness.interpreter_tests(Signals, globals(), labels=["2.7", "3.10", "3.12"])

if __name__ == "__main__":
    unittest.main()
