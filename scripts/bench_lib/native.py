"""What --native costs: pauses of running threads (p50, p99), the sampling and resolver threads'
CPU, the achieved rate, and the CPU share the target's running thread keeps, against
Python-only sampling and --native --nonblocking, interleaved within one run; then spyglass's RSS
over a 60 s --native recording, and the resolver's CPU per native frame with warm caches."""
import os
import re
import statistics
import subprocess
import threading
import time

from bench_lib import common
from bench_lib.common import Target, out_file, python_for, run_verbose

PAUSES = re.compile(r"(\d[\d,]*) pauses? \(p50 ([\d.]+) (µs|ms|s|ns), p99 ([\d.]+) (µs|ms|s|ns)")
NATIVE = re.compile(r"native stacks: (\d+) of blocked threads taken without a stop \((\d+) moved "
                    r"while read\), (\d+) with a stop")
PYTHON_FRAME = re.compile(r"\(.*\.py:\d+\)$")
RESOLVED = re.compile(r"native stacks: (\d+) unwound \((\d+) could not be\), (\d+) merged")
UNIT = {"ns": 1e-3, "µs": 1.0, "ms": 1e3, "s": 1e6}


def run_ns(pid, tid):
    with open("/proc/%d/task/%d/schedstat" % (pid, tid)) as f:
        return int(f.read().split()[0])


def measure(python, mode, rate, seconds):
    with Target(python, "native_target.py") as target:
        main = target.report["main"]
        start_cpu, start = run_ns(target.pid, main), time.monotonic()
        row = {"p50": 0.0, "p99": 0.0, "pauses": 0, "unstopped": 0, "stopped": 0, "merged": 0,
               "unwound": 0}
        if mode is None:
            time.sleep(seconds)  # the baseline: the same wall time without spyglass
            row.update(rate=0.0, samples=0, sampling_ms=0.0, resolver_ms=0.0)
        else:
            args = ["record", "--pid", target.pid, "--rate", rate, "--duration", seconds, "-o",
                    "/dev/null", "-f", "folded"] + mode
            summary, _, stderr = run_verbose(args)
            row.update(summary)
            found = PAUSES.search(stderr)
            if found:
                row["pauses"] = int(found.group(1).replace(",", ""))
                row["p50"] = float(found.group(2)) * UNIT[found.group(3)]
                row["p99"] = float(found.group(4)) * UNIT[found.group(5)]
            for match in NATIVE.finditer(stderr):
                row["unstopped"] += int(match.group(1))
                row["stopped"] += int(match.group(3))
            resolved = RESOLVED.search(stderr)
            if resolved:
                row["unwound"], row["merged"] = int(resolved.group(1)), int(resolved.group(3))
        row["target_cpu"] = (run_ns(target.pid, main) - start_cpu) / 1e9 / \
            (time.monotonic() - start)
    return row


