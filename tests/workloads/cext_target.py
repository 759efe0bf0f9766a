"""Time spent in a C extension, for --native. Runs on Python 2.7 and 3.6+.

  cext_target.py FD DIR

DIR holds spyglass_cext built against this interpreter (c_extension/spyglass_cext.c). Thread
"spinner" calls spin_in_c, which spins in C without the GIL; the main thread calls
calls_back, whose C function calls the Python function callback again and again. One JSON
line goes to FD once both run: {"main": TID, "spinner": TID, "lines": {name: line}}.
"""
import ctypes
import ctypes.util
import json
import os
import sys
import threading

READY_FD = int(sys.argv[1])
sys.path.insert(0, sys.argv[2])
import spyglass_cext  # noqa: E402

libc = ctypes.CDLL(ctypes.util.find_library("c"))
tids = {}
started = threading.Semaphore(0)


def gettid():
    return libc.syscall(186)  # SYS_gettid on x86-64; threading.get_native_id is 3.8+


def spin_in_c():
    tids["spinner"] = gettid()
    started.release()
    spyglass_cext.spin_forever()  # line: spin


def callback():
    x = 0
    for i in range(300):
        x += i  # line: callback
    return x


def calls_back():
    spyglass_cext.call_back(callback)  # line: call_back


thread = threading.Thread(target=spin_in_c, name="spinner")
thread.daemon = True
thread.start()
started.acquire()
tids["main"] = gettid()
lines = {}
with open(__file__) as source:
    for number, text in enumerate(source, 1):
        if "# line: " in text and "lines[" not in text:
            lines[text.split("# line: ")[1].strip()] = number
tids["lines"] = lines
os.write(READY_FD, (json.dumps(tids) + "\n").encode())
calls_back()
