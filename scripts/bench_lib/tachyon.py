"""spyglass beside CPython 3.15's own sampler (Tachyon, `python3.15 -m profiling.sampling
attach`), on Debian sid's 3.15, same targets, same run: CPU per sample at 1 kHz on a busy target
(startup cancelled: a 6 s recording minus a 2 s one), and the wall share of the ground-truth
target (30% in burn(), 70% asleep in rest())."""
import os
import statistics
import subprocess
import time

from bench_lib import common
from bench_lib.common import folded_shares, out_file, python_for, run_spyglass
from bench_lib.truth import read_truth

DRIVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tachyon_driver.py")


class SidTarget(object):
    """A workload under Debian sid's python3.15, started by tachyon_driver.py inside the root,
    which runs Tachyon against it on request."""

    def __init__(self, python, workload, *args):
        self.command = [python, DRIVER, os.path.join(common.WORKLOADS, workload)] + \
            [str(a) for a in args]

    def __enter__(self):
        self.process = subprocess.Popen(self.command, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, encoding="utf-8")
        words = self.process.stdout.readline().split()
        if len(words) != 2 or words[0] != "pid":
            self.process.kill()
            raise RuntimeError("the Tachyon driver did not start its target")
        self.pid = int(words[1])
        return self

    def tachyon(self, seconds, rate, mode, out, while_running=None):
        """Runs Tachyon to completion; returns its CPU seconds. `while_running(pid)` is called
        once it has started."""
        self.process.stdin.write("tachyon %s %s %s %s\n" % (seconds, rate, mode, out))
        self.process.stdin.flush()
        words = self.process.stdout.readline().split()
        if len(words) != 2 or words[0] != "started":
            raise RuntimeError("Tachyon did not start: %s" % words)
        if while_running is not None:
            while_running(int(words[1]))
        words = self.process.stdout.readline().split()
        if len(words) != 3 or words[0] != "done" or words[2] != "0":
            raise RuntimeError("Tachyon failed: %s" % words)
        return float(words[1])

    def __exit__(self, *exc):
        try:
            self.process.stdin.write("quit\n")
            self.process.stdin.close()
        except OSError:
            pass
        self.process.wait()
        return False


