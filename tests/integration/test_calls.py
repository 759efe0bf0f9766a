"""Call durations from samples (`-f calls`), against the target's own measurement of every call.

call_durations.py calls work(ms) with ms 20 (90%) or 200 (10%), a 3 ms gap in another function
between calls, and writes the measured length and the wall-clock start and end of every call.
The test notes when spyglass starts sampling (its resolver thread appears), so the truth is the
calls that began and ended inside the recording's window: exactly what spyglass counts as calls
(a call running at the first or last sample is open, counted apart). spyglass's p50, p99 and max
must be within one period + 5% of the truth's, its call count within 5%, and no call of work
may be short; a histogram bucket between the two lengths (two 20 ms calls merged into one, a
200 ms call cut in two) that the truth does not have fails. Before 3.11 two calls are told
apart only by a sample in the gap between them (documented): a gap the sampler missed (late
ticks on a busy machine; it shows as a call of between() fewer) is allowed to merge its two
calls, and nothing else is. Total and CPU time are checked against the truth's overlap with the
window, in sleep (no CPU) and burn (all CPU) modes.

Also: self against total time (shop_calls.py: OrderService.place only calls Ledger.record),
back-to-back calls on 3.11+ (no gap: told apart by their arguments), --mode cpu against the
target's CPU time per call, the raw recording replayed by report (-f calls and --calls: the same
figures), and report --calls refusing a file that is not a raw recording.
"""
import json
import math
import os
import re
import subprocess
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

RATE = 1000
PERIOD_MS = 1000.0 / RATE
SECONDS = 4
SHOP_SECONDS = 4
SEED = 26
# The sleep and burn tests run on every interpreter. What does not depend on the interpreter's
# layout runs on a few (the suite's time): --mode cpu, self against total and the raw replay on
# an object-frame version, a data-stack one and the newest; back-to-back calls (told apart by
# argument slots, whose writers are per minor: python/arg_slots.cpp) on one of each minor 3.11+.
CPU_MODE_LABELS = ["2.7", "3.12", "debian-sid-3.15"]
SHOP_LABELS = ["3.8", "3.12", "debian-sid-3.15"]
BACK_TO_BACK_LABELS = ["3.11", "3.12", "3.13", "debian-sid-3.14", "debian-sid-3.15"]


def workdir(name):
    # Under /tmp (or $TMPDIR): Debian sid's interpreters see both at the same path.
    directory = os.path.join(os.environ.get("TMPDIR", "/tmp"), "spyglass-tests", "calls", name)
    os.makedirs(directory, exist_ok=True)
    for entry in os.listdir(directory):
        os.unlink(os.path.join(directory, entry))
    return directory


def has_resolver_thread(pid):
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return False
    for tid in tasks:
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                if f.read().strip() == "spyglass-res":
                    return True
        except OSError:
            pass
    return False


def record_window(args, timeout=120):
    """Runs `spyglass record ARGS`; returns (CompletedProcess-like, start): start is time.time()
    when spyglass began sampling (its resolver thread, started with the clock, appeared; polled
    every 0.2 ms). The recording's window is [start, start + duration]."""
    recorder = subprocess.Popen([harness.SPYGLASS, "record"] + [str(a) for a in args],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                encoding="utf-8")
    start = None
    try:
        deadline = time.monotonic() + 60
        while start is None and recorder.poll() is None and time.monotonic() < deadline:
            if has_resolver_thread(recorder.pid):
                start = time.time()
            else:
                time.sleep(0.0002)
        stdout, stderr = recorder.communicate(timeout=timeout)
    finally:
        if recorder.poll() is None:
            recorder.kill()
            recorder.wait()
    result = subprocess.CompletedProcess(recorder.args, recorder.returncode, stdout, stderr)
    if start is None:
        raise AssertionError("spyglass never started sampling (exit %s)\n%s" % (
            recorder.returncode, stderr))
    return result, start


def read_truth(path):
    """[(start, end, ms, cpu_ms)] of every finished call the target wrote."""
    calls = []
    with open(path) as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 3 and line.endswith("\n"):
                calls.append(tuple(float(x) for x in fields) + (0.0,) * (4 - len(fields)))
    return calls


def wait_for_truth_after(path, moment, timeout=10):
    """Waits until the target has written a call that ended after `moment` (the call running
    when the recording ended has finished), then returns every call."""
    deadline = time.monotonic() + timeout
    while True:
        calls = read_truth(path)
        if calls and calls[-1][1] > moment:
            return calls
        if time.monotonic() > deadline:
            raise AssertionError("the target wrote no call that ended after the recording")
        time.sleep(0.01)


