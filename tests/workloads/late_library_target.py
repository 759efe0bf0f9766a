"""A library loaded with ctypes after spyglass attached, in the middle of the stack, for
--native. Runs on Python 2.7 and 3.6+.

  late_library_target.py FD DIR

DIR holds libspyglass_late_a.so and libspyglass_late_b.so (late_library/spyglass_late.c built
twice). The main thread writes {"main": TID, "lines": {name: line}} to FD, then works in
Python until DIR/go exists (the test makes it once spyglass says its unwinder knows the
target's modules; not a signal: a signal to a traced thread waits for the tracer to pass it
on), and only then loads library a, whose loop calls back into Python
(callback_a) for PHASE_SECONDS; then it loads b and calls back into callback_b until killed.
Nothing is unloaded: spyglass names frames after the target ran on, so a library unloaded
before then would be gone (or replaced) by the time its frames are named. It writes
{"a": address, "b": address} of the two loops to FD once b is loaded.
"""
import ctypes
import ctypes.util
import json
import os
import sys
import time

READY_FD = int(sys.argv[1])
DIR = sys.argv[2]
PHASE_SECONDS = 1.5
CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)
libc = ctypes.CDLL(ctypes.util.find_library("c"))


def gettid():
    return libc.syscall(186)  # SYS_gettid on x86-64; threading.get_native_id is 3.8+


def work():
    x = 0
    for i in range(300):
        x += i
    return x


deadline = [0.0]


def callback_a(i):
    work()  # line: callback_a
    return 1 if time.time() < deadline[0] else 0


def callback_b(i):
    work()  # line: callback_b
    return 1


def phase_a(lib):
    deadline[0] = time.time() + PHASE_SECONDS
    lib.spyglass_late_a_loop(CALLBACK(callback_a))  # line: phase_a


def phase_b(lib):
    lib.spyglass_late_b_loop(CALLBACK(callback_b))  # line: phase_b


lines = {}
with open(__file__) as source:
    for number, text in enumerate(source, 1):
        if "# line: " in text and "lines[" not in text:
            lines[text.split("# line: ")[1].strip()] = number
os.write(READY_FD, (json.dumps({"main": gettid(), "lines": lines}) + "\n").encode())
while not os.path.exists(os.path.join(DIR, "go")):
    work()
lib_a = ctypes.CDLL(os.path.join(DIR, "libspyglass_late_a.so"))
address_a = ctypes.cast(lib_a.spyglass_late_a_loop, ctypes.c_void_p).value
phase_a(lib_a)
lib_b = ctypes.CDLL(os.path.join(DIR, "libspyglass_late_b.so"))
address_b = ctypes.cast(lib_b.spyglass_late_b_loop, ctypes.c_void_p).value
os.write(READY_FD, (json.dumps({"a": address_a, "b": address_b}) + "\n").encode())
phase_b(lib_b)
