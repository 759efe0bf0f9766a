"""Self time against total time: OrderService.place does nothing but call Ledger.record, which
takes all the time. Python 2.7 and 3.6+.

  shop_calls.py FD MODE SEED

The main thread loops: pause() (3 ms, sleeping or burning as MODE says), then
OrderService.place(order, ms) with a new order each time, which calls Ledger.record(order, ms):
record sleeps (MODE "sleep") or spins on the CPU in its own frame (MODE "burn") for ms, 20 with
probability 0.9 and 200 with 0.1 (random.Random(SEED)). So place's total time is record's, and
its self time is only the few microseconds of its own bytecode.

Writes its PID and a newline to FD just before the first order is placed; runs until killed.
"""
import os
import random
import sys
import time

READY_FD = int(sys.argv[1])
MODE = sys.argv[2]
SEED = int(sys.argv[3])

clock = getattr(time, "perf_counter", time.time)

if MODE not in ("sleep", "burn"):
    sys.stderr.write("shop_calls.py: MODE is sleep or burn, not %r\n" % MODE)
    sys.exit(2)
BURN = MODE == "burn"


def spend(ms):
    if BURN:
        end = clock() + ms / 1000.0
        while clock() < end:
            pass
    else:
        time.sleep(ms / 1000.0)


class Order(object):
    def __init__(self, number):
        self.number = number


class Ledger(object):
    def __init__(self):
        self.entries = 0

    def record(self, order, ms):
        if BURN:
            end = clock() + ms / 1000.0
            while clock() < end:
                pass
        else:
            time.sleep(ms / 1000.0)
        self.entries += 1


class OrderService(object):
    def __init__(self, ledger):
        self.ledger = ledger

    def place(self, order, ms):
        self.ledger.record(order, ms)
        return order.number


def pause():
    spend(3)


def main():
    rng = random.Random(SEED)
    service = OrderService(Ledger())
    number = 0
    ready = False
    while True:
        pause()
        if not ready:
            os.write(READY_FD, ("%d\n" % os.getpid()).encode("ascii"))
            ready = True
        number += 1
        service.place(Order(number), 200 if rng.random() < 0.1 else 20)


main()
