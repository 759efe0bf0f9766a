"""Threads that keep blocking and waking: the worst case for reading wait reasons, since each
sample finds every thread off-CPU *and* run since its previous sample (so its reason is read
again). Benchmark target of scripts/bench's "waits" section; runs on 2.7 and 3.x.

  wait_churn.py FD [pairs]

`pairs` pairs of threads (default 10) ping-pong one byte over a socketpair with a 1 ms sleep
at each end: at any moment a thread is in recv or in the sleep. One line goes to FD once all
have started.
"""
import os
import socket
import sys
import threading
import time

READY_FD = int(sys.argv[1])
PAIRS = int(sys.argv[2]) if len(sys.argv) > 2 else 10
started = threading.Semaphore(0)


def player(connection, serve):
    started.release()
    if serve:
        connection.send(b"x")
    while True:
        connection.recv(1)
        time.sleep(0.001)
        connection.send(b"x")


for i in range(PAIRS):
    left, right = socket.socketpair()
    for end, serve in ((left, True), (right, False)):
        thread = threading.Thread(target=player, args=(end, serve), name="p%d" % i)
        thread.daemon = True
        thread.start()
for _ in range(2 * PAIRS):
    started.acquire()
os.write(READY_FD, b"ready\n")
while True:
    time.sleep(3600)
