"""A target that gets signals while spyglass holds its threads seized; runs on Python 2.7 and
3.6+.

  signalled.py FD

Two threads spin in Python (so that --blocking seizes and pauses both). Every SIGUSR1 is
counted by a handler, which runs in the main thread, and answered with a line on FD
("handled N"). The first line, once both threads spin, is "ready".
"""
import os
import signal
import sys
import threading

READY_FD = int(sys.argv[1])
handled = [0]


def on_usr1(signum, frame):
    handled[0] += 1
    os.write(READY_FD, ("handled %d\n" % handled[0]).encode("ascii"))


def spin_forever():
    while True:
        sum(i * i for i in range(200))


signal.signal(signal.SIGUSR1, on_usr1)
worker = threading.Thread(target=spin_forever, name="spinner")
worker.daemon = True
worker.start()
os.write(READY_FD, b"ready\n")
spin_forever()
