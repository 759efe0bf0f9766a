"""Target for spyglass's bounded-table tests and benchmark; runs on Python 2.7 and 3.6+.

  new_code.py FD [threads]

Each thread compiles a new function every few milliseconds (a name never seen before, in a
file name never seen before) and spins in it: stacks, frames and strings a profiler has never
interned, for as long as it runs, like a service that generates code (templates, exec). One
line goes to file descriptor FD once every thread runs.
"""
import os
import sys
import threading
import time

READY_FD = int(sys.argv[1])
THREADS = int(sys.argv[2]) if len(sys.argv) > 2 else 1


def spin(seconds):
    end = time.time() + seconds
    while time.time() < end:
        pass


def generate(index, started):
    started.set()
    n = 0
    while True:
        n += 1
        name = "generated_%d_%d" % (index, n)
        code = compile("def %s():\n    spin(0.002)\n" % name, "<gen-%d-%d>" % (index, n), "exec")
        scope = {"spin": spin}
        exec(code, scope)
        scope[name]()


events = []
for i in range(THREADS):
    started = threading.Event()
    thread = threading.Thread(target=generate, args=(i, started), name="gen-%d" % i)
    thread.daemon = True
    thread.start()
    events.append(started)
for started in events:
    started.wait()
os.write(READY_FD, b"ready\n")
while True:
    time.sleep(3600)
