"""A 30-deep pure-Python stack that changes fast at its top: the benchmark target for the cost
per sample and for torn samples. Runs on Python 2.7 and 3.6+.

  deep_stack.py FD [depth]

Every real stack of the main thread is <module>, then `depth` frames of level(), then possibly
tick(): depth + 1 or depth + 2 frames. One line goes to FD once the stack is built.
"""
import os
import sys

READY_FD = int(sys.argv[1])
DEPTH = int(sys.argv[2]) if len(sys.argv) > 2 else 30
sys.setrecursionlimit(max(1000, DEPTH + 100))


def tick(n):
    return n * 3 + 1


def level(n):
    if n > 1:
        return level(n - 1)
    os.write(READY_FD, b"ready\n")
    total = 0
    while True:
        total = tick(total) % 1000003


level(DEPTH)
