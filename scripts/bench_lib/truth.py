"""How true the figures are: the ground-truth workload's shares, and torn samples."""
import os
import re
import time

from bench_lib.common import Target, folded_shares, number, out_file, pprof_cpu_by_function, \
    python_for, run_spyglass, run_spyglass_stderr
from bench_lib.common import harness


def read_truth(path):
    """(seconds in burn(), seconds elapsed) as the ground-truth target last wrote them."""
    for _ in range(100):
        try:
            with open(path) as f:
                burned, elapsed = f.read().split()
            return float(burned), float(elapsed)
        except (OSError, ValueError):
            time.sleep(0.01)  # not written yet: its first cycle is 100 ms
    raise RuntimeError("the ground-truth target wrote no truth to %s" % path)


def bench_accuracy(args):
    print("\n## 5. Accuracy: burn() about 30% of every 100 ms on the CPU, rest() the rest asleep, "
          "1 kHz, target and spyglass on the same 2 cores")
    print("truth: the share of the recording's time the target itself measured in burn() "
          "(from its cycle before spyglass started to its cycle after spyglass ended); wall: "
          "burn()'s share of the weighted samples; cpu: the share of ticks its thread was on a "
          "CPU, weighted, and rest()'s share of the ticks (truth 0%)")
    runs = 2 if args.quick else 5
    seconds = 5 if args.quick else 10
    print("| Python | mode | run | truth | burn() | rest() | error (points) | late ticks |")
    print("|---|---|---|---|---|---|---|---|")
    for label in ("3.8", "3.12"):
        python = python_for(label)
        if python is None:
            continue
        for mode in ("wall", "cpu"):
            for run in range(1, runs + 1):
                folded = out_file(".txt")
                truth_file = out_file(".truth")
                with Target(python, "ground_truth.py", 0.1, 0.3, truth_file) as target:
                    burned0, elapsed0 = read_truth(truth_file)
                    summary, _ = run_spyglass(["record", "--pid", target.pid, "--rate", 1000,
                                               "--duration", seconds, "--mode", mode,
                                               "-o", folded])
                    time.sleep(0.2)  # the target's cycle after the recording ended
                    burned1, elapsed1 = read_truth(truth_file)
                truth = 100.0 * (burned1 - burned0) / (elapsed1 - elapsed0)
                os.unlink(truth_file)
                counts, total = folded_shares(folded, ["burn", "rest"])
                os.unlink(folded)
                if mode == "wall":
                    burn = 100.0 * counts["burn"] / max(1, total)
                    rest = 100.0 * counts["rest"] / max(1, total)
                else:
                    # Periods of on-CPU samples over the periods the recording lasted.
                    periods = summary["seconds"] * 1000
                    burn = 100.0 * counts["burn"] / periods
                    rest = 100.0 * counts["rest"] / periods
                print("| %s | %s | %d | %.2f%% | %.2f%% | %.2f%% | %+.2f | %d |" % (
                    label, mode, run, truth, burn, rest, burn - truth, summary["late"]))


def real_stack(frames, depth):
    functions = [frame.split(" (", 1)[0] for frame in frames]
    if not functions or functions[0] != "<module>":
        return False
    body = functions[1:]
    if body and body[-1] == "tick":
        body = body[:-1]
    return len(body) == depth and all(f == "level" for f in body)


PAUSES = re.compile(r"([\d,]+) pauses? \(p50 ([\d.]+ [µm]s), p99 ([\d.]+ [µm]s), max ([\d.]+ [µm]s)\)")
MARKERS = ("<unreadable", "<truncated>")


def classify(path, whole):
    """(total, marked, cut) samples of a folded file: marked = a marker frame, cut = neither
    marked nor a whole stack as `whole(functions)` defines it."""
    total = marked = cut = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            frames, count = line.rstrip("\n").rsplit(" ", 1)
            functions = [frame.split(" (", 1)[0] for frame in frames.split(";")]
            # The off-CPU leaf ([off-cpu], [wait ...], [cpu-starved]) is not a Python frame.
            if functions[-1].startswith("["):
                functions = functions[:-1]
            total += int(count)
            if any(fn.startswith(MARKERS) for fn in functions):
                marked += int(count)
            elif not whole(functions):
                cut += int(count)
    return total, marked, cut


def from_module(functions):
    return bool(functions) and functions[0] == "<module>"


TORN_WORKLOADS = [
    ("deep_stack.py 30", "deep_stack.py", [30], lambda f: real_stack(f, 30)),
    ("generators and coroutines", "generators.py", [], from_module),
    ("recursive.py (py-spy)", "recursive.py", [], from_module),
]


def bench_torn(args):
    print("\n## 6. Torn samples: 1 kHz on a busy thread, default (pause when torn) and "
          "--nonblocking")
    print("cut = neither a whole stack nor marked (a wrong answer given as right); marked = "
          "<unreadable>/<truncated>, counted as errors; paused = samples read with the thread "
          "stopped")
    seconds = 3 if args.quick else 10
    print("| workload | Python | mode | samples | cut | marked | paused | pause p50 / p99 |")
    print("|---|---|---|---|---|---|---|---|")
    for what, workload, extra, whole in TORN_WORKLOADS:
        for label in harness.EXPECTED:
            python, reason = harness.find_interpreter(label)
            if python is None:
                print("| %s | %s | skipped: %s | | | | | |" % (what, label, reason))
                continue
            for mode in ([], ["--nonblocking"]):
                output = out_file(".txt")
                with Target(python, workload, *extra) as target:
                    stderr = run_spyglass_stderr(["record", "--pid", target.pid, "--rate", 1000,
                                                  "--duration", seconds, "-o", output] + mode)
                total, marked, cut = classify(output, whole)
                os.unlink(output)
                pauses = PAUSES.search(stderr)
                paused = number(pauses.group(1)) if pauses else 0
                timing = "%s / %s" % (pauses.group(2), pauses.group(3)) if pauses else ""
                share = lambda n: "%d (%.2f%%)" % (n, 100.0 * n / max(total, 1))  # noqa: E731
                print("| %s | %s | %s | %d | %s | %s | %s | %s |" % (
                    what, label, mode[0] if mode else "default", total, share(cut),
                    share(marked), share(paused), timing))


