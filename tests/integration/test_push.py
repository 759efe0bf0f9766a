"""--push against local HTTP servers on 127.0.0.1 that the test starts (each serves in a loop
that ends by itself): a server that takes the windows gets each as a Pyroscope ingest request
whose body decodes as pprof with the windows' samples, the labels and the header asked for
(never printed); a server that answers 500 (retried after each back-off in full, the URL's
password never printed), one that never answers and one that is not there cost bounded
retries, flat memory, a complete recording and drops that are counted."""
import glob
import http.server
import os
import re
import socket
import subprocess
import sys
import threading
import time
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import pprof_decode  # noqa: E402

TOKEN = "secret-token-7f3a91"
PASSWORD = "secret-password-51c2"
SAMPLES = re.compile(r"spyglass: (?:the target exited; )?([\d,]+) samples? in")
PUSHED = re.compile(r"push: ([\d,]+) windows? sent to \S+; ([\d,]+) failed, ([\d,]+) dropped "
                    r"\(([\d,]+) attempts\)")


class Server(object):
    """A loopback HTTP server on a thread, answering POSTs with `status` (None: never
    answering until the test ends); it stops by itself after `lifetime` seconds."""

    def __init__(self, status=200, lifetime=120):
        self.requests = []
        self.times = []  # when each request came, in the same order
        self.release = threading.Event()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = self.rfile.read(length)
                outer.requests.append((self.path, dict(self.headers), body))
                outer.times.append(time.monotonic())
                if status is None:
                    outer.release.wait(lifetime)
                    return
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.server.timeout = 0.1
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self.stop = threading.Event()
        deadline = time.monotonic() + lifetime

        def serve():
            while not self.stop.is_set() and time.monotonic() < deadline:
                self.server.handle_request()

        self.thread = threading.Thread(target=serve, daemon=True)
        self.thread.start()

    def close(self):
        self.release.set()
        self.stop.set()
        self.thread.join(10)
        self.server.server_close()


