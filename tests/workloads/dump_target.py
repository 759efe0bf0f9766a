# -*- coding: utf-8 -*-
"""Target for spyglass's dump tests; runs on Python 2.7 and 3.6+.

Threads, each parked in a known place:
  MainThread  main_outer -> main_middle -> main_inner      blocked on a lock (idle)
  worker      busy_outer -> busy_middle -> busy_inner      spinning (active, holds the GIL)
  sleepy      sleep_outer -> sleep_inner                    in time.sleep (idle)
  recursive   recurse x 500                                  blocked on a lock
  unicode     fünf -> 函数 -> 𠀀 (3.x; ASCII names on 2.7), defined in "näme_Ω.py"

When every thread is in place it writes one JSON line to the file descriptor given as argv[1]:
its own view of each thread (ident, kernel tid, and the stack from sys._current_frames()),
then blocks until killed. A "reporter" thread writes it, once the idle threads are asleep in
the kernel, and then exits. The test reads that line instead of sleeping.
"""
import json
import os
import sys
import threading
import time

PY2 = sys.version_info[0] == 2
READY_FD = int(sys.argv[1])
RECURSION_DEPTH = 500

parked = threading.Semaphore(0)   # released once per thread that reached its place
forever = threading.Lock()
forever.acquire()                 # never released: acquiring it again blocks


def gettid():
    if hasattr(threading, "get_native_id"):
        return threading.get_native_id()
    import ctypes
    return ctypes.CDLL(None).syscall(186)  # SYS_gettid on x86-64


tids = {}


def register():
    tids[threading.current_thread().name] = gettid()


def main_inner():
    register()
    parked.release()
    forever.acquire()  # MARK:main_inner


def main_middle():
    main_inner()  # MARK:main_middle


def main_outer():
    main_middle()  # MARK:main_outer


def busy_inner():
    register()
    parked.release()
    n = 0
    while True:  # MARK:busy_loop_start
        n += 1
        if n < 0:
            break  # MARK:busy_loop_end


def busy_middle():
    busy_inner()  # MARK:busy_middle


def busy_outer():
    busy_middle()  # MARK:busy_outer


def sleep_inner():
    register()
    parked.release()
    time.sleep(3600)  # MARK:sleep_inner


def sleep_outer():
    sleep_inner()  # MARK:sleep_outer


def recurse(n):
    if n > 1:
        return recurse(n - 1)  # MARK:recurse_call
    register()
    parked.release()
    forever.acquire()  # MARK:recurse_leaf


if PY2:
    UNICODE_SOURCE = (
        "def outer_u():\n"
        "    middle_u()\n"
        "def middle_u():\n"
        "    inner_u()\n"
        "def inner_u():\n"
        "    register()\n"
        "    parked.release()\n"
        "    forever.acquire()\n")
    UNICODE_FILE = u"n\u00e4me_\u03a9.py".encode("utf-8")
    UNICODE_ENTRY = "outer_u"
else:
    UNICODE_SOURCE = (
        "def fünf():\n"
        "    函数()\n"
        "def 函数():\n"
        "    𠀀()\n"
        "def 𠀀():\n"
        "    register()\n"
        "    parked.release()\n"
        "    forever.acquire()\n")
    UNICODE_FILE = "näme_Ω.py"
    UNICODE_ENTRY = "fünf"
unicode_namespace = {"register": register, "parked": parked, "forever": forever}
exec(compile(UNICODE_SOURCE, UNICODE_FILE, "exec"), unicode_namespace)


def stack_of(frame):
    stack = []
    while frame is not None:
        code = frame.f_code
        name = getattr(code, "co_qualname", code.co_name)
        filename = code.co_filename
        if PY2 and isinstance(filename, str):
            filename = filename.decode("utf-8")
        if PY2 and isinstance(name, str):
            name = name.decode("utf-8")
        stack.append([name, filename, frame.f_lineno])
        frame = frame.f_back
    return stack


def task_state(tid):
    with open("/proc/self/task/%d/stat" % tid) as f:
        text = f.read()
    return text[text.rindex(")") + 2]


def report():
    """Runs in the "reporter" thread: once every other thread is parked and the idle ones are
    asleep in the kernel, write the target's own view of them, then exit."""
    for _ in range(5):
        parked.acquire()
    deadline = time.time() + 30
    for name in ("MainThread", "sleepy", "recursive", "unicode"):
        while task_state(tids[name]) != "S" and time.time() < deadline:
            time.sleep(0.001)
    frames = sys._current_frames()
    view = {"pid": os.getpid(), "version": list(sys.version_info[:3]), "threads": {}}
    for thread in threading.enumerate():
        if thread.name == "reporter":
            continue
        view["threads"][thread.name] = {
            "ident": thread.ident,
            "tid": tids.get(thread.name),
            "stack": stack_of(frames.get(thread.ident)),
        }
    os.write(READY_FD, (json.dumps(view) + "\n").encode("utf-8"))


def start(name, target, args=()):
    thread = threading.Thread(target=target, name=name, args=args)
    thread.daemon = True
    thread.start()
    return thread


sys.setrecursionlimit(RECURSION_DEPTH + 100)
start("worker", busy_outer)
start("sleepy", sleep_outer)
start("recursive", recurse, (RECURSION_DEPTH,))
start("unicode", unicode_namespace[UNICODE_ENTRY])
start("reporter", report)
main_outer()
