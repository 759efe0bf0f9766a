"""Targets in awkward states: threads born and dying thousands of times a second (every
version, with --blocking and with spyglass killed mid-recording), a process stopped with
SIGSTOP (sampled as it is, left stopped), a zombie (a clear error)."""
import os
import signal
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faults  # noqa: E402
from faults import harness  # noqa: E402


class ThreadChurn(harness.InterpreterCase):
    def test_churn_with_blocking_and_a_killed_recorder(self):
        rng, seed = faults.seeded_random(self.id())
        with faults.Workdir() as work, harness.Target(self.python, "thread_churn.py") as target:
            out = work.file("churn.txt")
            # Every thread paused for each read, while threads come and go.
            result = harness.spyglass("record", "--pid", target.pid, "-o", out, "--blocking",
                                      "-r", 1000, "-d", 1)
            self.assertEqual(result.returncode, 0, result.stderr)
            lines = faults.check_folded(self, out)
            self.assertTrue(any("compute" in line for line in lines), lines[:5])
            self.assertEqual(faults.stopped_threads(target.pid), {})
            # spyglass SIGKILLed at a random moment of a --blocking recording of the churn.
            moment = rng.uniform(0.1, 0.8)
            recorder = faults.start_record("--pid", target.pid, "-o", out, "--blocking", "-r",
                                           1000)
            time.sleep(moment)
            recorder.kill()
            faults.finish(recorder)
            self.assertEqual(faults.stopped_threads(target.pid), {},
                             "SIGKILL at %.2f s (seed %d)" % (moment, seed))
            self.assertIsNone(target.process.poll(), "the target died")
            faults.check_folded(self, out)  # the first recording's file, untouched
            left = faults.temporaries(work.path)
            self.assertEqual(len(left), 1, left)
            self.assertRegex(left[0], r"^\.churn\.txt\.spyglass-%d-[a-z0-9]{12}\.tmp$"
                             % recorder.pid)


harness.interpreter_tests(ThreadChurn, globals())


class Stopped(unittest.TestCase):
    def test_stopped_target_is_sampled_and_left_stopped(self):
        python = faults.any_python()
        with faults.Workdir() as work, harness.Target(python, "record_target.py") as target:
            target.process.send_signal(signal.SIGSTOP)
            faults.wait_for_state(target.pid, "T")
            try:
                for extra in ([], ["--blocking"]):
                    out = work.file("stopped.txt")
                    result = harness.spyglass("record", "--pid", target.pid, "-o", out, "-d", 1,
                                              *extra, timeout=30)
                    self.assertEqual(result.returncode, 0, result.stderr)
                    self.assertIn("process %d is stopped (state T)" % target.pid, result.stderr)
                    lines = faults.check_folded(self, out)
                    # Every sample waiting: nothing runs in a stopped process ([off-cpu], or
                    # what it waits for: [wait stopped] for a thread the stop caught running).
                    leaves = [line.rsplit(" ", 1)[0].rsplit(";", 1)[-1] for line in lines]
                    self.assertTrue(all(leaf == "[off-cpu]" or leaf.startswith("[wait ")
                                        for leaf in leaves), lines)
                    self.assertTrue(any("busy_loop" in line for line in lines), lines)
                    # As the user left it: every thread still stopped.
                    states = harness.task_states(target.pid)
                    self.assertTrue(all(s == "T" for s in states.values()), states)
                dump = harness.spyglass("dump", "--pid", target.pid, timeout=30)
                self.assertEqual(dump.returncode, 0, dump.stderr)
                self.assertIn("busy_loop", dump.stdout)
            finally:
                target.process.send_signal(signal.SIGCONT)
            # And it runs again once continued.
            deadline = time.monotonic() + 5
            while "R" not in harness.task_states(target.pid).values():
                self.assertLess(time.monotonic(), deadline, harness.task_states(target.pid))
                time.sleep(0.01)


class Zombie(unittest.TestCase):
    def test_zombie_is_a_clear_error(self):
        python = faults.any_python()
        # A parent that forks a child which exits at once, and never reaps it.
        code = ("import os, sys, time\n"
                "pid = os.fork()\n"
                "if pid == 0:\n"
                "    os._exit(0)\n"
                "os.write(int(sys.argv[1]), ('%d\\n' % pid).encode())\n"
                "time.sleep(300)\n")
        read_fd, write_fd = os.pipe()
        parent = subprocess.Popen([python, "-c", code, str(write_fd)], pass_fds=(write_fd,))
        os.close(write_fd)
        try:
            zombie = int(harness.read_line(read_fd, 60, parent))
            faults.wait_for_state(zombie, "Z")
            with faults.Workdir() as work:
                for command in (["dump"], ["record", "-o", work.file("z.txt")],
                                ["top", "--once", "-d", "1"]):
                    result = harness.spyglass(*(command + ["--pid", zombie]), timeout=30)
                    self.assertEqual(result.returncode, 1, result.stderr)
                    self.assertEqual(result.stderr,
                                     "spyglass: error: process %d has exited (a zombie: its "
                                     "parent, process %d, has not reaped it yet); there is "
                                     "nothing left to sample\n" % (zombie, parent.pid))
                self.assertEqual(work.entries(), [])
        finally:
            os.close(read_fd)
            parent.kill()
            parent.wait()


if __name__ == "__main__":
    unittest.main()
