"""spyglass top. On every installed interpreter: --once (the header, the hot and the waiting
function with the right shares) and plain tables on a pipe until SIGINT. In a real terminal
(tmux), on two interpreters: the waiting function tops the wall view and the burner the cpu
view, keys sort the rows and filter by thread, a resize refits the rows, and q, Ctrl-C or the
target's exit leave the terminal as it was (main screen, cursor visible, echo on)."""
import collections
import os
import re
import select
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

RATE = 200
WORKLOAD = os.path.join(harness.WORKLOADS, "top_target.py")
SCREEN_VERSIONS = ("3.12", "2.7")
WIDTH, HEIGHT = 120, 40

Row = collections.namedtuple("Row", "own total own_time total_time on_cpu wait label function")
# The time columns are left out on a narrow screen (under 91 columns): their groups are None.
ROW = re.compile(r"^\s*(\d+\.\d)%\s+(\d+\.\d)%\s+(?:(\d+(?:\.\d+)?)([sh])\s+(\d+(?:\.\d+)?)([sh])\s+)?"
                 r"(\d+%|-) (.{22})  (\S.*?)\s*$")
HEADER = re.compile(r"^spyglass top  pid (\d+)", re.M)
EXITED = re.compile(r"^spyglass-exit=(\d+)$", re.M)


def def_line(function):
    with open(WORKLOAD) as f:
        for number, line in enumerate(f, 1):
            if line.startswith("def %s(" % function):
                return number
    raise AssertionError("no function " + function)


def parse_rows(text):
    rows = []
    for line in text.splitlines():
        m = ROW.match(line)
        if not m:
            continue
        scale = lambda unit: 3600.0 if unit == "h" else 1.0  # noqa: E731
        on_cpu = None if m.group(7) == "-" else int(m.group(7)[:-1])
        timed = m.group(3) is not None
        rows.append(Row(float(m.group(1)), float(m.group(2)),
                        float(m.group(3)) * scale(m.group(4)) if timed else None,
                        float(m.group(5)) * scale(m.group(6)) if timed else None, on_cpu,
                        m.group(8).strip(),
                        m.group(9), m.group(9).split(" (", 1)[0]))
    return rows


def by_function(rows):
    return {r.function: r for r in rows}


def samples(text):
    m = re.search(r"Samples ([\d,]+)", text)
    return int(m.group(1).replace(",", "")) if m else 0


def view_line(text):
    m = re.search(r"^View .*$", text, re.M)
    return m.group(0) if m else ""


class TopCase(harness.InterpreterCase):
    def once(self, pid, *extra):
        result = harness.spyglass("top", "--pid", pid, "--once", "-d", 2, "-r", RATE, *extra)
        self.assertEqual(result.returncode, 0, result.stderr)
        return result.stdout


class TopOnceTests(TopCase):
    def test_once_shows_the_hot_and_the_waiting_function(self):
        with harness.Target(self.python, "top_target.py") as target:
            out = self.once(target.pid)
        lines = out.splitlines()
        self.assertRegex(lines[0], r"^spyglass top  pid %d  Python %d\.%d\.\d+  \S*python\S* "
                         % ((target.pid,) + self.version()))
        self.assertRegex(lines[1], r"^Elapsed 2\.0s  Samples [\d,]+  Rate [\d.]+ Hz \(asked 200\)"
                                   r"  Errors [\d,]+( \([\d.]+%\))?  Threads 4 \(1 on-CPU\)$")
        shares = re.match(r"^On-CPU ([\d.]+)%  Waiting ([\d.]+)%  GIL ([\d.]+)%$", lines[2])
        self.assertTrue(shares, lines[2])
        on_cpu, waiting, gil = (float(x) for x in shares.groups())
        self.assertAlmostEqual(on_cpu, 25, delta=6)  # 1 thread of 4 runs
        self.assertAlmostEqual(on_cpu + waiting, 100, delta=0.2)
        self.assertGreater(gil, 50)  # the burner holds it, nobody else wants it
        self.assertEqual(lines[3], "View wall | By function | Cumulative | All threads | Sort %Own")
        self.assertEqual(lines[5].split(), ["%Own", "%Total", "OwnTime", "TotalTime", "OnCPU",
                                            "Waiting", "on", "Function", "(file:line)"])
        rows = parse_rows(out)
        self.assertEqual(rows[0].function, "wait_here", out)
        functions = by_function(rows)
        wait, burn, idle = functions["wait_here"], functions["burn"], functions["main_idle"]
        self.assertAlmostEqual(wait.own, 50, delta=8)
        self.assertAlmostEqual(burn.own, 25, delta=8)
        self.assertAlmostEqual(idle.own, 25, delta=8)
        self.assertGreaterEqual(burn.on_cpu, 90)
        self.assertLessEqual(wait.on_cpu, 5)
        self.assertLessEqual(idle.on_cpu, 5)
        self.assertEqual(wait.own, wait.total)
        self.assertTrue(wait.label.endswith("top_target.py:%d)" % def_line("wait_here")),
                        wait.label)
        # Two threads wait, one burns, each for the whole 2 s at 1/200 s a sample.
        self.assertAlmostEqual(wait.own_time / burn.own_time, 2, delta=0.5)
        self.assertGreater(burn.own_time, 1.0)
        self.assertLessEqual(burn.own_time, 2.05)
        self.assertNotIn("\x1b", out)


