"""A thread that sleeps at the bottom of a recursion deeper than spyglass's frame limit (4096).
Runs on Python 2.7 and 3.6+.

  deep_sleeper.py FD depth

Every real stack of the main thread is <module>, then `depth` frames of level(). One line goes
to FD once the stack is built.
"""
import os
import sys
import time

READY_FD = int(sys.argv[1])
DEPTH = int(sys.argv[2])
sys.setrecursionlimit(DEPTH + 100)


def level(n):
    if n > 1:
        return level(n - 1)
    os.write(READY_FD, b"ready\n")
    while True:
        time.sleep(1)


level(DEPTH)
