"""A fixed CPU-bound workload for measuring how much a profiler slows its target down.

  cpu_work.py [iterations]

Prints the seconds the work took (measured inside, with time.perf_counter on 3.x).
"""
import sys
import time

clock = getattr(time, "perf_counter", time.time)
ITERATIONS = int(sys.argv[1]) if len(sys.argv) > 1 else 3000000


def inner(i):
    return (i * 7 + 3) % 11


def middle(n):
    total = 0
    for i in range(n):
        total += inner(i)
    return total


def outer():
    return middle(ITERATIONS)


start = clock()
outer()
print("%.6f" % (clock() - start))
