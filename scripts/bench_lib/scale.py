"""Scale: a thousand threads, a stack deeper than the frame limit, short-lived children."""
import os
import re

from bench_lib.common import COUNTS, Target, out_file, python_for, run_verbose
from bench_lib.common import harness
from test_record import function_of, parse_folded  # noqa: E402 (tests/integration)

PAUSES = re.compile(r"([\d,]+) pauses? \(p50")


def bench_threads(args):
    print("\n## 7. A thousand threads (999 waiting in Event.wait, 1 spinning), 1 kHz")
    seconds = 3 if args.quick else 10
    python = python_for("3.12")
    if python is None:
        return
    print("| which threads ran | achieved Hz | share | spyglass CPU (share of a core) | "
          "sampling thread | resolver thread | samples without a read |")
    print("|---|---|---|---|---|---|---|")
    for what, env in [("scheduler events", {}),
                      ("schedstat of every thread", {"SPYGLASS_NO_SCHED_EVENTS": "1"})]:
        output = out_file(".txt")
        with Target(python, "many_threads.py", 1000, 1) as target:
            summary, usage, stderr = run_verbose(["record", "--pid", target.pid, "--rate", 1000,
                                                  "--duration", seconds, "-o", output], env)
        os.unlink(output)
        cpu = usage.ru_utime + usage.ru_stime
        counts = COUNTS.search(stderr)
        unread = int(counts.group(3)) / max(1, int(counts.group(1))) if counts else 0
        print("| %s | %.1f | %.1f%% | %.2f s (%.0f%%) | %.0f ms | %.0f ms | %.1f%% |" % (
            what, summary["rate"], summary["rate"] / 10.0, cpu, 100 * cpu / summary["seconds"],
            summary.get("sampling_ms", 0), summary.get("resolver_ms", 0), 100 * unread))


def bench_deep(args):
    print("\n## 8. A 5,000-deep stack (cut at 4,096 frames, marked): busy at 100 Hz, asleep "
          "at 1 kHz")
    seconds = 3 if args.quick else 10
    print("| Python | thread | asked Hz | achieved Hz | share | errors | us per sample | pauses |")
    print("|---|---|---|---|---|---|---|---|")
    for label in harness.EXPECTED:
        python = python_for(label)
        if python is None:
            continue
        for workload, extra, rate, what in [("deep_stack.py", [5000], 100, "busy"),
                                            ("deep_sleeper.py", [5000], 1000, "asleep")]:
            output = out_file(".txt")
            with Target(python, workload, *extra) as target:
                summary, usage, stderr = run_verbose(["record", "--pid", target.pid, "--rate",
                                                      rate, "--duration", seconds, "-o", output])
            os.unlink(output)
            cpu = usage.ru_utime + usage.ru_stime
            found = PAUSES.search(stderr)
            print("| %s | %s | %d | %.1f | %.1f%% | %d | %.0f | %s |" % (
                label, what, rate, summary["rate"], 100 * summary["rate"] / rate,
                summary["errors"], cpu * 1e6 / max(1, summary["samples"]),
                found.group(1) if found else "0"))


def bench_children(args):
    print("\n## 9. --subprocesses: 300 Python children living 50 ms each, 4 at a time, 200 Hz")
    python = python_for("3.12")
    if python is None:
        return
    print("| how children are found | children sampled in child_work() | of | achieved Hz |")
    print("|---|---|---|---|")
    for what, env in [("the kernel's fork/exec records", {}),
                      ("a scan of /proc every 200 ms", {"SPYGLASS_NO_SCHED_EVENTS": "1"})]:
        output = out_file(".txt")
        with Target(python, "short_children.py", 300, 0.05) as target:
            summary, _, _ = run_verbose(["record", "--pid", target.pid, "--subprocesses",
                                         "--rate", 200, "-o", output], env)
        roots = {f[0] for f, _ in parse_folded(output)
                 if any(function_of(x) == "child_work" for x in f)}
        os.unlink(output)
        print("| %s | %d | 300 | %.1f |" % (what, len(roots), summary["rate"]))