harness.interpreter_tests(TopOnceTests, globals())


class TopViewTests(TopCase):
    """--mode cpu and the plain tables on a pipe are top's own, whatever the interpreter:
    checked on the oldest and the newest."""

    def test_cpu_mode_shows_only_the_burner(self):
        with harness.Target(self.python, "top_target.py") as target:
            out = self.once(target.pid, "--mode", "cpu")
        self.assertIn("(--mode cpu: running threads only)", out)
        self.assertIn("View cpu |", out)
        rows = parse_rows(out)
        self.assertEqual(rows[0].function, "burn", out)
        self.assertGreaterEqual(rows[0].own, 90)
        self.assertNotIn("wait_here", by_function(rows))
        self.assertNotIn("main_idle", by_function(rows))

    def test_plain_tables_on_a_pipe_until_interrupted(self):
        with harness.Target(self.python, "top_target.py") as target:
            top = subprocess.Popen([harness.SPYGLASS, "top", "--pid", str(target.pid), "--delay",
                                    "0.3", "-r", "100"], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE)
            try:
                # Three headers: at least two whole tables came while sampling went on.
                text = read_until(top, lambda t: len(HEADER.findall(t)) >= 3, 30)
                top.send_signal(signal.SIGINT)
                rest, stderr = top.communicate(timeout=30)
            finally:
                if top.poll() is None:
                    top.kill()
                    top.wait()
        self.assertEqual(top.returncode, 0, stderr)
        out = text + rest.decode("utf-8")
        self.assertNotIn("\x1b", out)
        self.assertTrue(all(c == "\n" or " " <= c < "\x7f" for c in out), repr(out[:300]))
        tables = HEADER.split(out)[1:]
        self.assertGreaterEqual(len(tables), 6)  # (pid, table) pairs: two or more, and the last
        for table in tables[1::2]:
            self.assertIn("  %Own  %Total   OwnTime  TotalTime  OnCPU Waiting on", table)
            rows = parse_rows(table)
            self.assertTrue(rows, table)
            self.assertLessEqual(len(rows), 25)
        self.assertEqual(parse_rows(tables[-1])[0].function, "wait_here", tables[-1])


harness.interpreter_tests(TopViewTests, globals(), labels=["2.7", "3.13"])


def read_until(process, predicate, timeout):
    """Reads the process's stdout until predicate(text so far) holds."""
    data = b""
    deadline = time.monotonic() + timeout
    while not predicate(data.decode("utf-8", "replace")):
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError("timed out; output so far:\n%s" % data.decode("utf-8", "replace"))
        ready, _, _ = select.select([process.stdout], [], [], left)
        if ready:
            chunk = os.read(process.stdout.fileno(), 65536)
            if not chunk:
                raise AssertionError("spyglass exited (%s):\n%s" % (process.wait(), data))
            data += chunk
    return data.decode("utf-8")


class TopLaunchTests(unittest.TestCase):
    def python(self):
        for label in harness.EXPECTED[::-1]:
            path, _ = harness.find_interpreter(label)
            if path:
                return path
        self.fail("no Python interpreter is installed")

    def test_once_samples_five_seconds_and_keeps_the_exit_status(self):
        code = ("import sys, time\n"
                "def launched_work(until):\n"
                "    while time.time() < until: pass\n"
                "launched_work(time.time() + 6.5)\n"
                "sys.exit(3)\n")
        result = harness.spyglass("top", "--once", "--", self.python(), "-c", code, timeout=60)
        self.assertEqual(result.returncode, 3, result.stderr)
        self.assertRegex(result.stdout, r"\nElapsed 5\.0s  ")
        rows = parse_rows(result.stdout)
        self.assertEqual(rows[0].function, "launched_work", result.stdout)
        self.assertGreaterEqual(rows[0].on_cpu, 90)

    def test_neither_pid_nor_command_is_a_usage_error(self):
        result = harness.spyglass("top", "--once", timeout=30)
        self.assertEqual(result.returncode, 2)
        self.assertIn("either --pid", result.stderr)


