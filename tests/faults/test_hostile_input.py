"""Input that crashed, hung or got a wrong answer (issue 23, items 8, 10, 11 and 12): every
numeric option refuses nan, inf, overflow (also once in nanoseconds), empty values, spaces,
hex and octal spellings and junk in one line with exit 2, and keeps its documented spellings;
report and diff refuse a directory or a device in one line (exit 1), read a pipe up to a
bound (SPYGLASS_MAX_INPUT_MB) and stop a gzip bomb at it; the first Ctrl-C after a recording
ends cuts a push to a server that never answers short, and the window files are written."""
import glob
import gzip
import os
import resource
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faults  # noqa: E402
from faults import harness  # noqa: E402

WINDOW = "--window must be a number of seconds from 1 to 31536000, not '%s'"
PUSH_TIMEOUT = "--push-timeout must be a number of seconds from 0.1 to 600, not '%s'"
KEEP = ("--keep must be a duration above zero and at most 1000000000 seconds: seconds or "
        "numbers with s, m, h or d (3600, 90m, 24h, 1h30m), not '%s'")
RATE = "--rate must be a number of samples per second from 0.001 to 100000, not '%s'"
DURATION = "--duration must be a number of seconds > 0, or 'unlimited', not '%s'"
DELAY = "--delay must be a number of seconds from 0.1 to 3600, not '%s'"
PID = "--pid must be a process id (a positive integer), not '%s'"
TIME = ("%s must be seconds from the start (90, 1m30s; at most 1000000000), a time of day "
        "(14:03:05) or a date and time (2024-05-01T14:03:05), not '%s'")
TOP = "--top must be a whole number of frames from 1 to 1000000, not '%s'"


class HostileInputTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="spyglass-hostile-")
        cls.raw = os.path.join(cls.dir, "rec.sgr")
        cls.folded = os.path.join(cls.dir, "rec.txt")
        with harness.Target(faults.any_python(), "record_target.py") as target:
            result = harness.spyglass("record", "--pid", target.pid, "-d", 1, "-o", cls.folded,
                                      "--raw", cls.raw, "--hideprogress", timeout=60)
        if result.returncode != 0:
            raise AssertionError(result.stderr)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)

    def assert_one_line(self, result, code, line):
        self.assertEqual(result.returncode, code, result.stderr)
        self.assertEqual(result.stderr.splitlines(), [line], result.stderr)
        self.assertEqual(result.stdout, "")

    def assert_usage(self, command, args, message):
        out = os.path.join(self.dir, "never-%s.txt")
        full = list(command) + [str(a) for a in args]
        full = [a.replace("OUT", out) for a in full]
        with self.subTest(" ".join(full)):
            result = harness.spyglass(*full, timeout=20)
            self.assert_one_line(result, 2, "spyglass: error: %s (see spyglass %s --help)" % (
                message, command[0]))
            self.assertEqual(glob.glob(os.path.join(self.dir, "never-*")), [])

    # --- item 8: one parser for every numeric option ---

    def record(self, *args):
        return ["record", "--pid", str(os.getpid()), "-d", "0.3", "--hideprogress"] + list(args)

    def test_window_values(self):
        for value in ("nan", "inf", "0x10", " 5", "5 ", "", "010", "1e400", "-5", "5s", "0"):
            self.assert_usage(self.record("-o", "OUT"), ["--window", value], WINDOW % value)

    def test_push_timeout_values(self):
        push = self.record("--window", "1", "-o", "OUT", "--push", "http://127.0.0.1:9",
                           "--app", "a")
        for value in ("nan", "inf", "", "0x10", "1e999", " 1", "1x", "0.01"):
            self.assert_usage(push, ["--push-timeout", value], PUSH_TIMEOUT % value)

    def test_keep_values(self):
        windows = self.record("--window", "1", "-o", "OUT")
        for value in ("", "nan", "1.5.5h", "30m1h", "1e12", "99999999d", " 1h", "1h30", "-1h",
                      "0x10", "0"):
            self.assert_usage(windows, ["--keep", value], KEEP % value)

    def test_sampling_values(self):
        for command in (self.record("-o", "OUT"), ["top", "--once", "--pid", str(os.getpid())]):
            for value in ("010", "0x10", " 100", ""):
                self.assert_usage(command, ["-r", value], RATE % value)
            for value in ("0x10", "010", " 1", ""):
                self.assert_usage(command, ["-d", value], DURATION % value)
        for value in ("0x10", "", " 1", "010"):
            self.assert_usage(["top", "--once", "--pid", str(os.getpid())], ["--delay", value],
                              DELAY % value)
        for command in (["record", "-d", "0.3", "-o", "OUT"], ["dump"]):
            for value in ("0x10", "010", " 1", ""):
                self.assert_usage(command, ["--pid", value], PID % value)

    def test_report_from_and_to(self):
        # The issue: --from 1e12 kept every sample (seconds to ns overflowed), --to 1e12 none.
        for option in ("--from", "--to"):
            for value in ("1e12", "1e400", "", "nan", "inf", "0x10", " 1", "1 ", "-1", "010",
                          "1s2", "25:99", "2300-01-01T00:00:00", "14:03 "):
                self.assert_usage(["report", self.raw, "-o", "OUT"], [option, value],
                                  TIME % (option, value))

    def test_report_pid(self):
        for value in ("0x10", "0", "-1", "", "1.5"):
            self.assert_usage(["report", self.raw, "-o", "OUT"], ["--pid", value], PID % value)

    def test_diff_top(self):
        for value in ("-1", "", "99999999999999999999", "0x10", " 5", "010", "0", "1.5", "nan"):
            self.assert_usage(["diff", self.raw, self.folded], ["--top", value], TOP % value)

    def test_documented_spellings_still_work(self):
        out = os.path.join(self.dir, "slice.txt")
        for args in (["--from", "0.5", "--to", "1s"], ["--from", "0", "--to", "1m30s"],
                     ["--to", "1h"], ["--from", "+0.25"], ["--from", "00:00"],
                     ["--to", "2200-01-01T00:00:00Z"], ["--pid", "+1"]):
            with self.subTest(" ".join(args)):
                result = harness.spyglass("report", self.raw, "-o", out, *args, timeout=20)
                self.assertEqual(result.returncode, 0, result.stderr)
        result = harness.spyglass("diff", self.raw, self.folded, "--top", "+3", timeout=20)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(len(result.stdout.splitlines()), 2 + 3, result.stdout)

    # --- items 10 and 11: file inputs ---

    def test_a_directory_is_one_line(self):
        # The issue: diff big.sgr /tmp aborted with an uncaught std::ios_failure (exit 134).
        line = "spyglass: error: cannot read %s: it is a directory, not a recording" % self.dir
        for args in (["diff", self.raw, self.dir], ["diff", self.dir, self.folded],
                     ["report", self.dir, "-o", os.path.join(self.dir, "never.txt")]):
            with self.subTest(" ".join(args)):
                self.assert_one_line(harness.spyglass(*args, timeout=20), 1, line)

    def test_an_endless_device_is_refused(self):
        # The issue: diff big.sgr /dev/zero grew to 3.6 GB in 6 s and never ended.
        line = "spyglass: error: cannot read /dev/zero: it is a character device, not a recording"
        for args in (["diff", self.raw, "/dev/zero"], ["diff", "/dev/zero", self.raw],
                     ["report", "/dev/zero", "-o", os.path.join(self.dir, "never.txt")]):
            with self.subTest(" ".join(args)):
                self.assert_one_line(harness.spyglass(*args, timeout=20), 1, line)

    def spyglass_reading(self, producer, *args, **kwargs):
        """spyglass ARGS with its standard input a pipe from `producer` (a command)."""
        feeder = subprocess.Popen(producer, stdout=subprocess.PIPE)
        try:
            return harness.spyglass(*args, stdin=feeder.stdout, timeout=20, **kwargs)
        finally:
            feeder.stdout.close()
            feeder.kill()
            feeder.wait()

    def test_an_endless_pipe_stops_at_the_bound(self):
        env = dict(os.environ, SPYGLASS_MAX_INPUT_MB="4")
        result = self.spyglass_reading(["cat", "/dev/zero"], "diff", self.raw, "/dev/stdin",
                                       env=env)
        self.assert_one_line(result, 1, "spyglass: error: /dev/stdin holds more than 4 MiB, the "
                             "most a pprof or folded input may hold, read whole into memory "
                             "(SPYGLASS_MAX_INPUT_MB raises it)")

    def test_a_recording_through_a_pipe_is_read(self):
        # A pipe is read once, whole: the first bytes are not lost to a probe.
        for source in (self.raw, self.folded):
            with self.subTest(source):
                result = self.spyglass_reading(["cat", source], "diff", source, "/dev/stdin",
                                               "--top", 3)
                self.assertEqual(result.returncode, 0, result.stderr)
                rows = result.stdout.splitlines()[2:]
                self.assertEqual(len(rows), 3, result.stdout)
                for row in rows:
                    self.assertEqual(row.split()[2], "+0.00%", result.stdout)
        out = os.path.join(self.dir, "piped.txt")
        result = self.spyglass_reading(["cat", self.raw], "report", "/dev/stdin", "-o", out,
                                       "--thread", "busy")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertRegex(result.stderr, r"report: [1-9][\d,]* samples of")

    def gzip_bomb(self, megabytes):
        path = os.path.join(self.dir, "bomb%d.pb.gz" % megabytes)
        compressor = zlib.compressobj(9, zlib.DEFLATED, 31)  # gzip
        chunk = b"\0" * (1 << 20)
        with open(path, "wb") as f:
            for _ in range(megabytes):
                f.write(compressor.compress(chunk))
            f.write(compressor.flush())
        return path

    def test_a_gzip_bomb_stops_at_the_bound(self):
        small = self.gzip_bomb(8)
        result = harness.spyglass("diff", self.raw, small, timeout=20,
                                  env=dict(os.environ, SPYGLASS_MAX_INPUT_MB="4"))
        self.assert_one_line(result, 1, "spyglass: error: %s decompresses to more than 4 MiB, the "
                             "most an input may hold in memory (SPYGLASS_MAX_INPUT_MB raises it)"
                             % small)
        # The default bound (256 MiB), and memory that stays below it.
        big = self.gzip_bomb(300)
        started = subprocess.Popen([harness.SPYGLASS, "diff", self.raw, big],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   encoding="utf-8", preexec_fn=limit_memory)
        out, err = started.communicate(timeout=60)
        self.assertEqual(started.returncode, 1, err)
        self.assertEqual(err, "spyglass: error: %s decompresses to more than 256 MiB, the most "
                         "an input may hold in memory (SPYGLASS_MAX_INPUT_MB raises it)\n" % big)
        self.assertEqual(gzip.open(big).read(16), b"\0" * 16)

    def test_a_damaged_pprof_is_one_line(self):
        # A string that is not UTF-8: protobuf printed a log line of its own before ours.
        path = os.path.join(self.dir, "latin1.pb.gz")
        with gzip.open(path, "wb") as f:
            f.write(b"\x32\x05caf\xe9!")  # string_table: ["caf\xe9!"]
        result = harness.spyglass("diff", self.raw, path, timeout=20)
        self.assert_one_line(result, 1, "spyglass: error: %s is not a pprof profile, a raw "
                             "recording or folded stacks" % path)

    def test_a_bad_input_bound_is_a_usage_error(self):
        for value in ("nan", "0", "0x10", "", "4 ", "1e3"):
            with self.subTest(value):
                result = harness.spyglass("diff", self.raw, self.folded, timeout=20,
                                          env=dict(os.environ, SPYGLASS_MAX_INPUT_MB=value))
                self.assert_one_line(result, 2, "spyglass: error: SPYGLASS_MAX_INPUT_MB must be "
                                     "a whole number of MiB from 1 to 1048576, not '%s'" % value)

    # --- item 12: a push that hangs ---

    def test_first_ctrl_c_cuts_a_hung_push_short(self):
        # A server that takes connections (the kernel's backlog) and never answers.
        server = socket.socket()
        server.bind(("127.0.0.1", 0))
        server.listen(16)
        url = "http://127.0.0.1:%d" % server.getsockname()[1]
        pattern = os.path.join(self.dir, "hung-%H%M%S.txt")
        try:
            with harness.Target(faults.any_python(), "record_target.py") as target:
                recorder = faults.start_record(
                    "--pid", target.pid, "-d", 2, "--window", 1, "-o", pattern, "--push", url,
                    "--app", "hung", "--push-timeout", 600, "--hideprogress")
                try:
                    err = read_until(recorder, "spyglass: push: waiting up to", 30)
                except BaseException:
                    recorder.kill()
                    recorder.communicate()
                    raise
                recorder.send_signal(signal.SIGINT)
                code, _, rest = faults.finish(recorder, timeout=20)
        finally:
            server.close()
        err += rest
        self.assertEqual(code, 0, err)
        self.assertIn("(Ctrl-C gives up)", err)
        # The window under way failed, the one queued behind it was dropped.
        self.assertRegex(err, r"push: 0 windows sent to \S+; 1 failed, 1 dropped", err)
        self.assertIn("given up at the end of the recording (Ctrl-C)", err)
        self.assertEqual(len(glob.glob(os.path.join(self.dir, "hung-*.txt"))), 2, err)


def limit_memory():
    """The child's address space: a bound the old reader (which grew without one) broke. Not
    for a sanitizer's binary, which reserves terabytes of shadow memory."""
    if "asan" not in harness.SPYGLASS:
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))


def read_until(process, text, timeout):
    """stderr of `process` up to and including the line that holds `text`; fails (instead of
    hanging) when it does not come within `timeout` seconds."""
    data = ""
    deadline = time.monotonic() + timeout
    fd = process.stderr.fileno()
    while text not in data:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError("no %r on stderr within %ds: %s" % (text, timeout, data))
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            raise AssertionError("stderr closed before %r: %s" % (text, data))
        data += chunk.decode("utf-8", "replace")
    return data


if __name__ == "__main__":
    unittest.main()
