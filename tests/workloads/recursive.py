"""py-spy's recursive.py: a stack that changes faster than it can be read frame by frame (calls
and returns every few hundred nanoseconds). Runs on Python 2.7 and 3.6+.

  recursive.py FD

Every real stack of the main thread is <module>, then 1 to 21 frames of recurse(). One line
goes to FD before the loop starts.
"""
import os
import sys

READY_FD = int(sys.argv[1])


def recurse(x):
    if x == 0:
        return
    recurse(x - 1)


os.write(READY_FD, b"ready\n")
while True:
    recurse(20)
