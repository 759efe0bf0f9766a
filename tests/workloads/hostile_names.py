"""Target whose names would reprogram a terminal printed as they are (tests/faults/
test_hostile_output.py). Runs on 2.7 and 3.6+.

  hostile_names.py FD

A thread named EVIL sleeps in a function whose file name has an escape sequence and a newline
in it and, on 3.8+, whose own name (and 3.11+ qualified name) is EVIL too; the process's command
name (comm) has an escape in it. Once the thread is asleep in that function it writes one line to
FD, then it waits to be killed.
"""
import os
import sys
import threading
import time

# ESC sequences that retitle and clear a terminal, a newline that forges a frame line, a C1 CSI,
# a right-to-left override and a NUL.
EVIL = u"evil\x1b]0;pwned\x07\x1b[2J\n    forged (x.py:1)\u009b31m\u202e\x00end"
FILE = "/tmp/file\x1b[31m\nname.py"

READY_FD = int(sys.argv[1])
namespace = {"time": time}
exec(compile("def napper(ready):\n    ready.set()\n    time.sleep(3600)\n", FILE, "exec"),
     namespace)
napper = namespace["napper"]
code = napper.__code__
if hasattr(code, "replace"):  # 3.8+
    names = {"co_name": EVIL}
    if hasattr(code, "co_qualname"):
        names["co_qualname"] = EVIL
    napper.__code__ = code.replace(**names)

with open("/proc/self/comm", "w") as comm:
    comm.write("py\x1b[31mred")

ready = threading.Event()
thread = threading.Thread(target=napper, args=(ready,))
thread.name = EVIL if sys.version_info[0] >= 3 else EVIL.encode("utf-8")
thread.daemon = True
thread.start()
ready.wait()
# The event is set just before the sleep: wait until the thread is asleep in the kernel.
tid = None
while tid is None or open("/proc/self/task/%d/stat" % tid).read().rsplit(")", 1)[1].split()[0] != "S":
    for entry in os.listdir("/proc/self/task"):
        if int(entry) != os.getpid():
            tid = int(entry)
    time.sleep(0.001)
os.write(READY_FD, b"ready\n")
while True:
    time.sleep(3600)
