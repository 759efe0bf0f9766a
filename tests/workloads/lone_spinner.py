"""One thread, "spinner", spinning in spin_here(); the main thread blocks in join() for good. No
thread ever wants the GIL from it, so it is on a CPU (or waiting for one) at every moment: the
only time it is missing from a CPU-mode profile is time that was not counted. Python 2.7 and 3.6+.

  lone_spinner.py FD

Writes its PID and a newline to FD once the spinner runs.
"""
import os
import sys
import threading

READY_FD = int(sys.argv[1])


def spin_here(started):
    started.set()
    n = 0
    while True:
        n = (n + 1) % 1000003


started = threading.Event()
spinner = threading.Thread(target=spin_here, name="spinner", args=(started,))
spinner.daemon = True
spinner.start()
started.wait()
os.write(READY_FD, ("%d\n" % os.getpid()).encode("ascii"))
spinner.join()
