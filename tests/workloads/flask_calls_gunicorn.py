"""gunicorn's configuration for flask_calls_app.py (test_calls_server.py): two sync workers,
and a readiness line per worker. Once a worker has loaded the application (post_worker_init),
it writes "worker PID" and a newline to the file descriptor $SPYGLASS_READY_FD (inherited from
the master, which the test started with that descriptor open).
"""
import os

workers = 2
worker_class = "sync"
timeout = 60
graceful_timeout = 1


def post_worker_init(worker):
    fd = int(os.environ["SPYGLASS_READY_FD"])
    os.write(fd, ("worker %d\n" % os.getpid()).encode("ascii"))
