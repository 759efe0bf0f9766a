"""record --context: the sampling thread's CPU per thread-sample with the labels read, against
the same recording without them, interleaved in one run."""
import statistics

from bench_lib.common import Target, out_file, python_for, run_verbose


def bench_context(args):
    print("\n## record --context: the sampling thread's CPU per thread-sample, with and without "
          "(1 kHz, tests/workloads/context_target.py: 4 spinning threads, one changing its "
          "variable every 3 ms; recordings alternate, median of the rounds)")
    seconds = 3 if args.quick else 8
    rounds = 3 if args.quick else 5
    print("| Python | without (us) | --context request_id --context tenant (us) | difference "
          "(us) | rounds |")
    print("|---|---|---|---|---|")
    for label in ("3.12", "debian-sid-3.15"):
        python = python_for(label)
        if python is None:
            continue
        per_sample = {"without": [], "with": []}
        with Target(python, "context_target.py") as target:
            for _ in range(rounds):
                for name, extra in (("without", []),
                                    ("with", ["--context", "request_id", "--context",
                                              "tenant"])):
                    output = out_file(".txt")
                    summary, _, _ = run_verbose(["record", "--pid", target.pid, "--rate", 1000,
                                                 "--duration", seconds, "-o", output] + extra)
                    per_sample[name].append(summary["sampling_ms"] * 1e3 / summary["samples"])
        without = statistics.median(per_sample["without"])
        with_labels = statistics.median(per_sample["with"])
        print("| %s | %.2f | %.2f | %+.2f | %d |" % (label, without, with_labels,
                                                    with_labels - without, rounds))
    print("(every spinning thread runs between two samples, so its labels are read at each: "
          "the figure is the cost of a read, not of a cache hit)")
