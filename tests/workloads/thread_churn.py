"""Threads born and dying thousands of times a second, beside a long-lived worker: the target
that crashed spyglass on 3.11 (a thread state freed while its frames were walked). Runs on
Python 2.7 and 3.6+.

  thread_churn.py FD [--report-traced]

Thread "worker" computes in compute() and sleeps 1 ms, forever. The main thread starts and
joins 20 short threads at a time (short_lived()), forever. One line goes to FD once both run.
With --report-traced, a thread watches /proc/self/task/*/status and writes "traced PID" to FD
whenever a thread of the process is traced by a tracer PID it has not reported yet (spyglass
seizes a thread the first time it pauses it).
"""
import os
import sys
import threading
import time

READY_FD = int(sys.argv[1])


def compute():
    while True:
        total = 0
        for i in range(2000):
            total += i * i
        time.sleep(0.001)


def short_lived():
    return sum(range(50))


def tracer():
    """The TracerPid of a thread of this process that has one, else 0."""
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return 0
    for task in tasks:
        try:
            with open("/proc/self/task/%s/status" % task) as f:
                for line in f:
                    if line.startswith("TracerPid:"):
                        if int(line.split()[1]) != 0:
                            return int(line.split()[1])
                        break
        except (IOError, OSError):
            pass  # exited meanwhile
    return 0


def report_traced():
    reported = 0
    while True:
        pid = tracer()
        if pid not in (0, reported):
            os.write(READY_FD, ("traced %d\n" % pid).encode())
            reported = pid
        time.sleep(0.001)


if "--report-traced" in sys.argv[2:]:
    watcher = threading.Thread(target=report_traced, name="watcher")
    watcher.daemon = True
    watcher.start()
worker = threading.Thread(target=compute, name="worker")
worker.daemon = True
worker.start()
os.write(READY_FD, b"ready\n")
while True:
    batch = [threading.Thread(target=short_lived) for _ in range(20)]
    for thread in batch:
        thread.start()
    for thread in batch:
        thread.join()
