"""py-spy's spellings, so that scripts and muscle memory carry over: --idle, --nonblocking,
-g, -n (native frames merged in), -d unlimited, -f raw, -f chrometrace,
--hideprogress, dump --subprocesses and --full-filenames; and the progress line on a terminal
(a bar with -d, a sane rate from the first update, none in launch mode so that the command's
output keeps its own lines). One interpreter is enough: these are command-line behaviours.
"""
import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from test_chrometrace import check_trace  # noqa: E402
from test_record import off_cpu_leaf, parse_folded, share  # noqa: E402


def run_on_terminal(args, columns=120, timeout=60):
    """Runs spyglass with stdin, stdout and stderr on a new pseudo-terminal `columns` wide;
    returns (exit status, everything written to the terminal)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    process = subprocess.Popen([harness.SPYGLASS] + [str(a) for a in args], stdin=slave,
                               stdout=slave, stderr=slave, close_fds=True)
    os.close(slave)
    output = b""
    deadline = time.monotonic() + timeout
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("spyglass did not finish within %ds: %r" % (timeout, output))
            ready, _, _ = select.select([master], [], [], left)
            if not ready:
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: every writer has closed the terminal
                break
            if not chunk:
                break
            output += chunk
        return process.wait(timeout=timeout), output.decode("utf-8", "replace")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        os.close(master)


def dump_once_it_shows(pid, what, *args):
    """spyglass dump output once it shows `what`: a target signals readiness just before it
    goes where the test wants to see it, so the first dumps may come a moment early."""
    deadline = time.monotonic() + 30
    while True:
        result = harness.spyglass("dump", "--pid", pid, *args)
        if result.returncode == 0 and what in result.stdout:
            return result.stdout
        if time.monotonic() > deadline:
            raise AssertionError("no %r in the dump within 30 s: %s%s"
                                 % (what, result.stdout, result.stderr))
        time.sleep(0.02)


class PySpySpellings(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.python = harness.any_interpreter()
        cls.dir = tempfile.mkdtemp(prefix="spyglass-pyspy-")

    def path(self, name):
        return os.path.join(self.dir, name)

    def assert_one_line_error(self, result, fragment, code=2):
        self.assertEqual(result.returncode, code, result.stderr)
        lines = result.stderr.strip().splitlines()
        self.assertEqual(len(lines), 1, result.stderr)
        self.assertTrue(lines[0].startswith("spyglass: error: "), lines[0])
        self.assertIn(fragment, lines[0])

    def kill_at_the_end(self, target):
        """The PID of subprocess_parent's child, which is killed when the test ends (an orphan
        would keep the test's output open, and ctest waiting, until it exits)."""
        child = int(target.report.split()[1])

        def kill():
            try:
                os.kill(child, signal.SIGKILL)
            except ProcessLookupError:
                pass

        self.addCleanup(kill)
        return child

    def record(self, *args, **kwargs):
        result = harness.spyglass("record", *args, **kwargs)
        self.assertEqual(result.returncode, 0, result.stderr)
        return result

    def test_idle_is_wall_mode_and_conflicts_with_cpu_mode(self):
        out = self.path("idle.txt")
        with harness.Target(self.python, "record_target.py") as target:
            self.record("--pid", target.pid, "-d", 1, "--idle", "-t", "-o", out)
            stacks = parse_folded(out)
            sleeper = [(f, c) for f, c in stacks if "sleeper" in f[0]]
            self.assertGreater(share(sleeper, off_cpu_leaf), 0.95)
            result = harness.spyglass("record", "--pid", target.pid, "-i", "--mode", "cpu",
                                      "-o", out, timeout=30)
            self.assert_one_line_error(result, "--idle")

    def test_nonblocking_is_accepted_everywhere(self):
        with harness.Target(self.python, "record_target.py") as target:
            self.record("--pid", target.pid, "-d", 0.5, "--nonblocking", "-o", self.path("nb.txt"))
            self.assertTrue(parse_folded(self.path("nb.txt")))
            dump = harness.spyglass("dump", "--pid", target.pid, "--nonblocking")
            self.assertEqual(dump.returncode, 0, dump.stderr)
            self.assertIn("busy_loop", dump.stdout)
            top = harness.spyglass("top", "--pid", target.pid, "--nonblocking", "--once", "-d",
                                   0.5)
            self.assertEqual(top.returncode, 0, top.stderr)
            both = harness.spyglass("dump", "--pid", target.pid, "--nonblocking", "--blocking",
                                    timeout=30)
            self.assert_one_line_error(both, "--nonblocking")

    def test_g_is_gil(self):
        out = self.path("gil.txt")
        with harness.Target(self.python, "record_target.py") as target:
            self.record("--pid", target.pid, "-d", 1, "-g", "-t", "-o", out)
        stacks = parse_folded(out)
        self.assertTrue(stacks)
        self.assertGreater(share(stacks, lambda f: "busy" in f[0]), 0.95)

    def test_n_is_native_in_every_command(self):
        # py-spy's -n/--native: native frames merged in (test_native.py has the details).
        out = self.path("n.txt")
        with harness.Target(self.python, "record_target.py") as target:
            self.record("--pid", target.pid, "-d", 0.5, "-n", "-o", out)
            frames = [x for f, _ in parse_folded(out) for x in f]
            # "name (libc.so.6)", or "name (file.c:line)" where the module's DWARF has it.
            native = re.compile(r"\((?:[^()]*\.so(?:\.[\d.]+)?|[^()]*\.(?:c|h|cc|cpp|S):\d+)\)$")
            self.assertTrue(any(native.search(x) for x in frames), frames[:20])
            top = harness.spyglass("top", "--native", "--pid", target.pid, "--once", "-d", 0.5)
            self.assertEqual(top.returncode, 0, top.stderr)
            dump = harness.spyglass("dump", "-n", "--pid", target.pid)
            self.assertEqual(dump.returncode, 0, dump.stderr)
            self.assertIn("busy_loop", dump.stdout)

    def test_duration_unlimited_records_until_the_target_exits(self):
        out = self.path("unlimited.txt")
        with harness.Target(self.python, "record_target.py", 1.0) as target:
            result = self.record("--pid", target.pid, "-d", "unlimited", "-o", out, timeout=60)
        self.assertIn("target exited", result.stderr)
        self.assertTrue(any("slow_part" in x for f, _ in parse_folded(out) for x in f))

    def test_format_raw_is_folded_whatever_the_extension(self):
        out = self.path("raw.svg")
        with harness.Target(self.python, "record_target.py") as target:
            self.record("--pid", target.pid, "-d", 0.5, "-f", "raw", "-o", out)
        with open(out, encoding="utf-8") as f:
            text = f.read()
        self.assertFalse(text.startswith("<?xml"))
        self.assertTrue(all(re.match(r"^.+ \d+$", line) for line in text.splitlines()), text[:300])

    def test_chrometrace_of_a_recording(self):
        # py-spy's -f chrometrace, on a name whose extension alone would pick speedscope (the
        # fault tests' random-kill loop writes .trace.json files with no -f).
        out = self.path("recording.json")
        with harness.Target(self.python, "record_target.py") as target:
            result = self.record("--pid", target.pid, "-d", 1, "-f", "chrometrace", "-o", out)
        self.assertIn("wrote chrometrace to " + out, result.stderr)
        with open(out, encoding="utf-8") as f:
            doc = json.load(f)
        tracks, names = check_trace(self, doc)
        by_name = {name: tracks.get(track, []) for track, name in names.items()}
        self.assertIn("busy", by_name)
        self.assertIn("sleeper", by_name)
        self.assertTrue(any(e["name"].startswith("slow_part (") for e in by_name["busy"]))
        # The sleeper waits all along: one long off-CPU slice, not one per sample.
        waits = [e for e in by_name["sleeper"] if e["cat"] in ("off-cpu", "wait")]
        self.assertTrue(waits)
        self.assertGreater(max(e["dur"] for e in waits), 0.5e6)

    def test_dump_subprocesses_each_process_once(self):
        with harness.Target(self.python, "subprocess_parent.py", 60) as target:
            child = self.kill_at_the_end(target)
            output = dump_once_it_shows(target.pid, '"child_work"', "--subprocesses", "--json")
            dumps = [json.loads(line) for line in output.splitlines()]
            self.assertEqual([d["pid"] for d in dumps], [target.pid, child])
            tids = [t["tid"] for d in dumps for t in d["threads"]]
            self.assertEqual(len(tids), len(set(tids)))
            functions = [[f["function"] for f in t["frames"]] for t in dumps[1]["threads"]]
            self.assertTrue(any("child_work" in f for f in functions), functions)
            text = harness.spyglass("dump", "--pid", target.pid, "-s").stdout
            self.assertEqual(text.count("Process %d: " % target.pid), 1)
            self.assertEqual(text.count("Process %d: " % child), 1)
            alone = harness.spyglass("dump", "--pid", target.pid).stdout
            self.assertNotIn("Process %d: " % child, alone)

    def test_dump_shortens_paths_unless_full_filenames(self):
        with harness.Target(self.python, "subprocess_parent.py", 60) as target:
            self.kill_at_the_end(target)
            short = dump_once_it_shows(target.pid, "parent_wait")
            full = dump_once_it_shows(target.pid, "parent_wait", "--full-filenames")
        # The parent waits in subprocess.py, a standard-library file under lib/pythonX.Y/.
        self.assertRegex(short, r"\(subprocess\.py:\d+\)")
        self.assertRegex(full, r"\(/\S+/lib/python\d\.\d+/subprocess\.py:\d+\)")
        self.assertIn(os.path.join(harness.WORKLOADS, "subprocess_parent.py"), short)


