"""Ground truth for accuracy: one thread burns the CPU in burn() for 30% of every cycle and
sleeps in rest() for the other 70%.

  ground_truth.py FD [cycle_seconds] [busy_share] [TRUTH_FILE]

One line goes to FD when the first cycle starts. The process runs until killed. With
TRUTH_FILE, after every cycle "BURN_SECONDS ELAPSED_SECONDS" (since the first cycle) replaces
its content: the time really spent in burn(), which is a little less than busy_share of the
cycle (rest() oversleeps its deadline, and the next burn() ends on schedule).
"""
import os
import sys
import time

READY_FD = int(sys.argv[1])
CYCLE = float(sys.argv[2]) if len(sys.argv) > 2 else 0.1
SHARE = float(sys.argv[3]) if len(sys.argv) > 3 else 0.3
TRUTH = sys.argv[4] if len(sys.argv) > 4 else None


def burn(until):
    while time.time() < until:
        pass


def rest(until):
    left = until - time.time()
    if left > 0:
        time.sleep(left)


def main():
    os.write(READY_FD, b"ready\n")
    start = time.time()
    cycle = 0
    burned = 0.0
    while True:
        begin = start + cycle * CYCLE
        entered = time.time()
        burn(begin + SHARE * CYCLE)
        burned += time.time() - entered
        rest(begin + CYCLE)
        cycle += 1
        if TRUTH:
            with open(TRUTH + ".tmp", "w") as f:
                f.write("%.6f %.6f\n" % (burned, time.time() - start))
            os.rename(TRUTH + ".tmp", TRUTH)


main()
