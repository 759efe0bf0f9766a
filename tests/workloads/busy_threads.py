"""One thread spinning, one sleeping, the main thread sleeping: a target to run inside a
container (its own PID and mount namespace). Runs on Python 2.7 and 3.6+.

  busy_threads.py FD

Writes one line to FD once both threads run: its PID as it sees it (1 in a new namespace).
"""
import os
import sys
import threading
import time

READY_FD = int(sys.argv[1])


def spin_here(started):
    started.release()
    n = 0
    while True:
        n = (n + 1) % 1000003


def sleep_here(started):
    started.release()
    while True:
        time.sleep(0.5)


started = threading.Semaphore(0)
for name, target in (("spinner", spin_here), ("sleeper", sleep_here)):
    thread = threading.Thread(target=target, name=name, args=(started,))
    thread.daemon = True
    thread.start()
started.acquire()
started.acquire()
os.write(READY_FD, ("%d\n" % os.getpid()).encode("ascii"))
while True:
    time.sleep(1)
