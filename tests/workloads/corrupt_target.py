"""A target that corrupts its own interpreter with ctypes, for tests/faults/test_hostile_target.py.

  corrupt_target.py FD MODE

A thread sleeps in outer() -> middle() -> sleeper() (an Event that is never set); another
sleeps too. Then MODE corrupts, and one JSON line goes to FD:
  code_name    sleeper's code object's co_name points at an int (kept alive: nothing is freed)
  frame_loop   sleeper's _PyInterpreterFrame.previous points at itself
  frame_loop_running   as frame_loop, but of a thread spinning in spin_here(), never returning
  list_loop    the newest thread state's `next` points at itself (the list shows 1 thread)
  list_null    the interpreter's thread list head is NULL
  none         nothing
{"tid": the sleeper's native id, "stack": [[name, line], ...] innermost first, before the change}
After that every thread only waits: nothing runs that reads what was corrupted. 3.11-3.13 only
(the offsets below are those of src/python/layout_tables.inc).
"""
import ctypes
import json
import os
import sys
import threading

READY_FD = int(sys.argv[1])
MODE = sys.argv[2]

# version: (code co_name, _PyInterpreterFrame.previous, .f_code/f_executable,
#           interp threads.head, tstate next)
OFFSETS = {
    (3, 11): (120, 48, 32, 16, 8),
    (3, 12): (120, 8, 0, 72, 8),
    (3, 13): (120, 8, 0, 7344, 8),
}
CO_NAME, PREVIOUS, FRAME_CODE, THREADS_HEAD, TSTATE_NEXT = OFFSETS[sys.version_info[:2]]
F_FRAME = 24  # PyFrameObject.f_frame (3.11-3.13): after PyObject_HEAD and f_back

never = threading.Event()
asleep = threading.Semaphore(0)
keep = []  # whatever a corrupted pointer points at stays alive


def sleeper():
    asleep.release()
    never.wait()


def middle():
    sleeper()


def outer():
    middle()


def word(address):
    return ctypes.c_uint64.from_address(address)


def spin_here():
    asleep.release()
    while True:
        pass  # no call, no return: nothing the interpreter does here follows `previous`


threads = [threading.Thread(target=spin_here if MODE == "frame_loop_running" else outer,
                            daemon=True),
           threading.Thread(target=never.wait, daemon=True)]
for thread in threads:
    thread.start()
asleep.acquire()
victim = threads[0]
# Wait until the sleeper is blocked in the Event (its innermost frame is sleeper's, in wait).
frame = None
while True:
    frame = sys._current_frames()[victim.ident]
    names = []
    f = frame
    while f is not None:
        names.append(f.f_code.co_name)
        f = f.f_back
    if "sleeper" in names and names[0] == "wait":
        break
    if MODE == "frame_loop_running" and names[0] == "spin_here":
        break
    never.wait(0.001)
stack = []
f = frame
while f is not None:
    stack.append([f.f_code.co_name, f.f_lineno])
    if f.f_code in (sleeper.__code__, spin_here.__code__):
        sleeper_frame = f
    f = f.f_back

code = spin_here.__code__ if MODE == "frame_loop_running" else sleeper.__code__
if MODE == "code_name":
    bogus = 12345678901234
    keep.append(bogus)
    word(id(code) + CO_NAME).value = id(bogus)
elif MODE in ("frame_loop", "frame_loop_running"):
    # sleeper's frame: its callees (the Event's wait) stay readable, its callers cannot be
    # reached.
    iframe = word(id(sleeper_frame) + F_FRAME).value
    assert word(iframe + FRAME_CODE).value == id(code), "unexpected frame layout"
    word(iframe + PREVIOUS).value = iframe
elif MODE in ("list_loop", "list_null"):
    ctypes.pythonapi.PyInterpreterState_Get.restype = ctypes.c_void_p
    interp = ctypes.pythonapi.PyInterpreterState_Get()
    head = word(interp + THREADS_HEAD)
    if MODE == "list_loop":
        word(head.value + TSTATE_NEXT).value = head.value
    else:
        head.value = 0
keep.extend([frame, sleeper_frame])

os.write(READY_FD, (json.dumps({"tid": victim.native_id, "stack": stack}) + "\n").encode())
# Only a system call from here on: nothing reads what was corrupted.
never_written, kept_open = os.pipe()
os.read(never_written, 1)
