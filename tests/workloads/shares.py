"""Target for spyglass's diff tests; runs on Python 2.7 and 3.6+.

  shares.py FD SHARE

The main thread spins on the CPU forever, spending SHARE (0..1) of its time in grown() and
the rest in steady(), in 10 ms rounds. One line goes to file descriptor FD once it runs.
"""
import os
import sys
import time

READY_FD = int(sys.argv[1])
SHARE = float(sys.argv[2])
ROUND = 0.010


def spin(seconds):
    end = time.time() + seconds
    while time.time() < end:
        pass


def grown():
    spin(ROUND * SHARE)


def steady():
    spin(ROUND * (1 - SHARE))


grown()
os.write(READY_FD, b"ready\n")
while True:
    grown()
    steady()
