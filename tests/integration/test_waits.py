"""What off-CPU threads wait for, on 2.7, 3.8, 3.12 and 3.13: a target (workloads/wait_target.py)
with one thread blocked in each way (a TCP recv from a server this test runs on loopback, a UDP
recvfrom, a pipe read, a FIFO open and read, flock, time.sleep, a contended Lock, Queue.get,
select on several sockets, an idle asyncio loop) and one with a thread waiting for the GIL
behind a CPU-bound one. Each is asserted in `dump` (text and JSON) and in a `record` output
(folded stacks: the leaf pseudo-frame), with --waits=kind and --no-waits for privacy.
"""
import json
import os
import re
import shutil
import socket
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

VERSIONS = ["2.7", "3.8", "3.12", "3.13"]
SLEEP_CALLS = ("clock_nanosleep", "nanosleep", "pselect6", "select")  # 2.7/3.8 sleep in select


class Server(object):
    """A TCP server on 127.0.0.1 that accepts connections and never sends a byte."""

    def __enter__(self):
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen(16)
        self.port = self.socket.getsockname()[1]
        self.accepted = []
        self.thread = threading.Thread(target=self.serve)
        self.thread.daemon = True
        self.thread.start()
        return self

    def serve(self):
        while True:
            try:
                connection, _ = self.socket.accept()
            except OSError:
                return
            self.accepted.append(connection)

    def __exit__(self, *exc):
        for connection in self.accepted:
            connection.close()
        self.socket.close()
        return False


def versions(*labels):
    """Runs the test on these interpreters only; on the others it skips, saying why."""
    def wrap(test):
        def run(self):
            if self.label not in labels:
                reason = "%s: not on Python %s (only %s)" % (test.__name__, self.label,
                                                               ", ".join(labels))
                sys.stderr.write("SKIP %s\n" % reason)
                raise unittest.SkipTest(reason)
            return test(self)
        run.__name__ = test.__name__
        return run
    return wrap


def folded_leaves(path, tid):
    """{leaf frame: samples} of one thread's lines of a folded file recorded with --threads."""
    leaves = {}
    prefix = "thread %d " % tid
    with open(path, encoding="utf-8") as f:
        for line in f:
            stack, count = line.rstrip("\n").rsplit(" ", 1)
            if stack.startswith(prefix):
                leaf = stack.split(";")[-1]
                leaves[leaf] = leaves.get(leaf, 0) + int(count)
    return leaves


