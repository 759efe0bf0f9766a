"""The raw recording and `spyglass report`: a raw file renders to the same output as the
direct recording of the same capture (byte for byte), --from/--to, --thread, --pid and --gil
slices are exact, --summary, a file cut by SIGKILL is read up to its last whole block (and
report says so, and its summary still names the target's Python), a newer format version and a
file that is not a recording are refused."""
import os
import re
import signal
import struct
import subprocess
import sys
import time
import unittest
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import pprof_decode  # noqa: E402

RATE = 200


def folded(path):
    """{stack: count}"""
    lines = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            stack, count = line.rstrip("\n").rsplit(" ", 1)
            lines[stack] = lines.get(stack, 0) + int(count)
    return lines


def workdir(name):
    directory = os.path.join(os.environ.get("TMPDIR", "/tmp"), "spyglass-tests", "raw", name)
    os.makedirs(directory, exist_ok=True)
    for entry in os.listdir(directory):
        os.unlink(os.path.join(directory, entry))
    return directory


class RawTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.python = harness.any_interpreter()

    def record(self, *args):
        result = harness.spyglass("record", "--rate", RATE, *args)
        self.assertEqual(result.returncode, 0, result.stderr)
        return result

    def report(self, *args, **kwargs):
        result = harness.spyglass("report", *args)
        if kwargs.get("ok", True):
            self.assertEqual(result.returncode, 0, result.stderr)
        return result

    def test_report_renders_what_record_wrote_byte_for_byte(self):
        d = workdir("same")
        with harness.Target(self.python, "record_target.py") as target:
            for name, extra in (("plain", []), ("function", ["--threads", "--function"]),
                                ("nolineno", ["--nolineno"])):
                direct = os.path.join(d, name + ".txt")
                raw = os.path.join(d, name + ".sgr")
                self.record("--pid", target.pid, "-d", 2, "-o", direct, "--raw", raw, *extra)
                again = os.path.join(d, name + "-report.txt")
                self.report(raw, "-o", again, *extra)
                with open(direct, "rb") as a, open(again, "rb") as b:
                    self.assertEqual(a.read(), b.read(), name)
            # pprof too (same samples, same order, same header fields).
            direct = os.path.join(d, "p.pb.gz")
            raw = os.path.join(d, "p.sgr")
            self.record("--pid", target.pid, "-d", 1, "-o", direct, "--raw", raw)
            again = os.path.join(d, "p-report.pb.gz")
            self.report(raw, "-o", again)
            with open(direct, "rb") as a, open(again, "rb") as b:
                self.assertEqual(zlib.decompress(a.read(), 31), zlib.decompress(b.read(), 31))
        # --function really changed the labels: no line of busy_loop but its first.
        lines = folded(os.path.join(d, "function.txt"))
        self.assertTrue(any("busy_loop (" in s for s in lines))
        self.assertEqual(len({re.search(r"busy_loop \([^)]*\)", s).group(0)
                              for s in lines if "busy_loop (" in s}), 1)

    def test_slices_are_exact(self):
        d = workdir("slices")
        raw = os.path.join(d, "rec.sgr")
        with harness.Target(self.python, "record_target.py") as target:
            self.record("--pid", target.pid, "-d", 4, "-o", os.path.join(d, "all.txt"),
                        "--raw", raw, "--threads")
            busy_tid = [t for t, _ in harness.task_states(target.pid).items()]
        full = os.path.join(d, "full.txt")
        self.report(raw, "-o", full, "--threads")
        self.assertEqual(folded(full), folded(os.path.join(d, "all.txt")))
        total = sum(folded(full).values())
        # Complementary slices add up to the whole, sample for sample and nanosecond for
        # nanosecond (pprof's counts and wall times: folded rounds each line to periods).
        whole_pb = os.path.join(d, "whole.pb.gz")
        self.report(raw, "-o", whole_pb)
        whole = pprof_decode.decode_file(whole_pb)
        for cut in ("0.5", "1.37", "2", "3.999"):
            a, b = os.path.join(d, "a.pb.gz"), os.path.join(d, "b.pb.gz")
            self.report(raw, "-o", a, "--to", cut)
            self.report(raw, "-o", b, "--from", cut)
            for kind in ("samples", "wall", "cpu"):
                merged = pprof_decode.totals(pprof_decode.decode_file(a), kind)
                for key, value in pprof_decode.totals(
                        pprof_decode.decode_file(b), kind).items():
                    merged[key] = merged.get(key, 0) + value
                self.assertEqual(merged, pprof_decode.totals(whole, kind), (cut, kind))
            first = pprof_decode.totals(pprof_decode.decode_file(a))
            self.assertAlmostEqual(sum(first.values()), float(cut) * 3 * RATE,
                                   delta=3 * RATE * 0.1 + 6)
        # A slice of a second holds about a second of samples (3 threads at 200 Hz).
        one = os.path.join(d, "one.txt")
        self.report(raw, "-o", one, "--from", "1", "--to", "2s")
        self.assertAlmostEqual(sum(folded(one).values()), 3 * RATE, delta=3 * RATE * 0.1)
        self.assertAlmostEqual(total, 4 * 3 * RATE, delta=4 * 3 * RATE * 0.1)
        # --thread by name: exactly that thread's lines of the per-thread profile.
        busy = os.path.join(d, "busy.txt")
        self.report(raw, "-o", busy, "--threads", "--thread", "busy")
        expected = {s: c for s, c in folded(full).items() if re.match(r"thread \d+ busy;", s)}
        self.assertTrue(expected)
        self.assertEqual(folded(busy), expected)
        # ... and by TID.
        tid = re.match(r"thread (\d+) busy;", next(iter(expected))).group(1)
        self.assertIn(int(tid), busy_tid)
        by_tid = os.path.join(d, "tid.txt")
        self.report(raw, "-o", by_tid, "--threads", "--thread", tid)
        self.assertEqual(folded(by_tid), expected)
        # --pid: the target's samples are all of them; another PID's are none.
        mine = os.path.join(d, "pid.txt")
        self.report(raw, "-o", mine, "--threads", "--pid", target.pid)
        self.assertEqual(folded(mine), folded(full))
        other = os.path.join(d, "other.pb.gz")
        self.report(raw, "-o", other, "--pid", target.pid + 1)
        self.assertEqual(pprof_decode.totals(pprof_decode.decode_file(other)), {})
        # --gil: exactly the samples whose gil label is true in the whole profile (the busy
        # thread's, mostly), and not the sleeper's.
        gil = os.path.join(d, "gil.pb.gz")
        self.report(raw, "-o", gil, "--gil")
        held = dict(whole, samples=[s for s in whole["samples"]
                                    if s["labels"].get("gil") == "true"])
        self.assertEqual(pprof_decode.totals(pprof_decode.decode_file(gil)),
                         pprof_decode.totals(held))
        self.assertTrue(0 < len(held["samples"]) < len(whole["samples"]))
        self.assertFalse(any("sleeping_function" in " ".join(s["stack"])
                             for s in held["samples"]))
        # --mode cpu keeps only on-CPU samples: the sleeper is gone.
        cpu = os.path.join(d, "cpu.txt")
        self.report(raw, "-o", cpu, "--threads", "--mode", "cpu")
        self.assertFalse(any("sleeper" in s for s in folded(cpu)))
        self.assertFalse(any(s.endswith("[off-cpu]") for s in folded(cpu)))
        # A wall-clock --from: the start's own second is the start.
        result = self.report(raw, "--summary")
        started = re.search(r"started:\s+(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)", result.stdout)
        self.assertTrue(started, result.stdout)
        clock = os.path.join(d, "clock.txt")
        self.report(raw, "-o", clock, "--threads", "--from", started.group(1).replace(" ", "T"))
        self.assertEqual(folded(clock), folded(full))
        # An unknown thread is an error that names the known ones.
        result = self.report(raw, "-o", os.path.join(d, "none.txt"), "--thread", "nobody",
                             ok=False)
        self.assertEqual(result.returncode, 1)
        self.assertIn("busy", result.stderr)
        self.assertFalse(os.path.exists(os.path.join(d, "none.txt")))

    def test_summary(self):
        d = workdir("summary")
        raw = os.path.join(d, "rec.sgr")
        with harness.Target(self.python, "record_target.py") as target:
            self.record("--pid", target.pid, "-d", 1, "-o", os.path.join(d, "x.txt"), "--raw",
                        raw)
        out = self.report(raw, "--summary").stdout
        self.assertRegex(out, r"duration: 1\.\d s at 200(\.0)? Hz, wall mode")
        self.assertIn("busy", out)
        self.assertIn("sleeper", out)
        self.assertIn("spin (", out)
        self.assertRegex(out, r"samples:\s+[\d,]+\n")
        self.assertRegex(out, r"processes: 1\n\s+%d\s+Python \d\.\d+\.\d+\s+/\S+\n"
                         % target.pid)

    def test_a_killed_recording_reads_up_to_its_last_block(self):
        d = workdir("killed")
        raw = os.path.join(d, "rec.sgr")
        with harness.Target(self.python, "record_target.py") as target:
            process = subprocess.Popen([harness.SPYGLASS, "record", "--pid", str(target.pid),
                                        "--rate", str(RATE), "-o", os.path.join(d, "x.txt"),
                                        "--raw", raw], stderr=subprocess.PIPE)
            # The recording is written beside its name and renamed at the end: until then it
            # is the temporary file. Blocks go out every second of recording: wait for the
            # third to be on disk.
            # Its name ends in a random part: found by its prefix.
            prefix = ".rec.sgr.spyglass-%d-" % process.pid
            partial = None
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and (partial is None or self.blocks(partial) < 3):
                names = [n for n in os.listdir(d) if n.startswith(prefix)]
                partial = os.path.join(d, names[0]) if names else None
                time.sleep(0.05)
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)
            process.stderr.close()
        self.assertFalse(os.path.exists(raw), "a partial recording under the real name")
        self.assertIsNotNone(partial, os.listdir(d))
        raw = partial
        self.assertGreaterEqual(self.blocks(raw), 3)
        # Cut the last block too, as a full disk would.
        with open(raw, "rb") as f:
            data = f.read()
        with open(raw, "wb") as f:
            f.write(data[:-7])
        out = os.path.join(d, "after.txt")
        result = self.report(raw, "-o", out)
        self.assertIn("was cut short", result.stderr)
        self.assertRegex(result.stderr, r"read [\d,]+ samples up to \d+\.\d s")
        self.assertGreater(sum(folded(out).values()), 100)
        # No end record, and still the target's process and its Python version, from the
        # process record written when the target started being sampled.
        version = subprocess.run(
            [self.python, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
            stdout=subprocess.PIPE, encoding="utf-8", timeout=harness.TIMEOUT).stdout.strip()
        summary = self.report(raw, "--summary").stdout
        self.assertIn("(the file was cut", summary)
        self.assertRegex(summary, r"processes: 1\n\s+%d\s+Python %s\s+/\S+\n"
                         % (target.pid, re.escape(version)))
        self.assertIn(", Python %s\n" % version, summary)

    @staticmethod
    def blocks(path):
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            return 0
        at, count = 16, 0
        while at + 16 <= len(data):
            size = struct.unpack_from("<I", data, at + 4)[0]
            if at + 16 + size > len(data):
                break
            at += 16 + size
            count += 1
        return count - 1  # the recording header is not a record block

    def test_newer_version_and_other_files_are_refused(self):
        d = workdir("refused")
        raw = os.path.join(d, "rec.sgr")
        with harness.Target(self.python, "record_target.py") as target:
            self.record("--pid", target.pid, "-d", 0.5, "-o", os.path.join(d, "x.txt"), "--raw",
                        raw)
        with open(raw, "rb") as f:
            data = bytearray(f.read())
        data[8:10] = struct.pack("<H", 6)
        data[12:16] = struct.pack("<I", zlib.crc32(bytes(data[:12])))
        newer = os.path.join(d, "newer.sgr")
        with open(newer, "wb") as f:
            f.write(data)
        out = os.path.join(d, "out.svg")
        result = self.report(newer, "-o", out, ok=False)
        self.assertEqual(result.returncode, 1)
        self.assertIn("format version 6, newer than this spyglass reads (version 5)",
                      result.stderr)
        self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)
        self.assertFalse(os.path.exists(out))
        result = self.report(os.path.join(d, "x.txt"), "-o", out, ok=False)
        self.assertEqual(result.returncode, 1)
        self.assertIn("is not a spyglass raw recording", result.stderr)
        self.assertFalse(os.path.exists(out))
        result = self.report(os.path.join(d, "missing.sgr"), ok=False)
        self.assertEqual(result.returncode, 1)
        self.assertIn("cannot read", result.stderr)


if __name__ == "__main__":
    unittest.main()
