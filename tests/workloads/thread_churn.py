"""Threads born and dying thousands of times a second, beside a long-lived worker: the target
that crashed spyglass on 3.11 (a thread state freed while its frames were walked). Runs on
Python 2.7 and 3.6+.

  thread_churn.py FD

Thread "worker" computes in compute() and sleeps 1 ms, forever. The main thread starts and
joins 20 short threads at a time (short_lived()), forever. One line goes to FD once both run.
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
