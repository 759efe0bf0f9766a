"""What spyglass prints from a hostile target (issue 23, items 3 and 9): names with terminal
escapes, newlines, C1 controls and NULs reach root's terminal escaped, in dump, top --once and
the error line; and time.sleep reads as a sleep on every version, select() on no descriptors
(2.7 to 3.10) included."""
import os
import re
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faults  # noqa: E402
from faults import harness  # noqa: E402

# What a terminal acts on: C0 controls but the newline, DEL, C1 controls, bidirectional overrides.
UNSAFE = re.compile(u"[\x00-\x09\x0b-\x1f\x7f\u0080-\u009f\u202a-\u202e\u2066-\u2069]")
# The name's escape sequence, as spyglass prints it.
ESCAPED_NAME = r"evil\x1b]0;pwned\x07\x1b[2J\n    forged (x.py:1)"
ESCAPED_FILE = r"file\x1b[31m\nname.py"


class HostileNames(harness.InterpreterCase):
    def assert_terminal_safe(self, text, what):
        bad = UNSAFE.search(text)
        self.assertIsNone(bad, "%s printed %r raw: %r" % (what, bad and bad.group(0), text))
        forged = [line for line in text.splitlines() if line.lstrip().startswith("forged (")]
        self.assertEqual(forged, [], "a newline in a name forged a line in %s" % what)

    def test_dump_escapes_names_paths_and_thread_names(self):
        with harness.Target(self.python, "hostile_names.py") as target:
            result = harness.spyglass("dump", "--pid", target.pid)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assert_terminal_safe(result.stdout, "dump")
        self.assert_terminal_safe(result.stderr, "dump's stderr")
        self.assertIn(ESCAPED_FILE, result.stdout)
        # The thread's name is printed (escaped) on every version; the function's on 3.8+.
        self.assertIn('"%s' % ESCAPED_NAME, result.stdout)
        if self.version() >= (3, 8):
            self.assertIn("    %s" % ESCAPED_NAME, result.stdout)

    def test_top_once_escapes_the_same(self):
        with harness.Target(self.python, "hostile_names.py") as target:
            result = harness.spyglass("top", "--once", "--pid", target.pid, "-d", "0.3")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assert_terminal_safe(result.stdout, "top --once")
        self.assertIn(ESCAPED_FILE, result.stdout)


harness.interpreter_tests(HostileNames, globals())


class SleepReadsAsASleep(harness.InterpreterCase):
    def test_time_sleep_is_a_sleep_in_every_format(self):
        with harness.Target(self.python, "hostile_names.py") as target, \
                faults.Workdir() as work:
            folded = work.file("sleep.txt")
            result = harness.spyglass("record", "--pid", target.pid, "-d", "0.3", "-o", folded)
            self.assertEqual(result.returncode, 0, result.stderr)
            with open(folded, encoding="utf-8") as f:
                lines = f.read().splitlines()
            top = harness.spyglass("top", "--once", "--pid", target.pid, "-d", "0.3")
        napping = [line for line in lines if ESCAPED_FILE.replace(r"\x1b", " ")
                   .replace(r"\n", " ") in line or "name.py" in line]
        self.assertTrue(napping, "no sample of the sleeping thread: %s" % lines)
        for line in napping:
            wait = line.rpartition(" ")[0].rpartition(";")[2]
            self.assertTrue(wait.startswith("[wait ") and "sleep" in wait,
                            "the sleeping thread's wait does not read as a sleep: %s" % wait)
        sleeping_rows = [line for line in top.stdout.splitlines() if "name.py" in line]
        self.assertTrue(sleeping_rows and all("sleep" in row for row in sleeping_rows),
                        "top's wait column for the sleeper: %s" % top.stdout)


harness.interpreter_tests(SleepReadsAsASleep, globals())


class HostileCommandName(unittest.TestCase):
    def test_error_line_escapes_the_process_name(self):
        # Not a Python process, named with an escape: the error line names it, escaped.
        # A process may rename only itself: bash names itself, says so, and waits on stdin.
        shell = subprocess.Popen(
            ["bash", "-c", r"printf 's\033]0;pwned\007' > /proc/$$/comm; echo; read"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            shell.stdout.readline()
            result = harness.spyglass("dump", "--pid", shell.pid)
        finally:
            shell.kill()
            shell.wait()
        self.assertNotEqual(result.returncode, 0)
        self.assertIsNone(UNSAFE.search(result.stderr), repr(result.stderr))
        self.assertIn(r"s\x1b]0;pwned\x07", result.stderr)
        self.assertEqual(len(result.stderr.splitlines()), 1, result.stderr)


if __name__ == "__main__":
    unittest.main()
