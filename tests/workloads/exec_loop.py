"""A process that replaces its program over and over: runs Python, spins, execs itself.

  exec_loop.py COUNT [seconds]

Spins in spin() for `seconds` (default 0.6), then execs this script with COUNT - 1, until
COUNT is 0: then it exits. Runs on Python 2.7 and 3.6+.
"""
import os
import sys
import time

COUNT = int(sys.argv[1])
SECONDS = float(sys.argv[2]) if len(sys.argv) > 2 else 0.6


def spin():
    end = time.time() + SECONDS
    while time.time() < end:
        pass


spin()
if COUNT > 0:
    os.execv(sys.executable, [sys.executable, __file__, str(COUNT - 1), str(SECONDS)])
