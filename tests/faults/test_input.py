"""Input that got a wrong answer (issue 9, item 3): bad option values are one clear line and
exit 2 (never CLI11's 309-digit range, never a recording that runs forever); -d unlimited;
the clock and the summary at low rates and tiny durations, with the issue's figures; --pid of
a kernel thread, of a thread of another process."""
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

SUMMARY = re.compile(r"([\d,]+) samples? in ([\d.]+) s at ([\d.]+) Hz \(asked ([\d.]+)\)")


def kernel_thread():
    """(pid, name) of a kernel thread visible here, or None (PF_KTHREAD in the stat flags)."""
    for entry in sorted(os.listdir("/proc"), key=lambda e: (len(e), e)):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                text = f.read()
        except OSError:
            continue
        fields = text[text.rindex(")") + 2:].split()
        if int(fields[6]) & 0x00200000:
            return int(entry), text[text.index("(") + 1:text.rindex(")")]
    return None


class InputTests(unittest.TestCase):
    def setUp(self):
        self.python = faults.any_python()

    def assert_usage_error(self, result, message):
        self.assertEqual(result.returncode, 2, result.stderr)
        self.assertEqual(result.stdout, "")
        lines = result.stderr.splitlines()
        self.assertEqual(len(lines), 1, result.stderr)
        self.assertTrue(lines[0].startswith("spyglass: error: " + message), lines[0])
        self.assertNotIn("179769313", result.stderr)

    def test_bad_values_are_one_clear_line(self):
        pid_error = "--pid must be a process id (a positive integer), not '%s'"
        duration_error = "--duration must be a number of seconds > 0, or 'unlimited', not '%s'"
        rate_error = "--rate must be a number of samples per second from 0.001 to 100000, not '%s'"
        cases = []
        for command in (["record", "-o", "/tmp/spyglass-never.txt"], ["top", "--once"]):
            cases += [(command + ["--pid", "abc"], pid_error % "abc"),
                      (command + ["--pid", "-3"], pid_error % "-3"),
                      (command + ["--pid", "99999999999"], pid_error % "99999999999")]
            for value in ("-1", "nan", "inf", "0", "soon"):
                cases.append((command + ["--pid", "1", "-d", value], duration_error % value))
            for value in ("nan", "0", "-5", "1e6"):
                cases.append((command + ["--pid", "1", "-r", value], rate_error % value))
        cases += [(["dump", "--pid", "abc"], pid_error % "abc"),
                  (["dump", "--pid", "0"], pid_error % "0"),
                  (["top", "--pid", "1", "--delay", "nan"],
                   "--delay must be a number of seconds from 0.1 to 3600, not 'nan'")]
        for args, message in cases:
            with self.subTest(" ".join(args)):
                self.assert_usage_error(harness.spyglass(*args, timeout=10), message)
        self.assertFalse(os.path.exists("/tmp/spyglass-never.txt"))

    def test_duration_unlimited_records_until_the_target_exits(self):
        with faults.Workdir() as work, harness.Target(self.python, "record_target.py",
                                                      1.0) as target:
            out = work.file("unlimited.txt")
            result = harness.spyglass("record", "--pid", target.pid, "-d", "unlimited", "-o",
                                      out, timeout=30)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertIn("the target exited", result.stderr)
            faults.check_folded(self, out)

    def test_low_rate_duration_ends_on_time(self):
        # The issue: -r 0.2 -d 2 ran 5.0 s and said "5 samples in 2.0 s at 0.5 Hz".
        with faults.Workdir() as work, harness.Target(self.python, "record_target.py") as target:
            started = time.monotonic()
            result = harness.spyglass("record", "--pid", target.pid, "-r", 0.2, "-d", 2, "-o",
                                      work.file("low.txt"), timeout=30)
            took = time.monotonic() - started
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertLess(took, 3.5, result.stderr)
            summary = SUMMARY.search(result.stderr)
            self.assertTrue(summary, result.stderr)
            self.assertEqual(summary.group(2, 3, 4), ("2.0", "0.2", "0.2"), result.stderr)

    def test_interrupted_low_rate_says_the_real_time(self):
        # The issue: SIGINT 3 s into -r 0.05 said "in 20.0 s".
        with faults.Workdir() as work, harness.Target(self.python, "record_target.py") as target:
            recorder = faults.start_record("--pid", target.pid, "-r", 0.05, "-o",
                                           work.file("int.txt"))
            started = time.monotonic()
            time.sleep(3)
            recorder.send_signal(signal.SIGINT)
            code, _, err = faults.finish(recorder)
            took = time.monotonic() - started
            self.assertEqual(code, 0, err)
            summary = SUMMARY.search(err)
            self.assertTrue(summary, err)
            self.assertAlmostEqual(float(summary.group(2)), took, delta=0.3)
            self.assertEqual(summary.group(3), "0.05", err)

    def test_tiny_duration_rate(self):
        # The issue: -d 0.0001 said "at 10000.0 Hz".
        with faults.Workdir() as work, harness.Target(self.python, "record_target.py") as target:
            for duration in ("0.0001", "0.00001"):
                result = harness.spyglass("record", "--pid", target.pid, "-d", duration, "-o",
                                          work.file("tiny.txt"))
                self.assertEqual(result.returncode, 0, result.stderr)
                summary = SUMMARY.search(result.stderr)
                self.assertTrue(summary, result.stderr)
                self.assertNotEqual(summary.group(1), "0", result.stderr)  # tick 0 is taken
                self.assertEqual(summary.group(2, 3), (duration, "100.0"), result.stderr)
            top = harness.spyglass("top", "--pid", target.pid, "--once", "-d", "0.0001")
            self.assertEqual(top.returncode, 0, top.stderr)
            self.assertRegex(top.stdout, r"Rate 100\.0 Hz \(asked 100\)")

    def test_kernel_thread_is_said_to_be_one(self):
        found = kernel_thread()
        if found is None:
            self.skipTest("no kernel thread is visible in this PID namespace")
        pid, name = found
        for command in (["dump"], ["record", "-o", "/tmp/spyglass-never.txt"],
                        ["top", "--once"]):
            result = harness.spyglass(*(command + ["--pid", pid]), timeout=10)
            self.assertEqual(result.returncode, 1, result.stderr)
            self.assertEqual(result.stderr, "spyglass: error: process %d (%s) is a kernel thread, "
                             "not a Python process\n" % (pid, name))
        self.assertFalse(os.path.exists("/tmp/spyglass-never.txt"))

    def test_thread_id_is_not_taken_for_a_process(self):
        with harness.Target(self.python, "record_target.py") as target:
            tids = [t for t in harness.task_states(target.pid) if t != target.pid]
            self.assertTrue(tids)
            with open("/proc/%d/comm" % target.pid) as f:
                comm = f.read().strip()
            for command in (["dump"], ["record", "-o", "/tmp/spyglass-never.txt"],
                            ["top", "--once"]):
                result = harness.spyglass(*(command + ["--pid", tids[0]]), timeout=10)
                self.assertEqual(result.returncode, 2, result.stderr)
                self.assertEqual(result.stderr, "spyglass: error: %d is a thread of process %d "
                                 "(%s); use --pid %d\n" % (tids[0], target.pid, comm, target.pid))
        self.assertFalse(os.path.exists("/tmp/spyglass-never.txt"))

    def test_no_plural_for_one(self):
        # One tick of a one-thread target at a low rate: "1 sample", not "1 samples".
        code = ("import os, sys, time\n"
                "os.write(int(sys.argv[1]), b'ready\\n')\n"
                "def alone():\n"
                "    while True: time.sleep(1)\n"
                "alone()\n")
        read_fd, write_fd = os.pipe()
        target = subprocess.Popen([self.python, "-c", code, str(write_fd)], pass_fds=(write_fd,))
        os.close(write_fd)
        try:
            harness.read_line(read_fd, 60, target)
            with faults.Workdir() as work:
                result = harness.spyglass("record", "--pid", target.pid, "-r", 1, "-d", 0.5,
                                          "-o", work.file("one.txt"))
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertRegex(result.stderr, r"spyglass: 1 sample in 0\.5 s at 1\.0 Hz \(asked 1\), "
                             r"0 late ticks, 0 sampling errors")
        finally:
            os.close(read_fd)
            target.kill()
            target.wait()


if __name__ == "__main__":
    unittest.main()
