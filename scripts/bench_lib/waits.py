"""What reading wait reasons costs: per off-CPU thread-sample whose reason is read, per pass,
and the 50-thread rate at 1 kHz, waits on and off, interleaved within one run."""
import re
import statistics

from bench_lib.common import Target, python_for, run_verbose

WAIT_READS = re.compile(r"wait reasons: (\d+) read from the thread's syscall file, (\d+) kept")


def measure(python, workload, extra, rate, seconds, waits):
    with Target(python, workload, *extra) as target:
        args = ["record", "--pid", target.pid, "--rate", rate, "--duration", seconds, "-o",
                "/dev/null", "-f", "folded"]
        if not waits:
            args.append("--no-waits")
        summary, usage, stderr = run_verbose(args)
    found = WAIT_READS.search(stderr)
    summary["wait_reads"] = int(found.group(1)) if found else 0
    summary["cpu_s"] = usage.ru_utime + usage.ru_stime
    summary["ticks"] = summary["rate"] * summary["seconds"]
    return summary


def bench_waits(args):
    print("\n## 10. Wait reasons: their cost, waits on vs --no-waits (interleaved rounds, "
          "medians)")
    seconds = 3 if args.quick else 10
    rounds = 3 if args.quick else 5
    python = python_for("3.12")
    if python is None:
        return
    cases = [("20 threads blocking and waking (recv / sleep every 1 ms), 1 kHz",
              "wait_churn.py", [10], 1000),
             ("50 threads (1 busy, 49 in Event.wait), 1 kHz", "many_threads.py", [50, 1], 1000)]
    print("| workload | waits | achieved Hz | thread samples | reasons read | sampling thread "
          "ms | resolver thread ms | per pass µs | per thread-sample µs |")
    print("|---|---|---|---|---|---|---|---|---|")
    for what, workload, extra, rate in cases:
        runs = {True: [], False: []}
        for _ in range(rounds):
            for waits in (False, True):
                runs[waits].append(measure(python, workload, extra, rate, seconds, waits))
        medians = {}
        for waits in (False, True):
            rows = runs[waits]
            med = dict((key, statistics.median(r[key] for r in rows))
                       for key in ("rate", "samples", "wait_reads", "sampling_ms", "resolver_ms",
                                   "ticks"))
            medians[waits] = med
            print("| %s | %s | %.1f | %d | %d | %.0f | %.0f | %.1f | %.2f |" % (
                what, "on" if waits else "off", med["rate"], med["samples"], med["wait_reads"],
                med["sampling_ms"], med["resolver_ms"], med["sampling_ms"] * 1e3 / med["ticks"],
                med["sampling_ms"] * 1e3 / med["samples"]))
        on, off = medians[True], medians[False]
        # Within each round the two runs are neighbours: the difference per round, then its
        # median, is less exposed to the machine's drift than the difference of medians.
        per_read = [(a["sampling_ms"] / a["samples"] - b["sampling_ms"] / b["samples"]) *
                    a["samples"] * 1e3 / max(1, a["wait_reads"])
                    for a, b in zip(runs[True], runs[False])]
        per_pass = [(a["sampling_ms"] / a["ticks"] - b["sampling_ms"] / b["ticks"]) * 1e3
                    for a, b in zip(runs[True], runs[False])]
        # A few reads in a run (threads parked for good are read once) are lost in the noise
        # of the whole run's CPU: no figure per read then.
        per_read_text = ("added per reason read: %.2f µs (rounds: %s)" % (
            statistics.median(per_read), ", ".join("%.2f" % x for x in per_read))
            if on["wait_reads"] >= 1000 else
            "too few reasons read for a figure per read")
        print("|  | on - off | %+.1f Hz (%+.2f points) | | | | | %+.1f | %s |" % (
            on["rate"] - off["rate"], 100.0 * (on["rate"] - off["rate"]) / rate,
            statistics.median(per_pass), per_read_text))
