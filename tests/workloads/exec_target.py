"""A process that replaces its program mid-recording. Runs on Python 2.7 and 3.6+.

  exec_target.py FD python|sleep [seconds]

Spins in before_exec() for `seconds` (default 1.5) after writing one line to FD, then execs
either this Python again, running after_exec() for as long, or /bin/sleep for as long.
"""
import os
import sys
import time

READY_FD = int(sys.argv[1])
WHAT = sys.argv[2]
SECONDS = float(sys.argv[3]) if len(sys.argv) > 3 else 1.5


def before_exec():
    end = time.time() + SECONDS
    while time.time() < end:
        pass


AFTER = """
import time


def after_exec():
    end = time.time() + %r
    while time.time() < end:
        pass


after_exec()
""" % SECONDS

os.write(READY_FD, b"ready\n")
before_exec()
if WHAT == "sleep":
    os.execv("/bin/sleep", ["sleep", str(SECONDS)])
os.execv(sys.executable, [sys.executable, "-c", AFTER])
