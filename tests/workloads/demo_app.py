"""The bundled example for `scripts/demo`: a small service with a slow spot.

Worker threads handle "requests": each parses a payload, queries a fake database (waits, as
real I/O would) and renders a response; one in ten requests takes a slow code path that burns
CPU. Profiling it shows where the time goes: the rendering hot spot on the CPU, and the waiting
in the database calls.

  python3 demo_app.py [seconds]     (default: run for 10 seconds)
"""
import json
import random
import sys
import threading
import time

RUN_FOR = float(sys.argv[1]) if len(sys.argv) > 1 else 10.0


def parse_request(raw):
    return json.loads(raw)


def query_database(user_id):
    time.sleep(0.004)  # waiting on the network
    return {"user": user_id, "items": list(range(user_id % 50))}


def render_slow_report(rows):
    # The slow spot: quadratic work on some requests.
    total = 0
    for a in rows:
        for b in rows:
            total += (a * 31 + b) % 7
    return total


def render_response(request, record):
    if request["report"]:
        return render_slow_report(list(range(300)))
    return json.dumps({"id": request["id"], "count": len(record["items"])})


def handle_request(raw):
    request = parse_request(raw)
    record = query_database(request["user"])
    return render_response(request, record)


def worker(deadline, seed):
    rng = random.Random(seed)
    handled = 0
    while time.time() < deadline:
        raw = json.dumps({"id": handled, "user": rng.randint(1, 1000), "report": rng.random() < 0.1})
        handle_request(raw)
        handled += 1


def main():
    deadline = time.time() + RUN_FOR
    threads = [threading.Thread(target=worker, args=(deadline, i), name="worker-%d" % i)
               for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


if __name__ == "__main__":
    main()