class ProgressLine(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.python = harness.any_interpreter()
        cls.dir = tempfile.mkdtemp(prefix="spyglass-progress-")

    def test_a_bar_and_sane_rates_with_a_duration(self):
        out = os.path.join(self.dir, "bar.txt")
        with harness.Target(self.python, "record_target.py") as target:
            code, screen = run_on_terminal(["record", "--pid", target.pid, "-d", 1.5, "-o", out])
        self.assertEqual(code, 0, screen)
        updates = [u for u in re.split(r"\r\x1b\[K", screen) if "Ctrl-C to stop" in u]
        self.assertGreaterEqual(len(updates), 2, screen)
        for update in updates:
            self.assertRegex(update, r"\[[#-]{20}\] +\d+%  \d+\.\d s / 1\.5 s  ")
            rate = float(re.search(r"([\d.]+) Hz \(of 100\)", update).group(1))
            self.assertLess(rate, 150, update)  # the first update used to claim 76952.7 Hz
        percents = [int(re.search(r"\] +(\d+)%", u).group(1)) for u in updates]
        self.assertEqual(percents, sorted(percents))
        self.assertIn("samples in 1.5 s", screen)

    def test_a_narrow_terminal_keeps_the_line_on_one_row(self):
        out = os.path.join(self.dir, "narrow.txt")
        with harness.Target(self.python, "record_target.py") as target:
            code, screen = run_on_terminal(["record", "--pid", target.pid, "-d", 0.8, "-o", out],
                                           columns=60)
        self.assertEqual(code, 0, screen)
        updates = [u for u in re.split(r"\r\x1b\[K", screen) if u.startswith("spyglass: [")]
        self.assertTrue(updates, screen)
        for update in updates:
            self.assertLessEqual(len(update), 59, update)
            self.assertRegex(update, r"%  \d+\.\d s / 0\.8 s  [\d,]+ samples$")

    def test_hideprogress(self):
        out = os.path.join(self.dir, "hidden.txt")
        with harness.Target(self.python, "record_target.py") as target:
            code, screen = run_on_terminal(["record", "--pid", target.pid, "-d", 0.8,
                                            "--hideprogress", "-o", out])
        self.assertEqual(code, 0, screen)
        self.assertNotIn("Ctrl-C to stop", screen)
        self.assertIn("samples in 0.8 s", screen)

    def test_launch_mode_leaves_the_terminal_to_the_command(self):
        out = os.path.join(self.dir, "launch.txt")
        code = ("import sys, time\n"
                "def work(until):\n"
                "    while time.time() < until: pass\n"
                "print('child line 1'); sys.stdout.flush()\n"
                "work(time.time() + 0.8)\n"
                "print('child line 2')\n")
        status, screen = run_on_terminal(["record", "-r", 100, "-o", out, "--", self.python,
                                          "-c", code])
        self.assertEqual(status, 0, screen)
        lines = [line.strip("\r") for line in screen.split("\n")]
        self.assertIn("child line 1", lines, screen)
        self.assertIn("child line 2", lines, screen)
        self.assertNotIn("Ctrl-C to stop", screen)
        self.assertTrue(any("work" in x for f, _ in parse_folded(out) for x in f))


if __name__ == "__main__":
    unittest.main()
