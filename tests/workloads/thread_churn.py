"""Threads born and dying thousands of times a second, beside a long-lived worker: the target
that crashed spyglass on 3.11 (a thread state freed while its frames were walked). Runs on
Python 2.7 and 3.6+.

  thread_churn.py FD [--spinner]

Thread "worker" computes in compute() and sleeps 1 ms, forever. The main thread starts and
joins 20 short threads at a time (short_lived()), forever. With --spinner, thread "spinner"
computes without ever sleeping (a long-lived thread that is always running or waiting for the
GIL). One line goes to FD once they run.
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


def spin():
    while True:
        sum(range(1000))


worker = threading.Thread(target=compute, name="worker")
worker.daemon = True
worker.start()
if "--spinner" in sys.argv[2:]:
    spinner = threading.Thread(target=spin, name="spinner")
    spinner.daemon = True
    spinner.start()
os.write(READY_FD, b"ready\n")
while True:
    batch = [threading.Thread(target=short_lived) for _ in range(20)]
    for thread in batch:
        thread.start()
    for thread in batch:
        thread.join()
