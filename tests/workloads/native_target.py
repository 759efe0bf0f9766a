"""Native frames between Python ones, and threads blocked in C, for --native. Runs on Python 2.7
and 3.6+.

  native_target.py FD

The main thread sorts forever with libc's qsort through ctypes, comparing in a Python callback
(compare): Python -> ctypes -> libffi -> qsort -> libffi -> Python. Thread "sleeper" sleeps in
time.sleep, thread "reader" blocks in os.read on a pipe nobody writes, thread "locker" waits
for a Lock that is never released. One JSON line goes to FD once all of them run:
{"main": TID, "sleeper": TID, "reader": TID, "locker": TID, "lines": {name: line}}.
"""
import ctypes
import ctypes.util
import json
import os
import sys
import threading
import time

READY_FD = int(sys.argv[1])
libc = ctypes.CDLL(ctypes.util.find_library("c"))
CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int))
tids = {}
started = threading.Semaphore(0)


def gettid():
    return libc.syscall(186)  # SYS_gettid on x86-64; threading.get_native_id is 3.8+


def compare(a, b):
    x = 0
    for i in range(200):
        x += i  # line: compare
    return a[0] - b[0]


callback = CMP(compare)


def sort_forever():
    arr = (ctypes.c_int * 200)(*range(200, 0, -1))
    while True:
        libc.qsort(arr, len(arr), ctypes.sizeof(ctypes.c_int), callback)  # line: qsort
        for i in range(200):
            arr[i] = 200 - i


def sleeper():
    tids["sleeper"] = gettid()
    started.release()
    while True:
        time.sleep(0.5)  # line: sleep


def reader():
    tids["reader"] = gettid()
    read_end, _ = os.pipe()
    started.release()
    os.read(read_end, 1)  # line: read


held = threading.Lock()
held.acquire()


def locker():
    tids["locker"] = gettid()
    started.release()
    held.acquire()  # line: acquire


for target in (sleeper, reader, locker):
    thread = threading.Thread(target=target, name=target.__name__)
    thread.daemon = True
    thread.start()
for _ in range(3):
    started.acquire()
tids["main"] = gettid()
lines = {}
with open(__file__) as source:
    for number, text in enumerate(source, 1):
        if "# line: " in text and "lines[" not in text:
            lines[text.split("# line: ")[1].strip()] = number
tids["lines"] = lines
os.write(READY_FD, (json.dumps(tids) + "\n").encode())
sort_forever()