def free_port():
    """A loopback port nothing listens on (bound, then closed)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def multipart(headers, body):
    boundary = re.search(r"boundary=(\S+)", headers["Content-Type"]).group(1).encode()
    parts = {}
    for chunk in body.split(b"--" + boundary)[1:]:
        if chunk.startswith(b"--"):
            break
        head, _, data = chunk.partition(b"\r\n\r\n")
        name = re.search(rb'name="([^"]+)"', head).group(1).decode()
        parts[name] = data[:-2]  # the CRLF before the next boundary
    return parts


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class PushTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.python = harness.any_interpreter()
        cls.dir = os.path.join(os.environ.get("TMPDIR", "/tmp"), "spyglass-tests", "push")
        os.makedirs(cls.dir, exist_ok=True)

    def setUp(self):
        for entry in os.listdir(self.dir):
            os.unlink(os.path.join(self.dir, entry))

    def record(self, target, url, seconds, *extra, **kwargs):
        args = [harness.SPYGLASS, "record", "--pid", str(target.pid), "--rate", "100", "-d",
                str(seconds), "--window", "1", "--push", url, "--app", "testapp", "--tag",
                "env=test", "--push-header", "Authorization: Bearer " + TOKEN] + [str(a) for a in extra]
        started = time.monotonic()
        process = subprocess.Popen(args, stderr=subprocess.PIPE, encoding="utf-8")
        rss = []
        watch = kwargs.get("watch_rss")
        if watch:
            for at in watch:
                while time.monotonic() - started < at and process.poll() is None:
                    time.sleep(0.05)
                if process.poll() is None:
                    rss.append(rss_kb(process.pid))
        _, err = process.communicate(timeout=120)
        return process.returncode, err, time.monotonic() - started, rss

    def test_windows_arrive_as_pprof_with_labels(self):
        server = Server(200)
        try:
            with harness.Target(self.python, "record_target.py") as target:
                code, err, _, _ = self.record(target, server.url + "/", 5)
                pid = target.pid
        finally:
            server.close()
        self.assertEqual(code, 0, err)
        self.assertNotIn(TOKEN, err)
        self.assertEqual(len(server.requests), 5, err)
        total = int(SAMPLES.search(err).group(1).replace(",", ""))
        pushed, previous_until = 0, None
        for path, headers, body in server.requests:
            url = urllib.parse.urlparse(path)
            self.assertEqual(url.path, "/ingest")
            query = dict(urllib.parse.parse_qsl(url.query))
            self.assertEqual(query["format"], "pprof")
            self.assertEqual(query["sampleRate"], "100")
            self.assertEqual(query["name"], "testapp{env=test,hostname=%s,pid=%d}" % (
                socket.gethostname(), pid))
            start, until = int(query["from"]), int(query["until"])
            self.assertIn(until - start, (1, 2))
            if previous_until is not None:
                self.assertLessEqual(abs(start - previous_until), 1)
            previous_until = until
            self.assertEqual(headers["Authorization"], "Bearer " + TOKEN)
            parts = multipart(headers, body)
            self.assertIn("sample_type_config", parts)
            profile = pprof_decode.decode(parts["profile"])
            types = [t for t, _ in profile["sample_types"]]
            self.assertEqual(types, ["samples", "wall", "cpu"])
            self.assertEqual(dict(profile["sample_types"])["cpu"], "nanoseconds")
            count = sum(pprof_decode.totals(profile).values())
            pushed += count
            # 3 threads for 1 s: 300 samples at 100 Hz on a quiet machine; fewer when ticks
            # come late on a loaded one, but then each sample weighs the time it stands for.
            self.assertGreater(count, 30)
            wall = sum(pprof_decode.totals(profile, "wall").values())
            self.assertAlmostEqual(wall, 3e9, delta=0.45e9)
            # CPU and wall are both there: the busy thread has CPU time (loose: shared cores).
            cpu = pprof_decode.totals(profile, "cpu")
            self.assertGreater(sum(cpu.values()), 0.1e9)
        self.assertEqual(pushed, total)
        self.assertRegex(err, r"push: 5 windows sent to \S+; 0 failed, 0 dropped")

    def check_not_pushed(self, err, windows):
        sent, failed, dropped, attempts = (int(x.replace(",", ""))
                                           for x in PUSHED.search(err).groups())
        self.assertEqual(sent, 0, err)
        self.assertEqual(failed + dropped, windows, err)
        self.assertIn("not pushed", err)
        self.assertNotIn(TOKEN, err)
        return failed, dropped, attempts

    def test_a_server_that_answers_500(self):
        # The URL carries a user and password: never printed (the summary, the warnings).
        server = Server(500)
        url = server.url.replace("http://", "http://pusher:%s@" % PASSWORD)
        try:
            with harness.Target(self.python, "record_target.py") as target:
                code, err, elapsed, _ = self.record(target, url, 4, "--push-timeout", 1)
        finally:
            server.close()
        self.assertEqual(code, 0, err)
        failed, dropped, attempts = self.check_not_pushed(err, 4)
        self.assertNotIn(PASSWORD, err)
        self.assertIn("http://***@127.0.0.1:", err)
        # One attempt and at most three retries per window, each counted and seen.
        self.assertEqual(attempts, len(server.requests))
        self.assertLessEqual(attempts, 4 * 4)
        self.assertGreaterEqual(failed, 1)
        self.assertIn("answered HTTP 500", err)
        # The retries of a window keep their back-off (0.5 s, then 1 s, then 2 s) although new
        # windows come every second (they used to cut it short). The tolerance is for the
        # requests' own latency.
        attempts_of = {}
        for (path, _, _), at in zip(server.requests, server.times):
            query = dict(urllib.parse.parse_qsl(urllib.parse.urlparse(path).query))
            attempts_of.setdefault((query["from"], query["until"]), []).append(at)
        gaps = [(window, k, later - earlier) for window, times in attempts_of.items()
                for k, (earlier, later) in enumerate(zip(times, times[1:]))]
        self.assertTrue(any(k >= 1 for _, k, _ in gaps), attempts_of)  # a 1 s back-off seen
        for window, k, gap in gaps:
            self.assertGreaterEqual(gap, 0.5 * 2 ** k - 0.15, (window, k, attempts_of))
        # The end waits for the backend one request's time (and a second) at most.
        self.assertLess(elapsed, 4 + 1 + 1 + 4)

    def test_a_server_that_never_answers(self):
        server = Server(None)
        out = os.path.join(self.dir, "w-%H%M%S.pb.gz")
        try:
            with harness.Target(self.python, "record_target.py") as target:
                code, err, elapsed, rss = self.record(target, server.url, 12, "--push-timeout",
                                                      1, "-o", out, watch_rss=(3, 11))
        finally:
            server.close()
        self.assertEqual(code, 0, err)
        failed, dropped, attempts = self.check_not_pushed(err, 12)
        # Each attempt waits out the timeout: far fewer than the windows fit, the queue is
        # full and its oldest windows are dropped.
        self.assertGreater(dropped, 0, err)
        self.assertLessEqual(attempts, 12 * 4)
        self.assertIn("Timeout", err)
        self.assertLess(elapsed, 12 + 1 + 1 + 5)
        # Memory: flat (the queue holds at most 8 small windows).
        self.assertEqual(len(rss), 2, rss)
        self.assertLess(rss[1] - rss[0], 16 * 1024, rss)
        # The recording itself was not held up: every window file, every sample.
        files = glob.glob(os.path.join(self.dir, "w-*.pb.gz"))
        self.assertEqual(len(files), 12)
        written = sum(sum(pprof_decode.totals(pprof_decode.decode_file(f)).values())
                      for f in files)
        self.assertEqual(written, int(SAMPLES.search(err).group(1).replace(",", "")))
        self.assertAlmostEqual(written, 12 * 300, delta=12 * 300 * 0.05)

    def test_no_server_at_all(self):
        url = "http://127.0.0.1:%d" % free_port()
        with harness.Target(self.python, "record_target.py") as target:
            code, err, elapsed, _ = self.record(target, url, 3, "--push-timeout", 1)
        self.assertEqual(code, 0, err)
        self.check_not_pushed(err, 3)
        self.assertIn("Couldn't connect to server", err)
        self.assertLess(elapsed, 3 + 1 + 1 + 4)

    def test_bad_push_options(self):
        for args, message in (
                (["--push", "ftp://x"], "not an http:// or https:// URL"),
                (["--push", "http://127.0.0.1:9"], "needs an --app"),
                (["--push", "http://127.0.0.1:9", "--app", "a", "--tag", "novalue"], "not k=v"),
                (["--push", "http://127.0.0.1:9", "--app", "a", "--push-header",
                  "Bearer " + TOKEN], "not 'Name: value'"),
                (["--app", "a"], "go with --push")):
            result = harness.spyglass("record", "--pid", os.getpid(), "-d", 1, "--window", 1,
                                      "-o", os.path.join(self.dir, "%H%M%S.txt"), *args)
            self.assertEqual(result.returncode, 2, (args, result.stderr))
            self.assertIn(message, result.stderr)
            self.assertNotIn(TOKEN, result.stderr)


if __name__ == "__main__":
    unittest.main()