class Tmux(object):
    """A terminal of its own: a private tmux server running sh in one pane."""
    count = 0

    def __init__(self, width, height):
        Tmux.count += 1
        self.socket = "spyglass-top-%d-%d" % (os.getpid(), Tmux.count)
        env = dict(os.environ, PS1="$ ", ENV="/dev/null")
        self.tmux("new-session", "-d", "-x", str(width), "-y", str(height), "-s", "top", "sh",
                  env=env)

    def tmux(self, *args, **kwargs):
        return subprocess.run(["tmux", "-L", self.socket, "-f", "/dev/null"] + list(args),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, encoding="utf-8",
                              timeout=30, check=True, env=kwargs.get("env")).stdout

    def keys(self, *keys):
        self.tmux("send-keys", "-t", "top", *keys)

    def type_line(self, text):
        self.tmux("send-keys", "-t", "top", "-l", text)
        self.keys("Enter")

    def screen(self):
        return self.tmux("capture-pane", "-p", "-t", "top")

    def display(self, format_):
        return self.tmux("display", "-p", "-t", "top", format_).strip()

    def wait_for(self, predicate, what, timeout=30):
        """The screen once predicate holds for it, seen twice alike (not halfway redrawn)."""
        deadline = time.monotonic() + timeout
        previous = None
        while True:
            screen = self.screen()
            if screen == previous and predicate(screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError("timed out waiting for %s; the screen:\n%s" % (what, screen))
            previous = screen
            time.sleep(0.05)

    def close(self):
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=30)


