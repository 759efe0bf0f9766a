"""Target for spyglass's record tests; runs on Python 2.7 and 3.6+.

  record_target.py FD [seconds]

Thread "busy" spends a quarter of its time in fast_part() and three quarters in slow_part(),
spinning on the CPU. Thread "sleeper" waits in sleeping_function(). Once both run, one line goes
to file descriptor FD. The process exits after `seconds` (default: never) with status 0.
"""
import os
import sys
import threading
import time

READY_FD = int(sys.argv[1])
LIFETIME = float(sys.argv[2]) if len(sys.argv) > 2 else None
UNIT = 0.002


def spin(seconds):
    end = time.time() + seconds
    while time.time() < end:
        pass


def fast_part():
    spin(UNIT)


def slow_part():
    spin(3 * UNIT)


def busy_loop(started):
    started.set()
    while True:
        fast_part()
        slow_part()


def sleeping_function(started):
    started.set()
    while True:
        time.sleep(3600)


def start(name, target):
    started = threading.Event()
    thread = threading.Thread(target=target, name=name, args=(started,))
    thread.daemon = True
    thread.start()
    started.wait()


start("busy", busy_loop)
start("sleeper", sleeping_function)
os.write(READY_FD, b"ready\n")
if LIFETIME is None:
    while True:
        time.sleep(3600)
time.sleep(LIFETIME)
