"""Ground truth for accuracy: one thread burns the CPU in burn() for 30% of every cycle and
sleeps in rest() for the other 70%.

  ground_truth.py FD [cycle_seconds] [busy_share]

One line goes to FD when the first cycle starts. The process runs until killed.
"""
import os
import sys
import time

READY_FD = int(sys.argv[1])
CYCLE = float(sys.argv[2]) if len(sys.argv) > 2 else 0.1
SHARE = float(sys.argv[3]) if len(sys.argv) > 3 else 0.3


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
    while True:
        begin = start + cycle * CYCLE
        burn(begin + SHARE * CYCLE)
        rest(begin + CYCLE)
        cycle += 1


main()
