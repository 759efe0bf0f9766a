"""A thread bound in zlib's deflate, for --native's merge. Runs on Python 2.7 and 3.6+.

  zlib_target.py FD

Thread "compressor" compresses 1 MiB of varied bytes at level 9 over and over (compress_forever):
nearly all its time is in libz's deflate under zlib.compress, called from Python. One JSON line
goes to FD once it runs: {"compressor": TID, "lines": {"compress": line}}.
"""
import ctypes
import ctypes.util
import json
import os
import random
import sys
import threading
import zlib

READY_FD = int(sys.argv[1])
libc = ctypes.CDLL(ctypes.util.find_library("c"))
started = threading.Semaphore(0)
tids = {}
rng = random.Random(7)
# Words from a small vocabulary: deflate works hard to find its matches.
WORDS = [bytes(bytearray(rng.randrange(97, 123) for _ in range(rng.randrange(3, 9))))
         for _ in range(4096)]
DATA = b" ".join(rng.choice(WORDS) for _ in range(180000))[:1 << 20]


def compress_forever():
    tids["compressor"] = libc.syscall(186)  # SYS_gettid on x86-64
    started.release()
    while True:
        zlib.compress(DATA, 9)  # line: compress


def line_of(marker):
    with open(__file__) as f:
        for number, text in enumerate(f, 1):
            if text.rstrip().endswith("# line: " + marker):
                return number


thread = threading.Thread(target=compress_forever, name="compressor")
thread.daemon = True
thread.start()
started.acquire()
os.write(READY_FD, (json.dumps({"compressor": tids["compressor"],
                                "lines": {"compress": line_of("compress")}}) + "\n").encode())
thread.join()
