"""Target for spyglass's diff tests; runs on Python 2.7 and 3.6+.

  shares.py FD SHARE

The main thread spins on the CPU forever, spending SHARE (0..1) of its time in grown() and
the rest in steady(), in rounds of 5 to 15 ms, drawn at random: rounds of a fixed length would
be in step with a fixed sampling rate (10 ms rounds at 200 Hz put every sample at the same two
points of a round), and the shares seen would depend on where those points fell. One line
goes to file descriptor FD once it runs.
"""
import os
import random
import sys
import time

READY_FD = int(sys.argv[1])
SHARE = float(sys.argv[2])
ROUND = 0.010


def spin(seconds):
    end = time.time() + seconds
    while time.time() < end:
        pass


def grown(length):
    spin(length * SHARE)


def steady(length):
    spin(length * (1 - SHARE))


grown(ROUND)
os.write(READY_FD, b"ready\n")
while True:
    length = ROUND * random.uniform(0.5, 1.5)
    grown(length)
    steady(length)
