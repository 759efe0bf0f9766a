"""A CPU-bound main thread whose time is inside generators and coroutines: the target whose
stacks were cut at the generator's frame (read across a yield). Runs on Python 2.7 (no
coroutines there) and 3.6+.

  generators.py FD

Every real stack of the main thread starts at <module> and goes through work(): the time is in
a generator expression summed by sum(), in squares() (a generator consumed by sum()), in
inner()/leaf() (yield from, 3.x), and in a coroutine chain c_mid() -> c_leaf() driven by
send(None) (3.5+). One line goes to FD before the loop starts.
"""
import os
import sys

READY_FD = int(sys.argv[1])


def squares(n):
    for i in range(n):
        yield i * i


def work():
    a = sum(i * i for i in range(3000))
    b = sum(squares(3000))
    for _ in range(20):
        for _value in inner():
            pass
        drive()
    return a + b


def inner():
    for value in leaf():
        yield value


def leaf():
    total = 0
    for i in range(50):
        total += i
    yield total


def drive():
    pass


if sys.version_info >= (3, 5):
    # Coroutines are a syntax error on 2.7: compile them only where they exist.
    exec(compile('''
async def c_leaf():
    return sum(i for i in range(10))


async def c_mid():
    return await c_leaf()


def drive():
    coroutine = c_mid()
    try:
        coroutine.send(None)
    except StopIteration as stop:
        return stop.value
''', __file__ + ":coroutines", "exec"))

os.write(READY_FD, b"ready\n")
while True:
    work()