def bench_native(args):
    print("\n## 13. --native: pauses, spyglass's CPU and the target's running thread, against "
          "Python-only and --nonblocking (interleaved rounds, medians)")
    seconds = 3 if args.quick else 8
    rounds = 3 if args.quick else 5
    python = python_for("3.12")
    if python is None:
        return
    modes = [("no spyglass", None), ("Python only", []), ("--native", ["--native"]),
             ("--native --nonblocking", ["--native", "--nonblocking"])]
    print("workload: tests/workloads/native_target.py on 3.12 (main thread sorting through a "
          "ctypes qsort callback; threads blocked in sleep, read, a socket's recv, a Lock, and "
          "one under ~48 KiB of stack)")
    print("| rate | mode | achieved Hz | samples | pauses | pause p50 µs | pause p99 µs | "
          "blocked without a stop | sampling ms | resolver ms | resolver µs per sample | "
          "target thread CPU share |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for rate in (100, 1000):
        runs = dict((name, []) for name, _ in modes)
        for _ in range(rounds):
            for name, mode in modes:
                runs[name].append(measure(python, mode, rate, seconds))
        for name, _ in modes:
            rows = runs[name]
            med = dict((key, statistics.median(r[key] for r in rows))
                       for key in ("rate", "samples", "pauses", "p50", "p99", "unstopped",
                                   "sampling_ms", "resolver_ms", "target_cpu"))
            per_sample = med["resolver_ms"] * 1e3 / med["samples"] if med["samples"] else 0
            print("| %d | %s | %.1f | %d | %d | %.0f | %.0f | %d | %.0f | %.0f | %.1f | %.3f |" % (
                rate, name, med["rate"], med["samples"], med["pauses"], med["p50"], med["p99"],
                med["unstopped"], med["sampling_ms"], med["resolver_ms"], per_sample,
                med["target_cpu"]))

    # The production case: 50 threads, one busy, at 100 Hz.
    print("\n50 threads (1 spinning, 49 in Event.wait), 100 Hz, %d s, medians of %d rounds:" % (
        seconds, rounds))
    print("| mode | achieved Hz | samples | pauses | pause p50 µs | pause p99 µs | "
          "blocked without a stop | sampling ms | resolver ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    runs = {"Python only": [], "--native": []}
    for _ in range(rounds):
        for name, mode in (("Python only", []), ("--native", ["--native"])):
            with Target(python, "many_threads.py", 50, 1) as target:
                command = ["record", "--pid", target.pid, "--rate", 100, "--duration", seconds,
                           "-o", "/dev/null", "-f", "folded"] + mode
                summary, _, stderr = run_verbose(command)
            found = PAUSES.search(stderr)
            summary["pauses"] = int(found.group(1).replace(",", "")) if found else 0
            summary["p50"] = float(found.group(2)) * UNIT[found.group(3)] if found else 0.0
            summary["p99"] = float(found.group(4)) * UNIT[found.group(5)] if found else 0.0
            summary["unstopped"] = sum(int(m.group(1)) for m in NATIVE.finditer(stderr))
            runs[name].append(summary)
    for name, rows in runs.items():
        med = dict((key, statistics.median(r[key] for r in rows))
                   for key in ("rate", "samples", "pauses", "p50", "p99", "unstopped",
                               "sampling_ms", "resolver_ms"))
        print("| %s | %.1f | %d | %d | %.0f | %.0f | %d | %.0f | %.0f |" % (
            name, med["rate"], med["samples"], med["pauses"], med["p50"], med["p99"],
            med["unstopped"], med["sampling_ms"], med["resolver_ms"]))

    bench_native_memory(args, python)
    bench_native_pauses(args)


PAUSES_MAX = re.compile(r"(\d[\d,]*) pauses? \(p50 ([\d.]+) (µs|ms|s|ns), p99 ([\d.]+) (µs|ms|s|ns), "
                        r"max ([\d.]+) (µs|ms|s|ns)\)")
PAUSE_VERSIONS = ("3.11", "3.13", "debian-sid-3.14")


class BusyNeighbours(object):
    """`count` CPU-bound processes beside the target, each in its own session (so in its own
    autogroup, as services are), for the length of a `with` block."""

    def __init__(self, count):
        self.count = count
        self.processes = []

    def __enter__(self):
        for _ in range(self.count):
            self.processes.append(subprocess.Popen(
                ["python3", "-c", "while 1: pass"], start_new_session=True))
        return self

    def __exit__(self, *exc):
        for process in self.processes:
            process.kill()
            process.wait()
        return False


def measure_pauses(binary, python, rate, seconds):
    """One --native recording of native_target.py by `binary`: its pauses and the target's
    running thread's CPU share over the recording."""
    with Target(python, "native_target.py") as target:
        main = target.report["main"]
        start_cpu, start = run_ns(target.pid, main), time.monotonic()
        command = [binary, "-v", "record", "--pid", str(target.pid), "--native", "--rate",
                   str(rate), "--duration", str(seconds), "-o", "/dev/null", "-f", "folded"]
        result = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                encoding="utf-8")
        share = (run_ns(target.pid, main) - start_cpu) / 1e9 / (time.monotonic() - start)
    found = PAUSES_MAX.search(result.stderr)
    summary = common.SUMMARY.search(result.stderr)
    if result.returncode != 0 or found is None or summary is None:
        raise RuntimeError("%s failed: %s" % (binary, result.stderr.strip()[-500:]))
    return {"pauses": int(found.group(1).replace(",", "")),
            "p50": float(found.group(2)) * UNIT[found.group(3)],
            "p99": float(found.group(4)) * UNIT[found.group(5)],
            "max": float(found.group(6)) * UNIT[found.group(7)],
            "rate": float(summary.group(3)), "share": share}


def bench_native_pauses(args):
    print("\n## 13b. --native pauses on a quiet and on a busy host, per version, old and new")
    seconds = 3 if args.quick else 5
    rounds = 1 if args.quick else 3
    binaries = [("new", common.SPYGLASS)]
    if args.baseline:
        binaries.insert(0, ("old", args.baseline))
    pythons = [(label, python_for(label)) for label in PAUSE_VERSIONS]
    pythons = [(label, path) for label, path in pythons if path is not None]
    print("workload: tests/workloads/native_target.py (its main thread always running, in a "
          "ctypes qsort callback); busy: two `python3 -c 'while 1: pass'` beside it, each in its "
          "own session, on this %d-CPU machine; %d rounds of %d s per cell, interleaved (each "
          "round: every load, version and binary once, a fresh target each); p50 and p99: "
          "medians of the rounds' own, max: the largest; the target thread's CPU share: its "
          "schedstat run time over the recording's wall time, median" % (
              os.cpu_count(), rounds, seconds))
    for name, path in binaries:
        print("%s: %s" % (name, subprocess.run([path, "--version"], stdout=subprocess.PIPE,
                                               encoding="utf-8").stdout.strip()))
    loads = [("quiet", 0), ("2 busy", 2)]
    rates = (100, 1000)
    runs = {}
    for _ in range(rounds):
        for load, count in loads:
            with BusyNeighbours(count):
                for label, python in pythons:
                    for rate in rates:
                        for name, path in binaries:
                            runs.setdefault((label, load, rate, name), []).append(
                                measure_pauses(path, python, rate, seconds))
    print("| Python | host | rate | spyglass | achieved Hz | pauses | p50 µs | p99 µs | max µs | "
          "target thread CPU share |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for label, _ in pythons:
        for load, _ in loads:
            for rate in rates:
                for name, _ in binaries:
                    rows = runs[(label, load, rate, name)]
                    print("| %s | %s | %d | %s | %.1f | %d | %.0f | %.0f | %.0f | %.3f |" % (
                        label, load, rate, name,
                        statistics.median(r["rate"] for r in rows),
                        statistics.median(r["pauses"] for r in rows),
                        statistics.median(r["p50"] for r in rows),
                        statistics.median(r["p99"] for r in rows),
                        max(r["max"] for r in rows),
                        statistics.median(r["share"] for r in rows)))


def thread_cpu_ns(pid, name):
    """The run time (schedstat) of the thread of `pid` whose name is `name`; None if none is."""
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return None
    for tid in tasks:
        try:
            with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
                if f.read().strip() != name:
                    continue
            with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                return int(f.read().split()[0])
        except OSError:
            continue
    return None


def status_kb(pid, field):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def native_frames_per_stack(path, tid):
    """The native frames per merged stack of thread `tid` in a folded --native-all --threads
    file, weighted by count (stacks with no native frame, left as Python frames, not counted)."""
    frames = weight = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            stack, count = line.rstrip("\n").rsplit(" ", 1)
            if not stack.startswith("thread %d " % tid):
                continue
            native = [frame for frame in stack.split(";")[1:]
                      if not frame.startswith("[") and not PYTHON_FRAME.search(frame)]
            if native:
                frames += len(native) * int(count)
                weight += int(count)
    return frames / weight if weight else 0.0


def bench_native_memory(args, python):
    """One --native-all recording of native_target.py at 100 Hz: spyglass's RSS along it (flat?)
    and its peak, and the resolver thread's CPU in the second half of the run (warm caches)
    per unwound stack and per native frame."""
    seconds = 10 if args.quick else 60
    print("\nRSS and resolution cost: --native-all, native_target.py on 3.12, 100 Hz, %d s, "
          "one run" % seconds)
    out = out_file(".txt")
    try:
        with Target(python, "native_target.py") as target:
            command = [common.SPYGLASS, "-v", "record", "--pid", str(target.pid), "--rate", "100",
                       "--duration", str(seconds), "--native-all", "--threads", "-f", "folded",
                       "-o", out]
            process = subprocess.Popen(command, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.PIPE)
            stderr = []
            reader = threading.Thread(target=lambda: stderr.append(process.stderr.read()))
            reader.start()
            start = time.monotonic()
            rss, peak, half, late = [], None, None, None
            while process.poll() is None:
                elapsed = time.monotonic() - start
                kb = status_kb(process.pid, "VmRSS")
                if kb is not None:
                    rss.append((elapsed, kb))
                    peak = status_kb(process.pid, "VmHWM") or peak
                cpu = thread_cpu_ns(process.pid, "spyglass-res")
                # The resolver's CPU at half time and as late as possible before it drains.
                if cpu is not None and half is None and elapsed >= seconds / 2:
                    half = (elapsed, cpu)
                if cpu is not None and elapsed <= seconds - 0.5:
                    late = (elapsed, cpu)
                time.sleep(0.25)
            reader.join()
            main = target.report["main"]
        text = stderr[0].decode("utf-8", "replace")
        resolved = RESOLVED.search(text)
        per_stack = native_frames_per_stack(out, main)
    finally:
        os.unlink(out)
    if not rss or resolved is None or half is None or late is None or late[0] <= half[0]:
        print("(no figures: %s)" % text.strip().splitlines()[-1:])
        return
    marks = [rss[min(len(rss) - 1, int(len(rss) * share))] for share in (0.1, 0.5, 0.9)]
    marks.append(rss[-1])
    print("| RSS at | " + " | ".join("%.0f s" % t for t, _ in marks) + " | peak (VmHWM) |")
    print("|---|" + "---|" * (len(marks) + 1))
    print("| MiB | " + " | ".join("%.1f" % (kb / 1024.0) for _, kb in marks) +
          " | %.1f |" % ((peak or 0) / 1024.0))
    # Unwound stacks spread evenly over the run (the running main thread's, one per tick).
    unwound = int(resolved.group(1))
    window = (late[0] - half[0]) / seconds
    stacks = unwound * window
    cpu_us = (late[1] - half[1]) / 1e3
    print("resolver thread, %.1f s to %.1f s: %.1f ms of CPU for ~%.0f unwound stacks (%d in the "
          "run) of %.1f native frames each (the main thread's merged stacks): %.1f µs per stack, "
          "%.2f µs per native frame" % (half[0], late[0], cpu_us / 1e3, stacks, unwound, per_stack,
                                         cpu_us / stacks if stacks else 0,
                                         cpu_us / (stacks * per_stack) if stacks and per_stack
                                         else 0))
