"""Pieces every benchmark section shares: running spyglass and reading its summary, the
workloads' targets, the clock floor. `SPYGLASS` is set by scripts/bench before any section runs."""
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKLOADS = os.path.join(ROOT, "tests", "workloads")
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import harness  # noqa: E402

SPYGLASS = os.path.join(ROOT, "build", "spyglass")
SUMMARY = re.compile(r"([\d,]+) samples in ([\d.]+) s at ([\d.]+) Hz \(asked ([\d.]+)\), "
                     r"([\d,]+) late ticks?, ([\d,]+) sampling errors?")


def number(text):
    return int(text.replace(",", ""))


class Target(object):
    """A workload started outside spyglass, ready when it says so on a pipe."""

    def __init__(self, python, workload, *args):
        self.inner = harness.Target(python, workload, *args)

    def __enter__(self):
        self.inner.__enter__()
        return self.inner

    def __exit__(self, *exc):
        return self.inner.__exit__(*exc)


def run_spyglass(args, timeout=600):
    """Runs spyglass to completion; returns (summary dict, rusage)."""
    return run_spyglass_command([SPYGLASS] + [str(a) for a in args], timeout)


def run_spyglass_stderr(args, timeout=600):
    """Runs spyglass to completion; returns its stderr (the summary lines)."""
    result = subprocess.run([SPYGLASS] + [str(a) for a in args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, encoding="utf-8", timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError("spyglass failed (%d): %s" % (result.returncode, result.stderr))
    return result.stderr


def run_spyglass_command(command, timeout=600):
    process = subprocess.Popen([str(a) for a in command], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    stderr = b""
    deadline = time.time() + timeout
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        if time.time() > deadline:
            process.kill()
            raise RuntimeError("spyglass timed out: %s" % command)
        time.sleep(0.05)
    stderr = process.stderr.read().decode("utf-8", "replace")
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError("spyglass failed (%d): %s" % (process.returncode, stderr))
    match = SUMMARY.search(stderr)
    if not match:
        raise RuntimeError("no summary in: " + stderr)
    summary = {"samples": number(match.group(1)), "seconds": float(match.group(2)),
               "rate": float(match.group(3)), "asked": float(match.group(4)),
               "late": number(match.group(5)), "errors": number(match.group(6))}
    return summary, usage


def run_spyglass_peak_rss(args):
    """Runs spyglass under GNU time; returns (summary, peak RSS in KB).

    A child's ru_maxrss from wait4 is useless here: Linux keeps the high-water mark of the memory
    the child had before exec, and that is a copy of (or, with vfork, the very) memory of this
    Python process. GNU time is small, so the mark its own child reports is spyglass's."""
    report = out_file(".rss")
    try:
        summary, _ = run_spyglass_command(["/usr/bin/time", "-o", report, "-f", "%M", SPYGLASS]
                                          + [str(a) for a in args])
        with open(report) as lines:
            peak_kb = int(lines.read().split()[-1])
    finally:
        if os.path.exists(report):
            os.unlink(report)
    return summary, peak_kb


def clock_floor(rate, ticks=3000):
    tool = os.path.join(os.path.dirname(SPYGLASS), "tests", "spyglass_clock_floor")
    values = []
    for _ in range(3):
        out = subprocess.run([tool, str(rate), str(ticks)], stdout=subprocess.PIPE,
                             encoding="utf-8", check=True)
        values.append(float(out.stdout))
    return statistics.median(values)


def python_for(label):
    path, reason = harness.find_interpreter(label)
    if path is None:
        print("  (skipped: %s)" % reason)
    return path


def out_file(suffix):
    handle, path = tempfile.mkstemp(prefix="spyglass-bench-", suffix=suffix)
    os.close(handle)
    return path


# --------------------------------------------------------------------------------------------
def folded_shares(path, names):
    counts = dict((name, 0) for name in names)
    total = 0
    with open(path, encoding="utf-8") as f:
        for line in f:
            frames, count = line.rstrip("\n").rsplit(" ", 1)
            functions = [frame.split(" (", 1)[0] for frame in frames.split(";")]
            total += int(count)
            for name in names:
                if name in functions:
                    counts[name] += int(count)
    return counts, total


def pprof_cpu_by_function(path):
    """cpu/nanoseconds per leaf-most Python function, from go tool pprof -raw."""
    try:
        raw = subprocess.run(["go", "tool", "pprof", "-raw", path], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, encoding="utf-8", timeout=300).stdout
    except OSError:
        print("(go tool pprof not found: no CPU-time column)")
        return None
    locations = {}
    section = None
    for line in raw.splitlines():
        if line.startswith("Locations"):
            section = "locations"
            continue
        if line.startswith("Mappings"):
            break
        if section == "locations":
            match = re.match(r"\s*(\d+): 0x\w+ M=\d+ (\S+)", line)
            if match:
                locations[match.group(1)] = match.group(2)
    totals = {}
    for match in re.finditer(r"^\s+(\d+)\s+(\d+)\s+(\d+): ([\d ]+)$", raw, re.M):
        leaf = match.group(4).split()[0]
        name = locations.get(leaf, "?")
        totals[name] = totals.get(name, 0) + int(match.group(3))
    return totals




THREAD_CPU = re.compile(r"sampling thread: ([\d.]+) ms of CPU \(([\d.]+) us per thread sample\); "
                        r"resolver thread: ([\d.]+) ms")
COUNTS = re.compile(r"(\d+) thread samples: (\d+) with the stack of the thread's previous "
                    r"sample, (\d+) of threads the scheduler's events showed idle")


def run_verbose(args, env=None, timeout=600):
    """Runs spyglass -v to completion; returns (summary, rusage, stderr)."""
    command = [SPYGLASS, "-v"] + [str(a) for a in args]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               env=dict(os.environ, **(env or {})))
    # Read to the end first: -v can write more than a pipe holds, and spyglass would block.
    stderr = process.stderr.read().decode("utf-8", "replace")
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError("spyglass failed (%d): %s" % (process.returncode, stderr))
    match = SUMMARY.search(stderr)
    summary = {"samples": number(match.group(1)), "seconds": float(match.group(2)),
               "rate": float(match.group(3)), "asked": float(match.group(4)),
               "late": number(match.group(5)), "errors": number(match.group(6))}
    threads = THREAD_CPU.search(stderr)
    if threads:
        summary["sampling_ms"] = float(threads.group(1))
        summary["resolver_ms"] = float(threads.group(3))
    return summary, usage, stderr
