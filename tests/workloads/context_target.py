"""Threads that set contextvars, for tests/integration/test_context_labels.py. Python 3.7+.

  context_target.py FD

  worker-a   request_id = "req-a", tenant = "acme"; spins in work_a()
  worker-b   request_id = "req-b", tenant = 42;     spins in work_b()
  plain      sets nothing;                          spins in work_plain()
  switcher   request_id = "req-1" around each call of phase_one(), "req-2" around phase_two(),
             a few milliseconds each: a sample in phase_one() has "req-1", whenever it is taken
  lookalike  a second ContextVar also named "tenant" would make the name ambiguous: it has
             another name, "tenant2", and its value "other" must never show as tenant

Writes one line to FD once every thread has set its variables, then blocks.
"""
import contextvars
import os
import sys
import threading
import time

READY_FD = int(sys.argv[1])
request_id = contextvars.ContextVar("request_id")
tenant = contextvars.ContextVar("tenant")
tenant2 = contextvars.ContextVar("tenant2")
ready = threading.Semaphore(0)


def spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def work_a():
    while True:
        spin(0.01)


def work_b():
    while True:
        spin(0.01)


def work_plain():
    while True:
        spin(0.01)


def worker_a():
    request_id.set("req-a")
    tenant.set("acme")
    tenant2.set("other")
    ready.release()
    work_a()


def worker_b():
    request_id.set("req-b")
    tenant.set(42)
    ready.release()
    work_b()


def plain():
    ready.release()
    work_plain()


def phase_one():
    spin(0.003)


def phase_two():
    spin(0.003)


def switcher():
    ready.release()
    while True:
        token = request_id.set("req-1")
        phase_one()
        request_id.reset(token)
        token = request_id.set("req-2")
        phase_two()
        request_id.reset(token)


threads = [threading.Thread(target=f, name=n, daemon=True)
           for n, f in (("worker-a", worker_a), ("worker-b", worker_b), ("plain", plain),
                        ("switcher", switcher))]
for thread in threads:
    thread.start()
for _ in threads:
    ready.acquire()
os.write(READY_FD, b"ready\n")
threading.Event().wait()