def percentile(values, q):
    """Nearest rank: the smallest value with a share q of the values at or below it."""
    ordered = sorted(values)
    return ordered[max(0, int(math.ceil(q * len(ordered))) - 1)]


class Truth(object):
    """What the target measured, restricted to the window [t0, t1]."""

    def __init__(self, calls, t0, t1):
        self.inside = [c for c in calls if c[0] >= t0 and c[1] <= t1]
        self.ms = [c[2] for c in self.inside]
        self.count = len(self.inside)
        # Gaps between two calls inside the window, or between one of them and the call running
        # at its start or end: a gap no sample lands in merges its two calls.
        ordered = sorted(calls)
        self.gaps = sum(1 for a, b in zip(ordered, ordered[1:]) if a[1] >= t0 and b[0] <= t1)
        # Every call's time inside the window (the open ones' part too), and its CPU time pro
        # rata: what spyglass's total_s and cpu_s stand for.
        self.total_s = 0.0
        self.cpu_s = 0.0
        for start, end, ms, cpu_ms in calls:
            overlap = min(end, t1) - max(start, t0)
            if overlap > 0 and end > start:
                self.total_s += overlap
                self.cpu_s += cpu_ms / 1000.0 * overlap / (end - start)

    def p(self, q):
        return percentile(self.ms, q)

    def between(self, low, high):
        return sum(1 for ms in self.ms if low <= ms <= high)

    def histogram(self, row):
        """spyglass's histogram beside the truth's calls in the same buckets, one line each."""
        return "\n".join("%8.2f..%8.2f ms: spyglass %4d, truth %4d" % (
            b["from_ms"], b["to_ms"], b["count"],
            sum(1 for ms in self.ms if b["from_ms"] <= ms < b["to_ms"]))
            for b in row["histogram"])

    def summary(self):
        return ("truth: %d calls, p50 %.2f p90 %.2f p99 %.2f max %.2f ms, total %.3f s, "
                "cpu %.3f s" % (self.count, self.p(0.5), self.p(0.9), self.p(0.99), max(self.ms), self.total_s,
            self.cpu_s))


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def find(document, function, file_suffix):
    rows = [f for f in document["functions"]
            if f["function"] == function and f["file"].endswith(file_suffix)]
    if len(rows) != 1:
        raise AssertionError("%d rows of %s (%s) in %s" % (
            len(rows), function, file_suffix,
            json.dumps([(f["function"], f["file"]) for f in document["functions"]])))
    return rows[0]


def describe(row):
    return ("spyglass: %d calls (%d short, %d open, %d back to back), p50 %s p90 %s p99 %s "
            "max %s ms, total %.3f s, self %.3f s, cpu %.3f s" % (
                row["calls"], row["short_calls"], row["open_calls"], row["back_to_back"],
                row["p50_ms"], row["p90_ms"], row["p99_ms"], row["max_ms"], row["total_s"],
                row["self_s"], row["cpu_s"]))


def def_line(workload, name):
    with open(os.path.join(harness.WORKLOADS, workload)) as f:
        for number, line in enumerate(f, 1):
            if line.lstrip().startswith("def %s(" % name):
                return number
    raise AssertionError("no def %s in %s" % (name, workload))


def duration_tolerance(ms):
    """One sampling period (each end of a call is known to within a period, together about
    one) and 5% for the rest."""
    return PERIOD_MS + 0.05 * ms


