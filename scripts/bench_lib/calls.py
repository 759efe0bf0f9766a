"""-f calls: what following calls costs per thread-sample (against -f folded of the same target,
interleaved in one run), and spyglass's memory over a long recording of a busy server."""
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from bench_lib.common import SPYGLASS, WORKLOADS, Target, out_file, python_for, run_verbose


def bench_calls(args):
    print("\n## -f calls: CPU per thread-sample, -f folded against -f calls (1 kHz, "
          "tests/workloads/call_durations.py burning 20/200 ms calls back to back; recordings "
          "alternate, median of the rounds)")
    seconds = 3 if args.quick else 8
    rounds = 3 if args.quick else 5
    print("| Python | folded: sampling / resolver (us) | calls: sampling / resolver (us) | "
          "resolver difference (us) | rounds |")
    print("|---|---|---|---|---|")
    for label in ("3.12", "debian-sid-3.14"):
        python = python_for(label)
        if python is None:
            continue
        per_sample = {"folded": ([], []), "calls": ([], [])}
        truth = out_file(".truth")
        with Target(python, "call_durations.py", "burn", 7, truth, 0) as target:
            for _ in range(rounds):
                for name, extra in (("folded", ["-o", out_file(".txt")]),
                                    ("calls", ["-f", "calls", "-o", out_file(".json")])):
                    summary, _, _ = run_verbose(["record", "--pid", target.pid, "--rate", 1000,
                                                 "--duration", seconds] + extra)
                    per_sample[name][0].append(summary["sampling_ms"] * 1e3 / summary["samples"])
                    per_sample[name][1].append(summary["resolver_ms"] * 1e3 / summary["samples"])
        os.unlink(truth)
        f = [statistics.median(v) for v in per_sample["folded"]]
        c = [statistics.median(v) for v in per_sample["calls"]]
        print("| %s | %.2f / %.2f | %.2f / %.2f | %+.2f | %d |" % (label, f[0], f[1], c[0], c[1],
                                                                  c[1] - f[1], rounds))
    print("(the capture's part, a hash of three argument slots per frame, and the resolver's "
          "comparison with the thread's previous sample run in both: "
          "build/tests/spyglass_micro_bench --benchmark_filter='Walk|CallIdentity|WithCalls' "
          "times them alone)")
    bench_calls_memory(args)


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def bench_calls_memory(args):
    seconds = 60 if args.quick else 600
    print("\n## -f calls: spyglass's resident memory over a %d s recording of a busy server "
          "(Flask under gunicorn, 2 sync workers, Debian's python3; wrk -t2 -c4; two "
          "recordings at once, record --subprocesses -r 1000 -f folded and -f calls; VmRSS "
          "every %d s)" % (seconds, seconds // 10))
    python = "/usr/bin/python3"
    if subprocess.run([python, "-c", "import flask, gunicorn"], stdout=subprocess.DEVNULL,
                      stderr=subprocess.DEVNULL).returncode != 0 or not any(
            os.access(os.path.join(d, "wrk"), os.X_OK)
            for d in os.environ.get("PATH", "").split(":")):
        print("  (skipped: Debian's python3-flask, gunicorn and wrk are needed)")
        return
    directory = tempfile.mkdtemp(prefix="spyglass-bench-calls-")
    port = free_port()
    read_fd, write_fd = os.pipe()
    env = dict(os.environ, SPYGLASS_CALLS_DIR=directory, SPYGLASS_READY_FD=str(write_fd))
    master = subprocess.Popen(
        [python, "-m", "gunicorn", "-c", os.path.join(WORKLOADS, "flask_calls_gunicorn.py"),
         "-w", "2", "-k", "sync", "-b", "127.0.0.1:%d" % port, "--chdir", WORKLOADS,
         "flask_calls_app:app"], env=env, pass_fds=(write_fd,), start_new_session=True,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write_fd)
    wrk = None
    recorders = {}
    try:
        ready = b""
        deadline = time.monotonic() + 60
        while ready.count(b"\n") < 2 and time.monotonic() < deadline:
            chunk = os.read(read_fd, 4096)
            if not chunk:
                break
            ready += chunk
        if ready.count(b"\n") < 2:
            print("  (skipped: gunicorn's workers did not start)")
            return
        wrk = subprocess.Popen(["wrk", "-t2", "-c4", "-d%ds" % (seconds + 30),
                                "http://127.0.0.1:%d/report" % port],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # Two recordings of the same server at once, -f folded beside -f calls: whatever grows
        # in both is not the calls' doing.
        recorders = {}
        for name, extra in (("folded", ["-f", "folded", "-o", out_file(".txt")]),
                            ("calls", ["-f", "calls", "-o", out_file(".json")])):
            recorders[name] = subprocess.Popen(
                [SPYGLASS, "record", "--pid", str(master.pid), "--subprocesses", "-r", "1000",
                 "-d", str(seconds)] + extra, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        series = {name: [] for name in recorders}
        times = []
        for step in range(11):
            if step:
                time.sleep(seconds / 10.0)  # a bench's pace, not a readiness wait
            if any(r.poll() is not None for r in recorders.values()):
                break
            times.append(round(step * seconds / 10.0))
            for name, process in recorders.items():
                series[name].append(rss_kib(process.pid))
        print("| seconds | " + " | ".join(str(s) for s in times) + " |")
        print("|---|" + "---|" * len(times))
        for name, process in recorders.items():
            stderr = process.communicate(timeout=120)[1].decode("utf-8", "replace").strip()
            print("| RSS -f %s (MiB) | " % name +
                  " | ".join("%.1f" % (k / 1024.0) for k in series[name]) + " |")
            last = stderr.splitlines()[-1] if stderr else "(no summary)"
        print("  -f calls: " + last)
    finally:
        for process in list(recorders.values()) + [wrk]:
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()
        try:
            os.killpg(master.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        master.wait()
        os.close(read_fd)
        sys.stdout.flush()
