"""A known, still stack for the captured fixtures (tests/unit/data/fixtures): the main thread
blocks in os.read() at the bottom of <module> -> outer() -> Holder.method() -> a generator ->
innermost(). A second thread reads the main thread's frames as Python itself sees them and
writes them to FD as one JSON line (the expectation the fixture keeps), then waits forever.
Runs on Python 2.7 and 3.6+.

  fixture_target.py FD
"""
import json
import os
import sys
import threading

READY_FD = int(sys.argv[1])
BLOCK_READ, BLOCK_WRITE = os.pipe()  # nothing is ever written: os.read() blocks for good
MAIN = threading.current_thread()
BLOCKING_LINE = [None]


def name_of(code):
    return getattr(code, "co_qualname", code.co_name)


def report():
    main_id = MAIN.ident
    while True:  # until the main thread is in os.read(), on the line that calls it
        frame = sys._current_frames().get(main_id)
        if frame is not None and frame.f_code.co_name == "innermost" and \
                frame.f_lineno == BLOCKING_LINE[0]:
            break
    frames = []
    while frame is not None:
        frames.append({"function": name_of(frame.f_code), "file": frame.f_code.co_filename,
                       "line": frame.f_lineno})
        frame = frame.f_back
    line = json.dumps({"thread_id": main_id, "frames": frames}) + "\n"
    os.write(READY_FD, line.encode("utf-8"))
    threading.Event().wait()


def innermost():
    BLOCKING_LINE[0] = sys._getframe().f_lineno + 1
    os.read(BLOCK_READ, 1)


def generator():
    innermost()
    yield 1


class Holder(object):
    def method(self):
        for _ in generator():
            pass


def outer():
    Holder().method()


reporter = threading.Thread(target=report, name="reporter")
reporter.daemon = True
reporter.start()
outer()
