"""Recordings that last (issue 13): the raw file's bytes per sample and spyglass's memory over a
long 1 kHz recording of 50 threads; memory with --window over code that never repeats (the
tables bounded) against the same recording without windows (the tables grow)."""
import os
import subprocess
import time

from bench_lib import common
from bench_lib.common import SUMMARY, Target, number, out_file, python_for


def status_kb(pid, field):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def record_watching(args, seconds, every):
    """Runs `spyglass record ARGS -d SECONDS`; returns (stderr, [(t, RSS KB)], peak KB)."""
    process = subprocess.Popen([common.SPYGLASS, "-v", "record", "--hideprogress", "-d",
                                str(seconds)]
                               + [str(a) for a in args], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, encoding="utf-8")
    start = time.monotonic()
    points, peak, next_at = [], 0, every
    while process.poll() is None:
        now = time.monotonic() - start
        hwm = status_kb(process.pid, "VmHWM")
        if hwm:
            peak = max(peak, hwm)
        if now >= next_at:
            rss = status_kb(process.pid, "VmRSS")
            if rss:
                points.append((int(round(now)), rss))
            next_at += every
        time.sleep(0.2)
    stderr = process.stderr.read()
    if process.returncode != 0:
        raise RuntimeError("spyglass failed: " + stderr)
    return stderr, points, peak


def rss_row(points, at):
    chosen = [rss for t, rss in points if t in at]
    return " | ".join("%.1f" % (kb / 1024.0) for kb in chosen)


def bench_raw(args):
    seconds = int(os.environ.get("SPYGLASS_BENCH_RAW_SECONDS", 60 if args.quick else 600))
    print("\n## 11. The raw recording: 50 threads (2 spinning, 48 waiting), 1 kHz, %d s" % seconds)
    python = python_for("3.12")
    if python is None:
        return
    raw = out_file(".sgr")
    output = out_file(".pb.gz")
    every = max(1, seconds // 10)
    with Target(python, "many_threads.py", 50, 2) as target:
        stderr, points, peak = record_watching(["--pid", target.pid, "--rate", 1000, "-o", output,
                                                "--raw", raw], seconds, every)
    summary = SUMMARY.search(stderr)
    samples = number(summary.group(1))
    size = os.path.getsize(raw)
    start = time.monotonic()
    report = subprocess.run([common.SPYGLASS, "report", raw, "-o", out_file(".txt")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, encoding="utf-8")
    report_s = time.monotonic() - start
    os.unlink(raw)
    os.unlink(output)
    print("| thread samples | achieved Hz | raw file | bytes per sample | KB per second | "
          "report time | peak RSS |")
    print("|---|---|---|---|---|---|---|")
    print("| %s | %s | %.1f MB | %.2f | %.1f | %.1f s | %.1f MB |" % (
        summary.group(1), summary.group(3), size / 1e6, size / float(samples),
        size / 1e3 / seconds, report_s, peak / 1024.0))
    if report.returncode != 0:
        print("  (report failed: %s)" % report.stderr.strip())
    print("RSS over the recording (MB), every %d s: %s" % (
        every, ", ".join("%d s %.1f" % (t, kb / 1024.0) for t, kb in points)))


def bench_windows(args):
    seconds = int(os.environ.get("SPYGLASS_BENCH_WINDOW_SECONDS", 60 if args.quick else 240))
    print("\n## 12. Memory over code that never repeats (2 threads compiling a new function "
          "every 2 ms), 1 kHz, %d s" % seconds)
    python = python_for("3.12")
    if python is None:
        return
    every = max(1, seconds // 8)
    print("| recording | RSS every %d s (MB) | peak RSS MB | table resets |" % every)
    print("|---|---|---|---|")
    for what, extra in (("--window 10 (bounded tables)",
                         ["--window", 10, "-o", os.path.join(os.path.dirname(out_file(".d")),
                                                             "spyglass-bench-w-%H%M%S.pb.gz"),
                          "--keep", "30s"]),
                        ("one profile (tables grow)", ["-o", out_file(".pb.gz")])):
        with Target(python, "new_code.py", 2) as target:
            stderr, points, peak = record_watching(["--pid", target.pid, "--rate", 1000] + extra,
                                                   seconds, every)
        resets = "?"
        for line in stderr.splitlines():
            if "tables were emptied" in line:
                resets = line.split("emptied ")[1].split(" ")[0]
        print("| %s | %s | %.1f | %s |" % (what, ", ".join("%.1f" % (kb / 1024.0)
                                                           for _, kb in points),
                                          peak / 1024.0, resets if "window" in what else "-"))
