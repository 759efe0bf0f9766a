"""Calls of known length, each measured by the target itself: the truth for spyglass's call
durations (`-f calls`). Python 2.7 and 3.6+.

  call_durations.py FD MODE SEED TRUTH_FILE [GAP_MS]

The main thread loops: between(GAP_MS) (default 3; sleeping or burning, as MODE says), then
work(ms, seq), where ms is 20 with probability 0.9 and 200 with 0.1 (random.Random(SEED)) and seq
counts the calls (a new int object each time: back-to-back calls differ in their arguments).
MODE is "sleep" (work sleeps in time.sleep) or "burn" (work spins on the CPU in its own frame).
GAP_MS 0 calls work back to back; the only Python code run between two calls is the loop's.

Each finished call of work appends one line to TRUTH_FILE (O_APPEND, one write: never a partial
line):

  START END MS CPU_MS

START and END are time.time() just before the call and just after it returns (for the test to
keep the calls inside its recording's window); MS is the call's length measured with
time.perf_counter() (time.time() on 2.7); CPU_MS its CPU time (time.process_time(); 2.7:
time.clock(), which is CPU time on Linux). The line is written outside the measured span.

One line (the PID) goes to FD just before the first call of work: the loop runs from then on,
until the process is killed.
"""
import os
import random
import sys
import time

READY_FD = int(sys.argv[1])
MODE = sys.argv[2]
SEED = int(sys.argv[3])
TRUTH = sys.argv[4]
GAP_MS = float(sys.argv[5]) if len(sys.argv) > 5 else 3.0

clock = getattr(time, "perf_counter", time.time)
cpu_clock = getattr(time, "process_time", None) or time.clock

if MODE not in ("sleep", "burn"):
    sys.stderr.write("call_durations.py: MODE is sleep or burn, not %r\n" % MODE)
    sys.exit(2)
BURN = MODE == "burn"


def work(ms, seq):
    if BURN:
        end = clock() + ms / 1000.0
        while clock() < end:
            pass
    else:
        time.sleep(ms / 1000.0)
    return seq


def between(ms):
    if ms <= 0:
        return
    if BURN:
        end = clock() + ms / 1000.0
        while clock() < end:
            pass
    else:
        time.sleep(ms / 1000.0)


def main():
    rng = random.Random(SEED)
    out = os.open(TRUTH, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    seq = 0
    ready = False
    while True:
        between(GAP_MS)
        if not ready:
            os.write(READY_FD, ("%d\n" % os.getpid()).encode("ascii"))
            ready = True
        ms = 200 if rng.random() < 0.1 else 20
        seq += 1
        cpu0 = cpu_clock()
        start = time.time()
        t0 = clock()
        work(ms, seq)
        t1 = clock()
        end = time.time()
        cpu1 = cpu_clock()
        os.write(out, ("%.6f %.6f %.3f %.3f\n" % (
            start, end, (t1 - t0) * 1000.0, (cpu1 - cpu0) * 1000.0)).encode("ascii"))


main()
