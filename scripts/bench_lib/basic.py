"""Cost per sample, target slowdown, achieved rate, peak RSS."""
import os
import statistics
import subprocess

from bench_lib import common
from bench_lib.common import Target, clock_floor, out_file, python_for, run_spyglass, \
    run_spyglass_peak_rss, run_verbose, WORKLOADS


def bench_cost(args):
    print("\n## 1. CPU cost per thread-sample (1 kHz; the clock floor measured in the same run, "
          "between the recordings)")
    seconds = 5 if args.quick else 20
    rows = []
    floors = []
    for label, workload, extra, what in [
            ("3.12", "deep_stack.py", [], "1 thread, 30-deep stack, Python 3.12"),
            ("3.10", "deep_stack.py", [], "1 thread, 30-deep stack, Python 3.10"),
            ("3.12", "many_threads.py", [50, 1], "50 threads (1 busy), Python 3.12"),
            ("3.10", "many_threads.py", [50, 1], "50 threads (1 busy), Python 3.10")]:
        python = python_for(label)
        if python is None:
            continue
        floors.append(clock_floor(1000))
        output = out_file(".txt")
        with Target(python, workload, *extra) as target:
            summary, usage, _ = run_verbose(["record", "--pid", target.pid, "--rate", 1000,
                                             "--duration", seconds, "-o", output])
        os.unlink(output)
        cpu = usage.ru_utime + usage.ru_stime
        ticks = summary["rate"] * summary["seconds"]
        rows.append((what, summary["samples"], ticks, cpu, summary["rate"],
                     summary.get("sampling_ms", 0) / 1e3, summary.get("resolver_ms", 0) / 1e3))
    floors.append(clock_floor(1000))
    floor = statistics.median(floors)
    print("| workload | thread samples | spyglass CPU s | sampling thread s | resolver thread "
          "s | us per thread-sample | sampling thread us per tick above the floor | achieved "
          "Hz |")
    print("|---|---|---|---|---|---|---|---|")
    for what, samples, ticks, cpu, rate, sampling, resolver in rows:
        above = (sampling * 1e6 - floor * ticks) / ticks
        print("| %s | %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f |" % (
            what, samples, cpu, sampling, resolver, cpu / samples * 1e6, above, rate))
    print("(clock floor: a loop that only sleeps to 1 kHz deadlines, as spyglass does, costs "
          "%.1f us of CPU per tick on this machine (median of %d measurements, %.1f to %.1f); "
          "build/tests/spyglass_clock_floor)" % (floor, len(floors), min(floors), max(floors)))


def bench_slowdown(args):
    print("\n## 2. Target slowdown (cpu_work.py, time measured inside the target)")
    python = python_for("3.12")
    if python is None:
        return
    rounds = 3 if args.quick else 15
    iterations = 2000000 if args.quick else 4000000
    work = [python, os.path.join(WORKLOADS, "cpu_work.py"), str(iterations)]
    times = {"alone": [], "100 Hz": [], "1 kHz": []}
    for _ in range(rounds):
        for name, rate in [("alone", None), ("100 Hz", 100), ("1 kHz", 1000)]:
            if rate is None:
                out = subprocess.run(work, stdout=subprocess.PIPE, encoding="utf-8", check=True)
                times[name].append(float(out.stdout.split()[-1]))
            else:
                output = out_file(".txt")
                out = subprocess.run([common.SPYGLASS, "record", "--rate", str(rate), "-o", output,
                                      "--"] + work, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, encoding="utf-8", check=True)
                os.unlink(output)
                times[name].append(float(out.stdout.split()[-1]))
    # The best of several runs is the run the noise touched least; the median is shown beside it.
    base = statistics.median(times["alone"])
    best = min(times["alone"])
    print("| run | median s | min s | max s | ratio to alone (median) | ratio to alone (min) |")
    print("|---|---|---|---|---|---|")
    for name, values in times.items():
        print("| %s | %.3f | %.3f | %.3f | %.4f | %.4f |" % (
            name, statistics.median(values), min(values), max(values),
            statistics.median(values) / base, min(values) / best))
    spread = (max(times["alone"]) - min(times["alone"])) / base
    print("(noise: the unprofiled runs spread over %.1f%% of their median, %d rounds)"
          % (spread * 100, rounds))


def bench_rate(args):
    print("\n## 3. Achieved rate vs asked rate")
    seconds = 3 if args.quick else 10
    python = python_for("3.12")
    if python is None:
        return
    print("| target | asked Hz | achieved Hz | share | late ticks | thread samples |")
    print("|---|---|---|---|---|---|")
    for workload, extra, what in [("deep_stack.py", [], "1 thread"),
                                  ("many_threads.py", [50, 1], "50 threads")]:
        for rate in (1000, 10000):
            output = out_file(".txt")
            with Target(python, workload, *extra) as target:
                summary, _ = run_spyglass(["record", "--pid", target.pid, "--rate", rate,
                                           "--duration", seconds, "-o", output])
            os.unlink(output)
            print("| %s | %d | %.1f | %.1f%% | %d | %d |" % (
                what, rate, summary["rate"], 100 * summary["rate"] / rate, summary["late"],
                summary["samples"]))


def bench_rss(args):
    print("\n## 4. Peak RSS of spyglass, recording at 1 kHz (50 threads, flame graph output)")
    python = python_for("3.12")
    if python is None:
        return
    durations = (5, 15) if args.quick else (10, 60)
    print("| duration s | peak RSS MB | thread samples |")
    print("|---|---|---|")
    for seconds in durations:
        output = out_file(".svg")
        with Target(python, "many_threads.py", 50, 2) as target:
            summary, peak_kb = run_spyglass_peak_rss(["record", "--pid", target.pid, "--rate",
                                                      1000, "--duration", seconds, "-o", output])
        os.unlink(output)
        print("| %d | %.1f | %d |" % (seconds, peak_kb / 1024.0, summary["samples"]))