class WaitTests(harness.InterpreterCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="spyglass-waits-")

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def dump(self, pid, *extra):
        result = harness.spyglass("dump", "--pid", pid, "--json", *extra)
        self.assertEqual(result.returncode, 0, result.stderr)
        return json.loads(result.stdout)

    def waits_by_tid(self, dump):
        return dict((t["tid"], t["wait"]) for t in dump["threads"])

    def expected(self, report, port):
        """thread name -> (kind, syscalls, target or a pattern, detail pattern or None)."""
        facts = report["facts"]
        lock = re.compile(r"lock 0x[0-9a-f]+$") if self.version() < (3, 13) else "lock"
        expected = {
            "tcp": ("socket", ("recvfrom",), "tcp 127.0.0.1:%d" % port,
                    r"peer 127\.0\.0\.1:%d, ESTAB" % port),
            "udp": ("socket", ("recvfrom",), "udp on 127.0.0.1:%d" % facts["udp_port"], None),
            "pipe": ("pipe", ("read",), "pipe:[%d]" % facts["pipe_inode"], None),
            "fifo_open": ("pipe", ("open", "openat"), "fifo " + facts["open_fifo"], None),
            "fifo_read": ("pipe", ("read",), "fifo " + facts["read_fifo"], None),
            "flock": ("file-lock", ("flock",), "file " + facts["lock_file"], None),
            "sleeper": ("sleep", SLEEP_CALLS, None, None),
            "locked": ("lock", ("futex",), lock, r"futex 0x[0-9a-f]+"),
            "queue": ("lock", ("futex",), "queue.Queue.get", None),
            "select": ("poll", ("pselect6", "select"),
                       re.compile(r"3 fds: (tcp 127\.0\.0\.1:%d|udp on 127\.0\.0\.1:%d)"
                                  % (port, facts["udp_port"])), None),
        }
        if self.version() >= (3, 0):
            expected["loop"] = ("idle-loop", ("epoll_wait",), "asyncio loop", None)
        return expected

    def matches(self, wait, kind, syscalls, target, detail):
        if wait is None or wait["kind"] != kind or wait.get("syscall") not in syscalls:
            return False
        got = wait.get("target")
        if target is None:
            ok = got is None
        elif hasattr(target, "match"):
            ok = got is not None and target.match(got) is not None
        else:
            ok = got == target
        return ok and (detail is None or re.search(detail, wait.get("detail", "")) is not None)

    def dump_until(self, pid, tids, expected, *extra):
        """Dumps until every thread waits as expected (a thread may still be on its way into
        its call when the target signals); the last dump's mismatches fail the test."""
        for _ in range(20):
            dump = self.dump(pid, *extra)
            waits = self.waits_by_tid(dump)
            wrong = dict((name, waits.get(tids[name])) for name, e in expected.items()
                         if not self.matches(waits.get(tids[name]), *e))
            if not wrong:
                return dump
        self.fail("waits not as expected: %s\nexpected: %s" % (wrong, expected))

    def test_each_way_of_blocking_in_dump_and_record(self):
        with Server() as server:
            with harness.Target(self.python, "wait_target.py", "blocking", server.port,
                                self.dir) as target:
                tids = dict((name, t["tid"]) for name, t in target.report["threads"].items())
                expected = self.expected(target.report, server.port)
                self.assertEqual(set(expected), set(tids))
                self.dump_until(target.pid, tids, expected)

                text = harness.spyglass("dump", "--pid", target.pid)
                self.assertEqual(text.returncode, 0, text.stderr)
                self.assertIn("  Waiting: socket: recvfrom tcp 127.0.0.1:%d (fd " % server.port,
                              text.stdout)
                self.assertIn("  Waiting: lock: futex queue.Queue.get", text.stdout)

                output = os.path.join(self.dir, "waits.txt")
                result = harness.spyglass("record", "--pid", target.pid, "-d", "1", "--threads",
                                          "-o", output)
                self.assertEqual(result.returncode, 0, result.stderr)
                for name, (kind, syscalls, want, _) in expected.items():
                    leaves = folded_leaves(output, tids[name])
                    total = sum(leaves.values())
                    self.assertGreater(total, 50, (name, leaves))
                    if hasattr(want, "match"):
                        good = sum(n for leaf, n in leaves.items() if leaf.startswith("[wait ") and
                                   want.match(leaf[6:-1].split(" ", 1)[-1]))
                    else:
                        # A select() or poll() on nothing is a sleep, and its frame says so.
                        frames = ["[wait %s%s]" % (call, "" if want is None else " " + want)
                                  for call in syscalls if not (kind == "sleep" and
                                                               "sleep" not in call)]
                        frames += ["[wait %s sleep]" % call for call in syscalls
                                   if kind == "sleep" and "sleep" not in call]
                        good = sum(leaves.get(frame, 0) for frame in frames)
                    # Not one sample of a thread parked for good may say something else.
                    self.assertEqual(good, total, (name, leaves))

    def test_waits_kind_keeps_no_address_port_or_path(self):
        with Server() as server:
            with harness.Target(self.python, "wait_target.py", "blocking", server.port,
                                self.dir) as target:
                tids = dict((name, t["tid"]) for name, t in target.report["threads"].items())
                full = self.expected(target.report, server.port)
                kinds = dict((name, (e[0],)) for name, e in full.items())
                for _ in range(20):
                    waits = self.waits_by_tid(self.dump(target.pid, "--waits=kind"))
                    got = dict((name, waits.get(tid)) for name, tid in tids.items())
                    if all(got[name] == {"kind": kinds[name][0]} for name in tids):
                        break
                else:
                    self.fail("--waits=kind dump: %s" % got)
                output = os.path.join(self.dir, "kind.txt")
                result = harness.spyglass("record", "--pid", target.pid, "-d", "0.5",
                                          "--waits=kind", "-o", output)
                self.assertEqual(result.returncode, 0, result.stderr)
                with open(output, encoding="utf-8") as f:
                    text = f.read()
                for secret in [str(server.port), self.dir, "127.0.0.1", "pipe:[", "0x"]:
                    self.assertNotIn(secret, text)
                self.assertIn("[wait socket] ", text)
                self.assertIn("[wait file-lock] ", text)
                none = os.path.join(self.dir, "none.txt")
                result = harness.spyglass("record", "--pid", target.pid, "-d", "0.5",
                                          "--no-waits", "-o", none)
                self.assertEqual(result.returncode, 0, result.stderr)
                with open(none, encoding="utf-8") as f:
                    text = f.read()
                self.assertNotIn("[wait ", text)
                self.assertIn("[off-cpu] ", text)
                self.assertIsNone(self.dump(target.pid, "--no-waits")["threads"][0]["wait"])

    def test_a_thread_waiting_for_the_gil(self):
        with harness.Target(self.python, "wait_target.py", "gil") as target:
            spinners = [target.report["threads"][name]["tid"] for name in ("burner", "gil_waiter")]
            # Two threads spin for one GIL; which one waits is the interpreter's choice (2.7's
            # holder takes the GIL straight back, so on a busy machine whichever started first
            # may hold it throughout). One look is one moment: look until one of them waits.
            for _ in range(50):
                waits = self.waits_by_tid(self.dump(target.pid))
                wait = next((waits[tid] for tid in spinners if waits[tid] is not None), None)
                if wait is not None:
                    break
            self.assertEqual(wait, {"kind": "gil", "syscall": "futex", "target": "GIL",
                                    "detail": wait and wait.get("detail")}, wait)
            self.assertRegex(wait["detail"], r"^futex 0x[0-9a-f]+$")
            output = os.path.join(self.dir, "gil.txt")
            result = harness.spyglass("record", "--pid", target.pid, "-d", "1", "--threads",
                                      "-o", output)
            self.assertEqual(result.returncode, 0, result.stderr)
            off_cpu = {}
            for tid in spinners:
                for leaf, n in folded_leaves(output, tid).items():
                    if leaf.startswith("[wait ") or leaf == "[off-cpu]":
                        off_cpu[leaf] = off_cpu.get(leaf, 0) + n
            # At any moment one of the two is off-CPU, and when it is, it is waiting for the
            # GIL (a sample may catch it between two calls).
            self.assertGreater(sum(off_cpu.values()), 10, off_cpu)
            self.assertGreaterEqual(off_cpu.get("[wait futex GIL]", 0),
                                    0.9 * sum(off_cpu.values()), off_cpu)
            self.assertFalse([leaf for leaf in off_cpu if "lock" in leaf], off_cpu)

    @versions("3.8", "3.12", "3.13")
    def test_top_waiting_on_view(self):
        with Server() as server:
            with harness.Target(self.python, "wait_target.py", "blocking", server.port,
                                self.dir) as target:
                result = harness.spyglass("top", "--pid", target.pid, "--once", "-d", "1",
                                          "--waiting")
                self.assertEqual(result.returncode, 0, result.stderr)
                self.assertIn("View wall | Waiting on | Cumulative", result.stdout)
                # %Wall Time Threads Kind  Waiting on  (mostly under)
                row = re.compile(r"^\s*[\d.]+%\s+\S+\s+\d+ (\S+)\s+(.*?)  \((.*)\)$")
                kinds = dict((m.group(2), m.group(1)) for m in map(row.match,
                                                                  result.stdout.splitlines()) if m)
                for label, kind in [("tcp 127.0.0.1:%d" % server.port, "socket"),
                                    ("queue.Queue.get", "lock"), ("asyncio loop", "idle-loop"),
                                    ("file " + target.report["facts"]["lock_file"],
                                     "file-lock")]:
                    self.assertEqual(kinds.get(label), kind, result.stdout)


harness.interpreter_tests(WaitTests, globals(), VERSIONS)

if __name__ == "__main__":
    unittest.main()
