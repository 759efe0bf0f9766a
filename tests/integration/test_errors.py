"""Bad input: one clear line on stderr, a non-zero exit, no hang."""
import os
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def any_python():
    for label in harness.EXPECTED:
        path, _ = harness.find_interpreter(label)
        if path:
            return path
    raise unittest.SkipTest("no Python interpreter installed")


class ErrorTests(unittest.TestCase):
    def assert_one_line_error(self, result, *fragments):
        self.assertNotEqual(result.returncode, 0)
        lines = result.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, result.stderr)
        self.assertTrue(lines[0].startswith("spyglass: error: "), lines[0])
        for fragment in fragments:
            self.assertIn(fragment, lines[0])
        self.assertEqual(result.stdout, "")

    def test_no_such_pid(self):
        with open("/proc/sys/kernel/pid_max") as f:
            pid = int(f.read()) + 1  # above pid_max: cannot exist
        result = harness.spyglass("dump", "--pid", pid, timeout=30)
        self.assert_one_line_error(result, "no process with PID %d" % pid)

    def test_not_a_python_process(self):
        sleeper = subprocess.Popen(["sleep", "300"])
        try:
            result = harness.spyglass("dump", "--pid", sleeper.pid, timeout=30)
            self.assert_one_line_error(result, "is not a Python process", "sleep")
        finally:
            sleeper.kill()
            sleeper.wait()

    def test_process_that_has_exited(self):
        # An exited, not yet reaped child: /proc still lists it, but it has no memory.
        child = subprocess.Popen([any_python(), "-c", "pass"], stdout=subprocess.PIPE)
        child.stdout.read()  # EOF once it exited
        child.stdout.close()
        os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
        try:
            result = harness.spyglass("dump", "--pid", child.pid, timeout=30)
            self.assert_one_line_error(result, "process %d has exited" % child.pid)
        finally:
            child.wait()

    @unittest.skipUnless(os.geteuid() == 0 and shutil.which("setpriv"),
                         "needs root (to drop to another user) and setpriv")
    def test_permission_denied_says_how_to_grant_access(self):
        with harness.Target(any_python(), "dump_target.py") as target:
            result = subprocess.run(
                ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", harness.SPYGLASS,
                 "dump", "--pid", str(target.pid)],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, encoding="utf-8", timeout=30)
            self.assert_one_line_error(result, "no permission", "CAP_SYS_PTRACE".lower()
                                       if False else "cap_sys_ptrace", "ptrace_scope",
                                       "--cap-add SYS_PTRACE")

    def test_usage_error_exits_2(self):
        result = harness.spyglass("dump", timeout=30)
        self.assertEqual(result.returncode, 2)
        self.assertIn("--pid", result.stderr)

    def test_version_and_help(self):
        version = harness.spyglass("--version", timeout=30)
        self.assertEqual(version.returncode, 0)
        self.assertRegex(version.stdout, r"^spyglass \d+\.\d+\.\d+")
        helptext = harness.spyglass("dump", "--help", timeout=30)
        self.assertEqual(helptext.returncode, 0)
        for option in ("--pid", "--json", "--locals", "--blocking"):
            self.assertIn(option, helptext.stdout)


if __name__ == "__main__":
    unittest.main()
