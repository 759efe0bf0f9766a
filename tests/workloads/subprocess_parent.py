"""Starts a Python child that works in child_work(); the parent waits in parent_wait().

  subprocess_parent.py FD seconds

One line goes to FD (unless it is -1) once the child runs. Both exit after `seconds`.
"""
import os
import subprocess
import sys
import time

READY_FD = int(sys.argv[1])
SECONDS = float(sys.argv[2])

CHILD = """
import os, sys, time
def child_work(until):
    while time.time() < until:
        pass
os.write(int(sys.argv[1]), b"child\\n")
child_work(time.time() + float(sys.argv[2]))
"""


def parent_wait(child):
    child.wait()


read_fd, write_fd = os.pipe()
if sys.version_info[0] >= 3:
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(write_fd), str(SECONDS)],
                             pass_fds=(write_fd,))
else:
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(write_fd), str(SECONDS)],
                             close_fds=False)
os.close(write_fd)
os.read(read_fd, 100)
if READY_FD >= 0:
    os.write(READY_FD, ("ready %d\n" % child.pid).encode("ascii"))
parent_wait(child)
