"""Target for spyglass top's tests; runs on Python 2.7 and 3.6+.

  top_target.py FD [seconds]

Thread "burner" spins on the CPU in burn(); threads "waiter-1" and "waiter-2" sleep in
wait_here(); the main thread sleeps in main_idle(). So in the wall view wait_here() has half of
the samples (2 threads of 4) and burn() and main_idle() a quarter each; in the cpu view burn()
has them all. Once every thread runs, one line goes to file descriptor FD. The process exits
after `seconds` (default: never) with status 0.
"""
import os
import sys
import threading
import time

READY_FD = int(sys.argv[1])
LIFETIME = float(sys.argv[2]) if len(sys.argv) > 2 else None


def burn(started):
    started.set()
    n = 0
    while True:
        n += 1


def wait_here(started):
    started.set()
    while True:
        time.sleep(3600)


def main_idle(seconds):
    if seconds is None:
        while True:
            time.sleep(3600)
    time.sleep(seconds)


def start(name, target):
    started = threading.Event()
    thread = threading.Thread(target=target, name=name, args=(started,))
    thread.daemon = True
    thread.start()
    started.wait()


start("burner", burn)
start("waiter-1", wait_here)
start("waiter-2", wait_here)
os.write(READY_FD, b"ready\n")
main_idle(LIFETIME)
