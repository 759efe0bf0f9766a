"""Native frames between Python ones, and threads blocked in C, for --native. Runs on Python 2.7
and 3.6+.

  native_target.py FD [LIBRARY]

The main thread sorts forever with libc's qsort through ctypes, comparing in a Python callback
(compare): Python -> ctypes -> libffi -> qsort -> libffi -> Python. Thread "sleeper" sleeps in
time.sleep, thread "reader" blocks in os.read on a pipe nobody writes, thread "receiver" in a
socket's recv on a socket pair nobody writes to, thread "locker" waits for a Lock that is never
released. Thread "deep" blocks in os.read at the bottom of a recursion through map (a C call per
level) whose stack is about 48 KiB deep (measured: between spyglass's first and largest stack
copies). With LIBRARY (c_extension/frame_pointer_block.c, built), thread "fp_reader" blocks in
its spyglass_fp_block (a frame-pointer frame over glibc's syscall()) on another pipe. One JSON
line goes to FD once all of them run and the ones that block for good are in their system call:
{"main": TID, "sleeper": TID, "reader": TID, "receiver": TID, "locker": TID, "deep": TID,
"deep_stack": bytes[, "fp_reader": TID], "lines": {name: line}}.
"""
import ctypes
import ctypes.util
import json
import os
import socket
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


def receiver():
    tids["receiver"] = gettid()
    ours, theirs = socket.socketpair()  # theirs stays open: no end of file
    started.release()
    ours.recv(1)  # line: recv


def fp_reader():
    tids["fp_reader"] = gettid()
    read_end, _ = os.pipe()
    library = ctypes.CDLL(sys.argv[2])
    started.release()
    library.spyglass_fp_block(read_end)  # line: fp_read


held = threading.Lock()
held.acquire()

SYS_READ, SYS_RECVFROM, SYS_FUTEX = 0, 45, 202
DEEP_STACK = 48 << 10  # between spyglass's first stack copy (32 KiB) and its largest (64 KiB)


def blocked_stack(tid, call):
    """Bytes of stack thread `tid` uses (from its stack pointer to the end of its mapping) while
    it is blocked in system call number `call`; None while it is not."""
    with open("/proc/self/task/%d/syscall" % tid) as f:
        fields = f.read().split()
    if not fields or fields[0] != str(call):
        return None
    sp = int(fields[-2], 16)
    with open("/proc/self/maps") as f:
        for line in f:
            start, end = [int(x, 16) for x in line.split()[0].split("-")]
            if start <= sp < end:
                return end - sp
    return None


def wait_blocked(tid, call):
    while True:
        used = blocked_stack(tid, call)
        if used is not None:
            return used
        time.sleep(0.001)


def deep(n, read_end):
    if n > 1:
        return list(map(deep, [n - 1], [read_end]))
    os.read(read_end, 1)  # line: deep


def deep_thread(depth, name):
    """A thread `depth` calls of deep() down, blocked at the bottom: (its tid, the pipe's write
    end that lets it return)."""
    read_end, write_end = os.pipe()
    box = {}

    def run():
        box["tid"] = gettid()
        started.release()
        deep(depth, read_end)

    thread = threading.Thread(target=run, name=name)
    thread.daemon = True
    thread.start()
    started.acquire()
    return box["tid"], write_end


def locker():
    tids["locker"] = gettid()
    started.release()
    held.acquire()  # line: acquire


threads = [sleeper, reader, receiver, locker] + ([fp_reader] if len(sys.argv) > 2 else [])
for target in threads:
    thread = threading.Thread(target=target, name=target.__name__)
    thread.daemon = True
    thread.start()
for _ in threads:
    started.acquire()
# The stack a level of deep() takes on this interpreter, from two threads blocked at two depths.
shallow, release_shallow = deep_thread(10, "calibrate")
deeper, release_deeper = deep_thread(30, "calibrate")
used_shallow, used_deeper = wait_blocked(shallow, SYS_READ), wait_blocked(deeper, SYS_READ)
per_level = max(1, (used_deeper - used_shallow) // 20)
os.write(release_shallow, b"x")
os.write(release_deeper, b"x")
tids["deep"], _ = deep_thread(max(2, 30 + (DEEP_STACK - used_deeper) // per_level), "deep")
tids["deep_stack"] = wait_blocked(tids["deep"], SYS_READ)
for name, call in (("reader", SYS_READ), ("receiver", SYS_RECVFROM), ("locker", SYS_FUTEX),
                   ("fp_reader", SYS_READ)):
    if name in tids:
        wait_blocked(tids[name], call)
tids["main"] = gettid()
lines = {}
with open(__file__) as source:
    for number, text in enumerate(source, 1):
        if "# line: " in text and "lines[" not in text:
            lines[text.split("# line: ")[1].strip()] = number
tids["lines"] = lines
os.write(READY_FD, (json.dumps(tids) + "\n").encode())
sort_forever()