class Calls(harness.InterpreterCase):
    def qualified(self, qualname):
        """The function's name as spyglass shows it: qualified on 3.11+ (co_qualname), the plain
        name before."""
        if self.version() >= (3, 11):
            return qualname
        return qualname.rsplit(".", 1)[-1]

    def record_durations(self, name, mode, gap_ms=None, extra=()):
        """Records call_durations.py for SECONDS; returns (document, row of work, truth, result,
        directory)."""
        d = workdir("%s-%s" % (self.label, name))
        truth_path = os.path.join(d, "truth")
        output = os.path.join(d, "calls.json")
        args = [mode, SEED, truth_path] + ([gap_ms] if gap_ms is not None else [])
        with harness.Target(self.python, "call_durations.py", *args) as target:
            result, t0 = record_window(["--pid", target.pid, "-d", SECONDS, "-r", RATE,
                                        "-f", "calls", "-o", output] + list(extra))
            self.assertEqual(result.returncode, 0, result.stderr)
            calls = wait_for_truth_after(truth_path, t0 + SECONDS)
        truth = Truth(calls, t0, t0 + SECONDS)
        document = load(output)
        row = find(document, "work", "call_durations.py")
        gaps = ["%d calls + %d open" % (f["calls"], f["open_calls"])
                for f in document["functions"] if f["function"] == "between"]
        sys.stderr.write("\n%s %s: %s, %d gaps\n  %s; between(): %s\n" % (
            self.label, name, truth.summary(), truth.gaps, describe(row),
            gaps[0] if gaps else "none"))
        self.assertGreater(truth.count, 40, truth.summary())
        return document, row, truth, result, d

    def missed_gaps(self, document, truth, result, gap_ms):
        """How many of the gaps between calls of work no sample landed in, before 3.11 (0 from
        3.11 on, and without a gap). Before 3.11 only such a sample tells a call of work from the
        next (documented): the two are then one call. A gap seen is a call of between() (short
        ones included), so the gaps missed are the truth's gaps inside the window less those:
        only a sampler that came late (late ticks, on a busy machine) misses a 3 ms gap."""
        if gap_ms == 0 or self.version() >= (3, 11):
            return 0
        # A gap running at the first or last sample is one of between()'s open calls (where the
        # window begins is known to a millisecond or so).
        between = find(document, "between", "call_durations.py")
        seen = between["calls"] + between["open_calls"]
        missed = max(0, truth.gaps - seen)
        if missed:
            late = re.search(r"([\d,]+) late ticks?", result.stderr)
            late = int(late.group(1).replace(",", "")) if late else 0
            sys.stderr.write("  %d of %d gaps between calls had no sample (%d late ticks): "
                             "their calls were merged, as documented before 3.11\n" % (
                                 missed, truth.gaps, late))
            # A 3 ms gap is missed only when at least two ticks in a row came late.
            self.assertLessEqual(2 * missed, late, "%d gaps missed, %d between() calls seen, "
                                 "%d late ticks\n%s" % (missed, seen, late, result.stderr))
        return missed

    def check_durations(self, document, row, truth, result, mode="wall", gap_ms=3,
                        cpu_time=False):
        gaps = [f for f in document["functions"] if f["function"] == "between"]
        context = "%s\n%s\nwork:\n%s\nbetween(): %s\n%s" % (
            truth.summary(), describe(row), truth.histogram(row),
            json.dumps([(round(b["from_ms"], 2), b["count"]) for b in gaps[0]["histogram"]])
            if gaps else "none", result.stderr)
        self.assertEqual(document["period_ms"], PERIOD_MS)
        self.assertEqual(document["mode"], mode)
        self.assertTrue(document["known"], context)
        self.assertLessEqual(document["samples_without_identity"], 0.02 * RATE * SECONDS,
                             context)
        self.assertEqual(row["line"], def_line("call_durations.py", "work"), context)
        # A sample after a run of late ticks stands for the time missed, and where calls
        # changed in that time each side gets half of it (docs/calls.md): on a machine busy
        # enough to make spyglass late, a few calls' ends are off by more than a period. A
        # handful (at most 3% of the calls, and only with late ticks to account for them) may
        # be off; merged or cut calls would be dozens.
        late = re.search(r"([\d,]+) late ticks?", result.stderr)
        late = int(late.group(1).replace(",", "")) if late else 0
        off = min(int(math.ceil(0.03 * truth.count)), late // 10)
        # Every call of work is 20 ms or more: none is short, none can be left out of the
        # durations.
        self.assertLessEqual(row["short_calls"], off, context)
        # One thread: at most the call running at the first sample and the one at the last.
        self.assertLessEqual(row["open_calls"], 2, context)
        missed = self.missed_gaps(document, truth, result, gap_ms)
        self.assertAlmostEqual(row["calls"], truth.count - missed, delta=0.05 * truth.count,
                               msg="%d gaps missed\n%s" % (missed, context))
        values = truth.ms if not cpu_time else [c[3] for c in truth.inside]
        # Calls merged over a missed gap (before 3.11) are the longest: p99 and max are then
        # not the truth's.
        for key, q in (("p50_ms", 0.5), ("p99_ms", 0.99), ("max_ms", 1.0))[:1 if missed else 3]:
            expected = percentile(values, q)
            self.assertAlmostEqual(row[key], expected, delta=duration_tolerance(expected),
                                   msg="%s: %s\n%s" % (key, expected, context))
        # No call between the two lengths the target makes: 20 ms calls merged (20 + 3 + 20)
        # or a 200 ms call cut in pieces would land there. Buckets wholly inside 28..170 ms,
        # against the truth's calls in a wider range (a call's ends are known to a period).
        if not cpu_time:
            middle = sum(b["count"] for b in row["histogram"]
                         if b["from_ms"] >= 28 and b["to_ms"] <= 170)
            self.assertLessEqual(middle, truth.between(24, 180) + missed + off,
                                 "%d calls of 28..170 ms: %s\n%s" % (
                                     middle, json.dumps(row["histogram"]), context))
        self.assertEqual(sum(b["count"] for b in row["histogram"]),
                         row["calls"] - row["short_calls"], context)

    def test_sleep(self):
        """Calls sleeping: all wall time, no CPU. The same recording also goes to a raw file,
        replayed by report with the same figures."""
        document, row, truth, result, d = self.record_durations("sleep", "sleep")
        self.check_durations(document, row, truth, result)
        context = "%s\n%s" % (truth.summary(), describe(row))
        self.assertGreaterEqual(row["self_s"], 0.95 * row["total_s"], context)
        self.assertAlmostEqual(row["total_s"], truth.total_s, delta=0.03 * truth.total_s + 0.05,
                               msg=context)
        self.assertLess(row["cpu_s"], 0.1 * row["total_s"], context)
        self.assertLessEqual(row["back_to_back"], 0.05 * row["calls"], context)

    def test_burn(self):
        """Calls spinning on the CPU in work's own frame: a thread that is never idle."""
        document, row, truth, result, d = self.record_durations("burn", "burn")
        self.check_durations(document, row, truth, result)
        context = "%s\n%s" % (truth.summary(), describe(row))
        self.assertGreaterEqual(row["self_s"], 0.95 * row["total_s"], context)
        self.assertAlmostEqual(row["total_s"], truth.total_s, delta=0.03 * truth.total_s + 0.05,
                               msg=context)
        # The CPU time of the samples in work against what the target measured in work: a sample
        # at a call's first tick also carries the gap's CPU time before it (up to a period).
        self.assertAlmostEqual(row["cpu_s"], truth.cpu_s,
                               delta=0.1 * truth.cpu_s + row["calls"] * PERIOD_MS / 1000.0,
                               msg=context)
        self.assertLessEqual(row["back_to_back"], 0.05 * row["calls"], context)

    def test_back_to_back(self):
        """No gap: each call of work begins within microseconds of the previous one's end, so
        almost no sample lands between them. From 3.11 on the frames tell them apart (a new seq
        argument each call)."""
        if self.version() < (3, 11):
            raise unittest.SkipTest("before 3.11 back-to-back calls are told apart only by a "
                                    "sample landing between them (documented): nothing to test")
        if self.label not in BACK_TO_BACK_LABELS:
            raise unittest.SkipTest("back-to-back calls are checked on %s only (one of each "
                                    "minor)" % ", ".join(BACK_TO_BACK_LABELS))
        document, row, truth, result, d = self.record_durations("back-to-back", "sleep",
                                                                gap_ms=0)
        self.check_durations(document, row, truth, result, gap_ms=0)
        # Nearly every call began at the sample after the previous one ended, and says so.
        self.assertGreaterEqual(row["back_to_back"], 0.5 * row["calls"],
                                "%s\n%s" % (truth.summary(), describe(row)))

    def test_self_and_total(self):
        """OrderService.place only calls Ledger.record: place's time is all total, record's all
        self, and both have as many calls."""
        if self.label not in SHOP_LABELS:
            raise unittest.SkipTest("checked on %s only" % ", ".join(SHOP_LABELS))
        d = workdir("%s-shop" % self.label)
        output = os.path.join(d, "calls.json")
        with harness.Target(self.python, "shop_calls.py", "sleep", SEED) as target:
            result = harness.spyglass("record", "--pid", target.pid, "-d", SHOP_SECONDS,
                                      "-r", RATE, "-f", "calls", "-o", output)
        self.assertEqual(result.returncode, 0, result.stderr)
        document = load(output)
        place = find(document, self.qualified("OrderService.place"), "shop_calls.py")
        record = find(document, self.qualified("Ledger.record"), "shop_calls.py")
        context = "place: %s\nrecord: %s\n%s" % (describe(place), describe(record),
                                                 result.stderr)
        sys.stderr.write("\n%s shop:\n  %s\n" % (self.label, context.replace("\n", "\n  ")))
        self.assertEqual(place["line"], def_line("shop_calls.py", "place"), context)
        self.assertEqual(record["line"], def_line("shop_calls.py", "record"), context)
        # ~4 s / ~41 ms per order
        self.assertGreater(place["calls"], 40, context)
        self.assertLessEqual(abs(place["calls"] - record["calls"]), 2, context)
        self.assertLess(place["self_s"], 0.1 * place["total_s"], context)
        self.assertGreater(record["self_s"], 0.9 * record["total_s"], context)
        self.assertAlmostEqual(place["total_s"], record["total_s"],
                               delta=0.05 * record["total_s"], msg=context)
        self.assertAlmostEqual(place["p50_ms"], record["p50_ms"], delta=duration_tolerance(20),
                               msg=context)
        self.assertGreater(record["total_s"], 0.8 * SHOP_SECONDS, context)

    def test_raw_replay(self):
        """record --raw and -f calls in one run: report's -f calls (JSON and text) and --calls
        give the same figures as the direct output; the SVG names the function."""
        if self.label not in SHOP_LABELS:
            raise unittest.SkipTest("checked on %s only" % ", ".join(SHOP_LABELS))
        d = workdir("%s-raw" % self.label)
        direct = os.path.join(d, "direct.json")
        raw = os.path.join(d, "rec.sgr")
        with harness.Target(self.python, "shop_calls.py", "sleep", SEED) as target:
            result = harness.spyglass("record", "--pid", target.pid, "-d", 3, "-r", RATE,
                                      "-f", "calls", "-o", direct, "--raw", raw)
        self.assertEqual(result.returncode, 0, result.stderr)
        replayed = os.path.join(d, "replayed.json")
        again = harness.spyglass("report", raw, "-f", "calls", "-o", replayed)
        self.assertEqual(again.returncode, 0, again.stderr)
        a, b = load(direct), load(replayed)
        self.assertEqual(a, b)
        record = find(a, self.qualified("Ledger.record"), "shop_calls.py")
        self.assertGreater(record["calls"], 30, describe(record))
        # The text table, to a file and on standard output: record's row with its call count.
        text = os.path.join(d, "replayed.txt")
        table = harness.spyglass("report", raw, "-f", "calls", "-o", text)
        self.assertEqual(table.returncode, 0, table.stderr)
        shown = harness.spyglass("report", raw, "--calls")
        self.assertEqual(shown.returncode, 0, shown.stderr)
        with open(text, encoding="utf-8") as f:
            self.assertEqual(f.read(), shown.stdout)
        rows = [line for line in shown.stdout.splitlines()
                if re.search(r"\b%s\b" % re.escape(self.qualified("Ledger.record")), line)]
        self.assertEqual(len(rows), 1, shown.stdout)
        self.assertIn(" %d " % record["calls"], " %s " % rows[0], shown.stdout)
        # The SVG of the duration distributions names the function.
        svg = os.path.join(d, "replayed.svg")
        drawn = harness.spyglass("report", raw, "-f", "calls", "-o", svg)
        self.assertEqual(drawn.returncode, 0, drawn.stderr)
        with open(svg, encoding="utf-8") as f:
            picture = f.read()
        self.assertIn("<svg", picture[:500])
        self.assertIn(self.qualified("Ledger.record"), picture)

    def test_burn_cpu_mode(self):
        """--mode cpu: only on-CPU samples, and a call's time is the CPU time its samples stand
        for: against the CPU time the target measured per call (process_time) while spinning
        (less than its wall time when the machine is busy)."""
        if self.label not in CPU_MODE_LABELS:
            raise unittest.SkipTest("--mode cpu is checked on %s only (it is the sampler's, "
                                    "not the interpreter's)" % ", ".join(CPU_MODE_LABELS))
        document, row, truth, result, d = self.record_durations("burn-cpu", "burn",
                                                                extra=("--mode", "cpu"))
        self.check_durations(document, row, truth, result, mode="cpu", cpu_time=True)


harness.interpreter_tests(Calls, globals())


class BadInput(unittest.TestCase):
    def test_report_calls_refuses_a_file_that_is_not_a_raw_recording(self):
        d = workdir("bad")
        path = os.path.join(d, "not-raw.json")
        with open(path, "w") as f:
            f.write('{"functions": []}\n')
        result = harness.spyglass("report", path, "--calls")
        self.assertNotEqual(result.returncode, 0, result.stdout)
        self.assertEqual(result.stdout, "")
        self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)
        self.assertIn("is not a spyglass raw recording", result.stderr)


if __name__ == "__main__":
    unittest.main()