class TopScreenCase(harness.InterpreterCase):
    def setUp(self):
        if shutil.which("tmux") is None:
            self.fail("tmux is needed for the full-screen tests (apt-get install tmux)")

    def start(self, *target_args):
        target = harness.Target(self.python, "top_target.py", *target_args)
        target.__enter__()
        self.addCleanup(target.__exit__, None, None, None)
        tmux = Tmux(WIDTH, HEIGHT)
        self.addCleanup(tmux.close)
        tmux.type_line("%s top --pid %d -r 100 --delay 0.3; echo spyglass-exit=$?"
                       % (shlex.quote(harness.SPYGLASS), target.pid))
        return target, tmux

    def wait_for_rows(self, tmux, condition=lambda screen: True, what="the table"):
        return tmux.wait_for(lambda s: HEADER.search(s) and parse_rows(s) and condition(s), what)

    def wait_for_exit(self, tmux):
        screen = tmux.wait_for(lambda s: EXITED.search(s), "spyglass to exit")
        return int(EXITED.search(screen).group(1)), screen

    def assert_restored(self, tmux):
        self.assertEqual(tmux.display("#{alternate_on}"), "0")
        self.assertEqual(tmux.display("#{cursor_flag}"), "1")
        directory = tempfile.mkdtemp(prefix="spyglass-top-")
        self.addCleanup(shutil.rmtree, directory)
        path = os.path.join(directory, "stty")
        tmux.type_line("stty -a > %s.part && mv %s.part %s" % (path, path, path))
        deadline = time.monotonic() + 30
        while not os.path.exists(path):
            self.assertLess(time.monotonic(), deadline, "stty did not run:\n" + tmux.screen())
            time.sleep(0.05)
        with open(path) as f:
            modes = re.split(r"[\s;]+", f.read())
        self.assertIn("echo", modes)
        self.assertNotIn("-echo", modes)
        self.assertIn("icanon", modes)

    def test_views_sorts_filter_resize_and_quit(self):
        target, tmux = self.start()
        screen = self.wait_for_rows(tmux, lambda s: samples(s) >= 600, "600 samples")
        self.assertEqual(tmux.display("#{alternate_on}"), "1")
        self.assertEqual(tmux.display("#{cursor_flag}"), "0")
        self.assertIn("pid %d  Python %d.%d." % ((target.pid,) + self.version()), screen)
        rows = parse_rows(screen)
        self.assertEqual(rows[0].function, "wait_here", screen)
        self.assertAlmostEqual(rows[0].own, 50, delta=10)

        tmux.keys("c")
        screen = self.wait_for_rows(tmux, lambda s: view_line(s).startswith("View cpu |"), "cpu")
        rows = parse_rows(screen)
        self.assertEqual(rows[0].function, "burn", screen)
        self.assertNotIn("wait_here", by_function(rows))
        tmux.keys("c")
        self.wait_for_rows(tmux, lambda s: view_line(s).startswith("View wall |"), "wall view")

        for key, title, value in (("2", "%Total", lambda r: -r.total),
                                  ("5", "OnCPU", lambda r: -(r.on_cpu if r.on_cpu is not None
                                                             else -1)),
                                  ("4", "TotalTime", lambda r: -r.total_time),
                                  ("6", "Function", lambda r: r.function),
                                  ("3", "OwnTime", lambda r: -r.own_time),
                                  ("1", "%Own", lambda r: -r.own)):
            tmux.keys(key)
            screen = self.wait_for_rows(tmux, lambda s: view_line(s).endswith("Sort " + title),
                                        "sort by " + title)
            rows = parse_rows(screen)
            self.assertGreater(len(rows), 3, screen)
            values = [value(r) for r in rows]
            self.assertEqual(values, sorted(values), "not sorted by %s:\n%s" % (title, screen))

        burner = self.filter_thread(tmux, r"Thread \d+ \(burner\)")
        rows = parse_rows(burner)
        self.assertEqual(rows[0].function, "burn", burner)
        self.assertEqual(rows[0].own, 100.0)
        self.assertFalse({"wait_here", "main_idle"} & set(by_function(rows)), burner)
        self.assertRegex(burner, r"On-CPU (9\d|100)\.\d%")
        waiter = self.filter_thread(tmux, r"Thread \d+ \(waiter-1\)")
        rows = parse_rows(waiter)
        self.assertEqual(rows[0].function, "wait_here", waiter)
        self.assertEqual(rows[0].own, 100.0)
        self.assertFalse({"burn", "main_idle"} & set(by_function(rows)), waiter)
        self.filter_thread(tmux, "All threads")

        tmux.tmux("resize-window", "-t", "top", "-x", "80", "-y", "12")
        screen = self.wait_for_rows(tmux, lambda s: len(s.splitlines()) == 12 and
                                    s.splitlines()[-1].startswith(" q quit"), "the resize")
        lines = screen.splitlines()
        self.assertTrue(all(len(line) <= 80 for line in lines), screen)
        rows = parse_rows(screen)
        self.assertEqual(len(rows), 12 - 7, screen)  # 4 header lines, a blank, titles, key hints
        wait = by_function(rows)["wait_here"]
        self.assertEqual(wait.label, "wait_here (.../top_target.py:%d)" % def_line("wait_here"))

        tmux.keys("q")
        status, _ = self.wait_for_exit(tmux)
        self.assertEqual(status, 0)
        self.assert_restored(tmux)

    def filter_thread(self, tmux, pattern):
        """Presses t until the view line shows the filter `pattern`; returns that screen."""
        for _ in range(8):
            before = view_line(tmux.screen())
            tmux.keys("t")
            screen = self.wait_for_rows(tmux, lambda s: view_line(s) != before, "a new filter")
            if re.search(r"\| %s \|" % pattern, view_line(screen)):
                return screen
        raise AssertionError("the thread filter never showed %s:\n%s" % (pattern, screen))

    def test_ctrl_c_restores_the_terminal(self):
        _, tmux = self.start()
        self.wait_for_rows(tmux)
        tmux.keys("C-c")
        status, _ = self.wait_for_exit(tmux)
        self.assertEqual(status, 0)
        self.assert_restored(tmux)

    def test_target_exit_restores_the_terminal_and_leaves_the_table(self):
        _, tmux = self.start(4)
        self.wait_for_rows(tmux)
        self.assertEqual(tmux.display("#{alternate_on}"), "1")
        status, screen = self.wait_for_exit(tmux)
        self.assertEqual(status, 0)
        self.assertIn("spyglass: the target exited", screen)
        self.assertEqual(parse_rows(screen)[0].function, "wait_here", screen)
        self.assertNotIn("\x1b", screen)
        self.assert_restored(tmux)


for _label in SCREEN_VERSIONS:
    _path, _reason = harness.find_interpreter(_label)
    _name = "TopScreenTests_" + _label.replace(".", "_")
    globals()[_name] = type(_name, (TopScreenCase, unittest.TestCase),
                            {"python": _path, "label": _label, "skip_reason": _reason})

if __name__ == "__main__":
    unittest.main()
