"""A Flask application for spyglass's call-duration test against a real server (gunicorn's sync
workers, driven by wrk): tests/integration/test_calls_server.py.

  /usr/bin/python3 -m gunicorn -c tests/workloads/flask_calls_gunicorn.py \
      --chdir tests/workloads flask_calls_app:app

GET /report runs the view report(), which calls load_rows(ms): a stand-in for a slow query,
sleeping ms milliseconds, uniform in 10..20 with probability 0.9, else in 90..110. report()
times each call of load_rows with time.perf_counter() and appends one line per call to
$SPYGLASS_CALLS_DIR/calls-PID.log (the worker's PID; O_APPEND, one write, outside the timed
span):

  START END MS

START and END are time.time() just before the call and just after it returns, MS the call's
measured length.
"""
import os
import random
import time

from flask import Flask

app = Flask(__name__)
LOG_DIR = os.environ["SPYGLASS_CALLS_DIR"]
_rng = random.Random()
_log = {}


def log_fd():
    pid = os.getpid()
    if pid not in _log:
        _log[pid] = os.open(os.path.join(LOG_DIR, "calls-%d.log" % pid),
                            os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    return _log[pid]


def load_rows(ms):
    time.sleep(ms / 1000.0)
    return int(ms)


@app.route("/report")
def report():
    if _rng.random() < 0.1:
        ms = _rng.uniform(90.0, 110.0)
    else:
        ms = _rng.uniform(10.0, 20.0)
    start = time.time()
    t0 = time.perf_counter()
    rows = load_rows(ms)
    t1 = time.perf_counter()
    end = time.time()
    os.write(log_fd(), ("%.6f %.6f %.3f\n" % (start, end, (t1 - t0) * 1000.0)).encode("ascii"))
    return "%d rows\n" % rows