def collapsed_samples(path):
    """(samples, {function: samples with it on the stack}) of Tachyon's --collapsed output, whose
    frames are "tid:N" then "file:function:line"."""
    total, functions = 0, {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            stack, count = line.rstrip("\n").rsplit(" ", 1)
            total += int(count)
            for name in set(frame.rsplit(":", 2)[-2] for frame in stack.split(";")[1:]
                            if frame.count(":") >= 2):
                functions[name] = functions.get(name, 0) + int(count)
    return total, functions


def spyglass_cost(pid, seconds):
    out = out_file(".txt")
    try:
        summary, usage = run_spyglass(["record", "--pid", pid, "--rate", 1000, "--duration",
                                       seconds, "-o", out])
    finally:
        os.unlink(out)
    return usage.ru_utime + usage.ru_stime, summary["samples"]


def tachyon_cost(target, seconds):
    out = out_file(".txt")
    try:
        cpu = target.tachyon(seconds, 1000, "wall", out)
        samples, _ = collapsed_samples(out)
    finally:
        os.unlink(out)
    return cpu, samples


def task_cpu_ns(pid):
    """CPU time of every thread of `pid` so far, in ns (schedstat: no 10 ms clock-tick grain)."""
    total = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # a thread that ended meanwhile
    return total


def window_cpu(pid, started, begin_s, end_s):
    """The CPU `pid` used between begin_s and end_s after `started` (time.monotonic())."""
    time.sleep(max(0.0, started + begin_s - time.monotonic()))
    first = task_cpu_ns(pid)
    time.sleep(max(0.0, started + end_s - time.monotonic()))
    return (task_cpu_ns(pid) - first) / 1e9


def steady_costs(target, seconds, begin_s, end_s):
    """(spyglass, Tachyon) µs of CPU per sample in the window [begin_s, end_s] of a recording of
    `seconds`, well after either tool started: samples in it = window × each tool's own rate."""
    costs = []
    out = out_file(".txt")
    try:
        started = time.monotonic()
        process = subprocess.Popen([common.SPYGLASS, "record", "--pid", str(target.pid), "--rate",
                                    "1000", "--duration", str(seconds), "-o", out],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   encoding="utf-8")
        cpu = window_cpu(process.pid, started, begin_s, end_s)
        _, stderr = process.communicate()
        match = common.SUMMARY.search(stderr)
        rate = float(match.group(3))
        costs.append(cpu / ((end_s - begin_s) * rate) * 1e6)
        window = {}

        def measure(pid):
            window["cpu"] = window_cpu(pid, time.monotonic(), begin_s, end_s)

        target.tachyon(seconds, 1000, "wall", out, measure)
        samples, _ = collapsed_samples(out)
        costs.append(window["cpu"] / ((end_s - begin_s) * samples / float(seconds)) * 1e6)
    finally:
        os.unlink(out)
    return costs


def bench_tachyon(args):
    print("\n## 14. Beside CPython 3.15's own sampler (Tachyon, `python3.15 -m profiling.sampling "
          "attach`), Debian sid's 3.15")
    python = python_for("debian-sid-3.15")
    if python is None:
        return
    runs = 2 if args.quick else 5
    long_s, short_s = (4, 1) if args.quick else (6, 2)
    print("CPU per sample at 1 kHz, deep_stack.py (one thread, 30-deep stack, always running): "
          "(CPU of a %d s recording - CPU of a %d s one) / (samples - samples), each tool's CPU "
          "from wait4; the same target for both, recordings interleaved" % (long_s, short_s))
    print("| run | spyglass µs per sample | Tachyon µs per sample | ratio |")
    print("|---|---|---|---|")
    ratios, ours_all, theirs_all = [], [], []
    for run in range(1, runs + 1):
        with SidTarget(python, "deep_stack.py") as target:
            ours = [spyglass_cost(target.pid, s) for s in (long_s, short_s)]
            theirs = [tachyon_cost(target, s) for s in (long_s, short_s)]
        per = []
        for (cpu_l, n_l), (cpu_s, n_s) in (ours, theirs):
            per.append((cpu_l - cpu_s) / max(1, n_l - n_s) * 1e6)
        ours_all.append(per[0])
        theirs_all.append(per[1])
        ratios.append(per[0] / per[1] if per[1] else float("nan"))
        print("| %d | %.1f | %.1f | %.3f |" % (run, per[0], per[1], ratios[-1]))
    print("| median | %.1f | %.1f | %.3f |" % (statistics.median(ours_all),
                                              statistics.median(theirs_all),
                                              statistics.median(ratios)))

    long_s, begin_s, end_s = (5, 1.5, 4) if args.quick else (8, 2, 6)
    print("\nSteady state: CPU per sample at 1 kHz in the window %g s to %g s after each tool "
          "was started (a recording of %d s), from the sum of its threads' schedstat run times; "
          "samples in the window = its length × the tool's own achieved rate. Same target, "
          "interleaved" % (begin_s, end_s, long_s))
    print("| run | spyglass µs per sample | Tachyon µs per sample | ratio |")
    print("|---|---|---|---|")
    ours_all, theirs_all, ratios = [], [], []
    for run in range(1, runs + 1):
        with SidTarget(python, "deep_stack.py") as target:
            ours, theirs = steady_costs(target, long_s, begin_s, end_s)
        ours_all.append(ours)
        theirs_all.append(theirs)
        ratios.append(ours / theirs if theirs else float("nan"))
        print("| %d | %.1f | %.1f | %.3f |" % (run, ours, theirs, ratios[-1]))
    print("| median | %.1f | %.1f | %.3f |" % (statistics.median(ours_all),
                                              statistics.median(theirs_all),
                                              statistics.median(ratios)))

    seconds = 5 if args.quick else 10
    print("\nWall share of burn() in ground_truth.py (30%% of each 100 ms burning, 70%% asleep), "
          "1 kHz, %d s each, wall mode, truth as the target measured it over each recording"
          % seconds)
    print("| run | tool | truth | burn() | error (points) |")
    print("|---|---|---|---|---|")
    within = {"spyglass": 0, "Tachyon": 0}
    for run in range(1, runs + 1):
        truth_file = out_file(".truth")
        with SidTarget(python, "ground_truth.py", 0.1, 0.3, truth_file) as target:
            for tool in ("spyglass", "Tachyon"):
                out = out_file(".txt")
                burned0, elapsed0 = read_truth(truth_file)
                if tool == "spyglass":
                    run_spyglass(["record", "--pid", target.pid, "--rate", 1000, "--duration",
                                  seconds, "--mode", "wall", "-o", out])
                else:
                    target.tachyon(seconds, 1000, "wall", out)
                time.sleep(0.2)  # the target's cycle after the recording ended
                burned1, elapsed1 = read_truth(truth_file)
                truth = 100.0 * (burned1 - burned0) / (elapsed1 - elapsed0)
                if tool == "spyglass":
                    counts, total = folded_shares(out, ["burn"])
                    burn = 100.0 * counts["burn"] / max(1, total)
                else:
                    total, functions = collapsed_samples(out)
                    burn = 100.0 * functions.get("burn", 0) / max(1, total)
                os.unlink(out)
                within[tool] += abs(burn - truth) <= 1.0
                print("| %d | %s | %.2f%% | %.2f%% | %+.2f |" % (run, tool, truth, burn,
                                                                 burn - truth))
        os.unlink(truth_file)
    print("within 1 point of the truth: spyglass %d of %d runs, Tachyon %d of %d" % (
        within["spyglass"], runs, within["Tachyon"], runs))
