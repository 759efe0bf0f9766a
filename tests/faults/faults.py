"""Shared pieces of the fault tests (tests/faults/): the integration harness (reused by path),
a seeded random generator whose seed is printed, a recorder to signal at chosen moments, the
checks that a profile file is complete in its format, and that a target was left unharmed.

SPYGLASS_FAULT_SEED=N replays a run's random moments.
"""
import gzip
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import xml.etree.ElementTree as ElementTree

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "integration"))
import harness  # noqa: E402,F401  (re-exported for the tests)

FORMATS = {"folded": ".txt", "speedscope": ".json", "flamegraph": ".svg", "pprof": ".pb.gz",
           "chrometrace": ".trace.json", "raw": ".sgr"}


def seeded_random(test_name):
    """A random.Random for one test, from SPYGLASS_FAULT_SEED or the clock; prints the seed."""
    seed = int(os.environ.get("SPYGLASS_FAULT_SEED") or int(time.time() * 1000) % 1000000)
    sys.stderr.write("%s: SPYGLASS_FAULT_SEED=%d\n" % (test_name, seed))
    return random.Random(seed), seed


def any_python():
    for label in harness.EXPECTED:
        path, _ = harness.find_interpreter(label)
        if path:
            return path
    raise unittest.SkipTest("no Python interpreter installed")


def installed_pythons():
    """[(label, path)] of every installed interpreter (in SPYGLASS_TEST_VERSIONS when set; the
    others are printed)."""
    found = []
    selected = harness.selected_versions()
    for label in harness.EXPECTED:
        path, reason = harness.find_interpreter(label)
        if selected is not None and label not in selected:
            path, reason = None, "not in SPYGLASS_TEST_VERSIONS"
        if path:
            found.append((label, path))
        else:
            sys.stderr.write("SKIP %s: %s\n" % (label, reason))
    return found


class Workdir(object):
    """A fresh directory for outputs, removed afterwards."""

    def __enter__(self):
        self.path = tempfile.mkdtemp(prefix="spyglass-faults-")
        return self

    def file(self, name):
        return os.path.join(self.path, name)

    def entries(self):
        return sorted(os.listdir(self.path))

    def __exit__(self, *exc):
        for name in os.listdir(self.path):
            full = os.path.join(self.path, name)
            if os.path.isdir(full) and not os.path.islink(full):
                os.rmdir(full)
            else:
                os.unlink(full)
        os.rmdir(self.path)
        return False


def temporaries(directory):
    """Temporary outputs left in a directory (.NAME.spyglass-PID-RANDOM.tmp)."""
    return [n for n in os.listdir(directory) if ".spyglass-" in n and n.endswith(".tmp")]


def start_record(*args, **kwargs):
    """Starts `spyglass record ARGS` (stdout/stderr piped, text)."""
    return subprocess.Popen([harness.SPYGLASS, "record"] + [str(a) for a in args],
                            stdout=kwargs.get("stdout", subprocess.PIPE),
                            stderr=subprocess.PIPE, encoding="utf-8")


def finish(process, timeout=60):
    """(returncode, stdout, stderr) once it has exited; fails instead of hanging."""
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        raise AssertionError("spyglass did not exit within %ds: %s" % (timeout, err))
    return process.returncode, out, err


def stopped_threads(pid):
    """{tid: state} of the threads in T or t: a target left stopped."""
    return {tid: s for tid, s in harness.task_states(pid).items() if s in "tT"}


def wait_for_state(pid, wanted, timeout=10):
    """Waits until every thread of pid is in one of the `wanted` states; returns the states."""
    deadline = time.monotonic() + timeout
    while True:
        states = harness.task_states(pid)
        if states and all(s in wanted for s in states.values()):
            return states
        if time.monotonic() > deadline:
            raise AssertionError("threads of %d not in %s: %s" % (pid, wanted, states))
        time.sleep(0.01)


# --- complete files, per format ------------------------------------------------------------

def check_folded(test, path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    test.assertTrue(text.endswith("\n"), "folded file does not end with a newline: %r"
                    % text[-80:])
    lines = text.splitlines()
    test.assertTrue(lines, "empty folded file")
    for line in lines:
        frames, _, count = line.rpartition(" ")
        test.assertTrue(frames and count.isdigit() and int(count) > 0, "bad line %r" % line)
    return lines


def check_speedscope(test, path):
    with open(path, encoding="utf-8") as f:
        document = json.load(f)
    test.assertIn("speedscope", document["$schema"])
    frames = document["shared"]["frames"]
    for profile in document["profiles"]:
        test.assertEqual(len(profile["samples"]), len(profile["weights"]))
        for sample in profile["samples"]:
            test.assertTrue(all(0 <= i < len(frames) for i in sample))
    return document


def check_svg(test, path):
    root = ElementTree.parse(path).getroot()
    test.assertTrue(root.tag.endswith("svg"), root.tag)
    return root


def check_pprof(test, path):
    with gzip.open(path, "rb") as f:
        f.read()  # the whole gzip stream, with its CRC
    try:
        result = subprocess.run(["go", "tool", "pprof", "-raw", path], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, encoding="utf-8", timeout=300,
                                env=dict(os.environ, HOME=os.environ.get("HOME", "/tmp")))
    except OSError as error:
        test.fail("go tool pprof is needed (golang-go, installed by scripts/setup): %s" % error)
    test.assertEqual(result.returncode, 0, result.stderr)
    test.assertIn("samples/count", result.stdout)
    return result.stdout


def check_chrometrace(test, path):
    from test_chrometrace import check_trace  # tests/integration, on the path with harness
    with open(path, encoding="utf-8") as f:
        document = json.load(f)
    tracks, _ = check_trace(test, document)
    test.assertTrue(any(tracks.values()), "no slice in the trace")
    return document


def check_raw(test, path):
    """A raw recording (--raw, written beside a folded -o PATH.txt): `spyglass report` reads
    it to its last block, not cut short, and renders what the folded output of the same capture
    holds, byte for byte."""
    folded = path[:-len(".sgr")] + ".txt"
    again = path + ".txt"
    result = subprocess.run([harness.SPYGLASS, "report", path, "-o", again],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, encoding="utf-8",
                            timeout=harness.TIMEOUT)
    test.assertEqual(result.returncode, 0, result.stderr)
    test.assertNotIn("cut short", result.stderr)
    check_folded(test, again)
    with open(folded, "rb") as direct, open(again, "rb") as reported:
        test.assertEqual(direct.read(), reported.read(), "report of %s" % path)
    os.unlink(again)
    return result


CHECKS = {"folded": check_folded, "speedscope": check_speedscope, "flamegraph": check_svg,
          "pprof": check_pprof, "chrometrace": check_chrometrace, "raw": check_raw}


def output_args(path, format_name):
    """record's arguments that write `path` in its format: -o PATH, or for the raw recording
    --raw PATH beside a folded -o (check_raw compares the two)."""
    if format_name == "raw":
        return ["-o", path[:-len(".sgr")] + ".txt", "--raw", path]
    return ["-o", path]


def check_complete(test, path, format_name):
    """The file at `path` is a whole profile in its format (parsed by a real consumer)."""
    return CHECKS[format_name](test, path)


def send(process, signal_number):
    try:
        process.send_signal(signal_number)
    except ProcessLookupError:
        pass


SIGNAL_NAMES = {signal.SIGINT: "SIGINT", signal.SIGTERM: "SIGTERM"}
