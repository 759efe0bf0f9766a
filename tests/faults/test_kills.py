"""Nothing is lost and the target is unharmed when something dies mid-recording: the target
exits or is SIGKILLed at random moments (the formats and the versions in turn), spyglass is
SIGKILLed during --blocking (every version), SIGINT or SIGTERM once stops a recording with a
complete file. The moments come from a seeded generator (the seed is printed)."""
import os
import signal
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faults  # noqa: E402
from faults import harness  # noqa: E402

# Runs of the random-kill loop, the formats in turn (faults.FORMATS: 40 runs give each of the
# six 6 or 7).
RUNS = int(os.environ.get("SPYGLASS_FAULT_RUNS", "40"))


def wait_running(test, pid, timeout=5):
    """The target still runs: some thread is on a CPU within `timeout`."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if "R" in harness.task_states(pid).values():
            return
        time.sleep(0.01)
    test.fail("no thread of %d ran within %ds: %s" % (pid, timeout, harness.task_states(pid)))


class TargetDies(unittest.TestCase):
    def test_target_exits_or_is_killed_at_random_moments(self):
        rng, seed = faults.seeded_random(self.id())
        pythons = faults.installed_pythons()
        if not pythons:
            self.skipTest("no Python interpreter installed")
        formats = sorted(faults.FORMATS)
        runs = [(formats[i % len(formats)], i) for i in range(RUNS)]
        rng.shuffle(runs)
        written = refused = 0
        with faults.Workdir() as work:
            for n, (format_name, i) in enumerate(runs):
                label, python = pythons[n % len(pythons)]
                moment = rng.uniform(0.1, 1.5)
                how = rng.choice(["exit", "SIGKILL"])
                rate = rng.choice([100, 500, 1000])
                where = "run %d (seed %d): %s %s at %.2f s, %s, %d Hz" % (
                    n, seed, label, how, moment, format_name, rate)
                out = work.file("p%d%s" % (n, faults.FORMATS[format_name]))
                args = faults.output_args(out, format_name)
                lifetime = [moment] if how == "exit" else []
                with harness.Target(python, "record_target.py", *lifetime) as target:
                    recorder = faults.start_record("--pid", target.pid, "-r", rate, *args)
                    if how == "SIGKILL":
                        time.sleep(moment)
                        target.process.kill()
                    code, _, err = faults.finish(recorder)
                if code == 1 and not os.path.exists(args[1]):
                    # Gone before spyglass could attach: said in one line, nothing written.
                    self.assertRegex(err, r"^spyglass: error: (no process with PID|process \d+ "
                                     r"(has )?exited)", where)
                    refused += 1
                    if os.path.exists(out):  # the raw file, opened before attaching
                        os.unlink(out)
                    continue
                self.assertEqual(code, 0, "%s: %s" % (where, err))
                self.assertIn("the target exited", err, where)
                with self.subTest(where):
                    faults.check_complete(self, out, format_name)
                written += 1
                for path in {out, args[1]}:  # the raw file has a folded one beside it
                    os.unlink(path)
            self.assertEqual(faults.temporaries(work.path), [])
        sys.stderr.write("%d runs: %d complete files, %d ended before attaching\n"
                         % (len(runs), written, refused))
        self.assertGreaterEqual(written, 0.75 * len(runs))


class SpyglassDies(unittest.TestCase):
    def test_sigkill_during_blocking_leaves_no_thread_stopped(self):
        # --blocking pauses every read; --native pauses each running thread for its registers
        # and stack copy: a SIGKILL at any moment must leave no thread stopped either way.
        rng, seed = faults.seeded_random(self.id())
        pythons = faults.installed_pythons()
        if not pythons:
            self.skipTest("no Python interpreter installed")
        with faults.Workdir() as work:
            for label, python in pythons:
                for mode in ("--blocking", "--native"):
                    moment = rng.uniform(0.1, 1.0)
                    where = "%s %s, SIGKILL at %.2f s (seed %d)" % (label, mode, moment, seed)
                    with harness.Target(python, "record_target.py") as target:
                        recorder = faults.start_record("--pid", target.pid, mode, "-r", 1000,
                                                       "-o", work.file("blocking.txt"))
                        time.sleep(moment)
                        recorder.kill()
                        faults.finish(recorder)
                        self.assertEqual(faults.stopped_threads(target.pid), {}, where)
                        wait_running(self, target.pid)
                        # Not left traced either: pausing it again works at once.
                        dump = harness.spyglass("dump", "--pid", target.pid, "--blocking",
                                                timeout=30)
                        self.assertEqual(dump.returncode, 0, "%s: %s" % (where, dump.stderr))
                        self.assertFalse(os.path.exists(work.file("blocking.txt")), where)

    def test_one_stop_signal_writes_everything(self):
        rng, seed = faults.seeded_random(self.id())
        python = faults.any_python()
        cases = [(signal.SIGINT, "flamegraph", []), (signal.SIGTERM, "pprof", ["--blocking"]),
                 (signal.SIGINT, "speedscope", ["--blocking"]), (signal.SIGTERM, "folded", [])]
        with faults.Workdir() as work, harness.Target(python, "record_target.py") as target:
            for signal_number, format_name, extra in cases:
                moment = rng.uniform(0.3, 1.2)
                where = "%s after %.2f s, %s %s (seed %d)" % (
                    faults.SIGNAL_NAMES[signal_number], moment, format_name, extra, seed)
                out = work.file("once" + faults.FORMATS[format_name])
                recorder = faults.start_record("--pid", target.pid, "-o", out, *extra)
                time.sleep(moment)
                recorder.send_signal(signal_number)
                code, _, err = faults.finish(recorder)
                self.assertEqual(code, 0, "%s: %s" % (where, err))
                self.assertRegex(err, r"samples? in [\d.]+ s", where)
                faults.check_complete(self, out, format_name)
                self.assertEqual(faults.stopped_threads(target.pid), {}, where)
            self.assertEqual(faults.temporaries(work.path), [])

    def test_stop_signal_to_a_launched_command(self):
        # Launch mode: SIGTERM reaches the command too; the file is complete, the status is the
        # command's.
        python = faults.any_python()
        code = ("import signal, sys\n"
                "signal.signal(signal.SIGTERM, lambda *a: sys.exit(7))\n"
                "open(sys.argv[1], 'w').close()\n"
                "def launched_work():\n"
                "    while True: pass\n"
                "launched_work()\n")
        with faults.Workdir() as work:
            out, ready = work.file("launched.txt"), work.file("ready")
            recorder = faults.start_record("-o", out, "--", python, "-c", code, ready)
            deadline = time.monotonic() + 60
            while not os.path.exists(ready):
                self.assertIsNone(recorder.poll(), "spyglass exited before the command was ready")
                self.assertLess(time.monotonic(), deadline, "the command never got ready")
                time.sleep(0.01)
            time.sleep(0.5)  # samples of launched_work, once the handler is there
            recorder.send_signal(signal.SIGTERM)
            status, _, err = faults.finish(recorder)
            self.assertEqual(status, 7, err)
            os.unlink(ready)
            lines = faults.check_folded(self, out)
            self.assertTrue(any("launched_work" in line for line in lines), lines[:5])


if __name__ == "__main__":
    unittest.main()
