"""What --native costs: pauses of running threads (p50, p99), the sampling and resolver threads'
CPU, the achieved rate, and the CPU share the target's running thread keeps, against
Python-only sampling and --native --nonblocking, interleaved within one run."""
import re
import statistics
import time

from bench_lib.common import Target, python_for, run_verbose

PAUSES = re.compile(r"(\d[\d,]*) pauses? \(p50 ([\d.]+) (µs|ms|s|ns), p99 ([\d.]+) (µs|ms|s|ns)")
NATIVE = re.compile(r"native stacks: (\d+) of blocked threads taken without a stop \((\d+) moved "
                    r"while read\), (\d+) with a stop")
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
          "ctypes qsort callback, 3 threads blocked in sleep, read and a Lock)")
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
                args = ["record", "--pid", target.pid, "--rate", 100, "--duration", seconds,
                        "-o", "/dev/null", "-f", "folded"] + mode
                summary, _, stderr = run_verbose(args)
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
