"""Starts `count` short-lived Python children, four at a time, each spinning in child_work()
for `seconds` (default 0.05) once its interpreter is up: the target for --subprocesses'
promptness. Runs on Python 2.7 and 3.6+.

  short_children.py FD count [seconds]

One line goes to FD before the first child starts; the parent exits once every child has.
"""
import os
import subprocess
import sys

READY_FD = int(sys.argv[1])
COUNT = int(sys.argv[2])
SECONDS = float(sys.argv[3]) if len(sys.argv) > 3 else 0.05

CHILD = """
import sys, time
def child_work(until):
    while time.time() < until:
        pass
child_work(time.time() + float(sys.argv[1]))
"""

os.write(READY_FD, b"ready\n")
running = []
for _ in range(COUNT):
    if len(running) == 4:
        running.pop(0).wait()
    running.append(subprocess.Popen([sys.executable, "-c", CHILD, str(SECONDS)]))
for child in running:
    child.wait()
