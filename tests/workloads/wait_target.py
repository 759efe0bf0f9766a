"""Target for spyglass's wait tests (tests/integration/test_waits.py); runs on 2.7 and 3.6+.

  wait_target.py FD blocking SERVER_PORT DIR     one thread blocked in each way below
  wait_target.py FD gil                          a CPU-bound thread and one waiting for the GIL

blocking: each thread registers, then blocks for good:
  tcp         recv() on a TCP connection to 127.0.0.1:SERVER_PORT (the test's server)
  udp         recvfrom() on a UDP socket bound to 127.0.0.1
  pipe        read() of a pipe nobody writes to
  fifo_open   open() of DIR/open.fifo, which has no writer
  fifo_read   read() of DIR/read.fifo (opened read-write first, so the open does not block)
  flock       fcntl.flock(LOCK_EX) on DIR/lock, which the main thread holds
  sleeper     time.sleep
  locked      acquire() of a threading.Lock the main thread holds
  queue       get() of an empty queue.Queue
  select      select() on two TCP connections and the UDP socket
  loop        an idle asyncio event loop (3.x only)
gil: "burner" spins in Python; "gil_waiter" does too, so that it mostly waits for the GIL (on 2.7
with long turns: sys.setcheckinterval).

Once every thread is in place (registered and asleep in the kernel) it writes one JSON line to
FD: per thread its ident and kernel tid, and what the test needs to know (ports, inodes,
paths); then it blocks until killed.
"""
import fcntl
import json
import os
import select
import socket
import sys
import threading
import time

try:
    import queue
except ImportError:  # 2.7
    import Queue as queue

READY_FD = int(sys.argv[1])
CASE = sys.argv[2]
threads = {}
facts = {}
kept = []
registered = threading.Semaphore(0)
forever = threading.Lock()
forever.acquire()
# The gil case's threads spin only once the ready line is out: on 2.7 a spinner with long turns
# takes the GIL straight back, and the main thread could starve before it writes the line.
spin = threading.Event()


def gettid():
    if hasattr(threading, "get_native_id"):
        return threading.get_native_id()
    import ctypes
    return ctypes.CDLL(None).syscall(186)  # SYS_gettid on x86-64


def register():
    threads[threading.current_thread().name] = {"ident": threading.current_thread().ident,
                                                "tid": gettid()}
    registered.release()


def start(name, target):
    thread = threading.Thread(target=target, name=name)
    thread.daemon = True
    thread.start()


def task_state(tid):
    with open("/proc/self/task/%d/stat" % tid) as f:
        text = f.read()
    return text[text.rindex(")") + 2]


def blocking_cases():
    port, directory = int(sys.argv[3]), sys.argv[4]

    def tcp():
        connection = socket.create_connection(("127.0.0.1", port))
        register()
        connection.recv(100)

    udp_socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp_socket.bind(("127.0.0.1", 0))
    facts["udp_port"] = udp_socket.getsockname()[1]

    def udp():
        register()
        udp_socket.recvfrom(100)

    read_end, write_end = os.pipe()
    facts["pipe_inode"] = os.fstat(read_end).st_ino

    def pipe():
        register()
        os.read(read_end, 1)

    open_fifo = os.path.join(directory, "open.fifo")
    read_fifo = os.path.join(directory, "read.fifo")
    os.mkfifo(open_fifo)
    os.mkfifo(read_fifo)
    facts["open_fifo"], facts["read_fifo"] = open_fifo, read_fifo
    fifo_fd = os.open(read_fifo, os.O_RDWR)

    def fifo_open():
        register()
        open(open_fifo).read()

    def fifo_read():
        register()
        os.read(fifo_fd, 1)

    lock_path = os.path.join(directory, "lock")
    facts["lock_file"] = lock_path
    holder = open(lock_path, "w")
    fcntl.flock(holder, fcntl.LOCK_EX)
    kept.append(holder)  # closing it would release the lock

    def flock():
        mine = open(lock_path, "w")  # its own open file: the holder's lock blocks it
        register()
        fcntl.flock(mine, fcntl.LOCK_EX)

    def sleeper():
        register()
        time.sleep(3600)

    def locked():
        register()
        forever.acquire()

    empty = queue.Queue()

    def queued():
        register()
        empty.get()

    def selecting():
        first = socket.create_connection(("127.0.0.1", port))
        second = socket.create_connection(("127.0.0.1", port))
        register()
        select.select([first, second, udp_socket], [], [])

    cases = [("tcp", tcp), ("udp", udp), ("pipe", pipe), ("fifo_open", fifo_open),
             ("fifo_read", fifo_read), ("flock", flock), ("sleeper", sleeper),
             ("locked", locked), ("queue", queued), ("select", selecting)]
    if sys.version_info[0] >= 3:
        import asyncio

        def loop():
            event_loop = asyncio.new_event_loop()
            event_loop.call_soon(register)
            event_loop.run_forever()

        cases.append(("loop", loop))
    return cases


def gil_cases():
    if hasattr(sys, "setcheckinterval") and sys.version_info[0] == 2:
        # 2.7's GIL is dropped every 100 bytecodes and taken back at once on another core:
        # the waiter would spin rather than sleep. Long turns make it wait in the futex.
        sys.setcheckinterval(1000000)

    def burner():
        register()
        spin.wait()
        n = 0
        while True:
            n += 1

    def gil_waiter():
        register()
        spin.wait()
        n = 0
        while True:
            n += 1

    return [("burner", burner), ("gil_waiter", gil_waiter)]


cases = blocking_cases() if CASE == "blocking" else gil_cases()
for name, function in cases:
    start(name, function)
for _ in cases:
    registered.acquire()
# Registered, then blocked: wait until each blocking thread is asleep in the kernel.
deadline = time.time() + 30
if CASE == "blocking":
    for name in threads:
        while task_state(threads[name]["tid"]) not in "SD" and time.time() < deadline:
            time.sleep(0.001)
os.write(READY_FD, (json.dumps({"pid": os.getpid(), "threads": threads, "facts": facts}) +
                    "\n").encode("utf-8"))
spin.set()
forever.acquire()
