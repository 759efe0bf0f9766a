"""Many threads, most of them waiting: the benchmark target for sampling rate with many threads.

  many_threads.py FD [threads] [busy]

`threads` threads in total (default 50), `busy` of them spinning (default 1), the rest blocked in
wait_here(). One line goes to FD once all have started.
"""
import os
import sys
import threading

READY_FD = int(sys.argv[1])
THREADS = int(sys.argv[2]) if len(sys.argv) > 2 else 50
BUSY = int(sys.argv[3]) if len(sys.argv) > 3 else 1
never = threading.Event()


def nested_wait(depth):
    if depth > 0:
        return nested_wait(depth - 1)
    never.wait()


def wait_here(started):
    started.release()
    nested_wait(10)


def spin_here(started):
    started.release()
    n = 0
    while True:
        n = (n + 1) % 1000003


started = threading.Semaphore(0)
for i in range(THREADS - 1):
    target = spin_here if i < BUSY else wait_here
    thread = threading.Thread(target=target, args=(started,), name="t%d" % i)
    thread.daemon = True
    thread.start()
for i in range(THREADS - 1):
    started.acquire()
os.write(READY_FD, b"ready\n")
never.wait()
