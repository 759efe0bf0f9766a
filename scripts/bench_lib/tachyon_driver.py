"""Runs inside Debian sid's root (scripts/debian-sid/python3.15): starts a workload as its child,
then runs CPython's own sampler (Tachyon) against it on request. Tachyon finds a target's
PyRuntime only when both run in the same instance of the root, hence this driver; spyglass,
outside, reads the same PID. Protocol, one line each: out "pid PID"; in "tachyon SECONDS RATE
MODE OUTFILE", out "started TOOL_PID" then "done CPU_SECONDS EXIT_STATUS"; in "quit" (or end of
input) ends the target.

  python3.15 tachyon_driver.py WORKLOAD [ARG ...]   (the workload gets its ready FD first)
"""
import os
import subprocess
import sys


def main():
    read_end, write_end = os.pipe()
    target = subprocess.Popen([sys.executable, sys.argv[1], str(write_end)] + sys.argv[2:],
                              pass_fds=[write_end])
    os.close(write_end)
    with os.fdopen(read_end) as ready:
        ready.readline()
    print("pid %d" % target.pid, flush=True)
    try:
        for line in sys.stdin:
            words = line.split()
            if not words or words[0] == "quit":
                break
            seconds, rate, mode, out = words[1:5]
            tool = subprocess.Popen([sys.executable, "-m", "profiling.sampling", "attach", "-r",
                                     rate, "-d", seconds, "--mode", mode, "--collapsed", "-o",
                                     out, str(target.pid)], stdout=subprocess.DEVNULL)
            print("started %d" % tool.pid, flush=True)
            _, status, usage = os.wait4(tool.pid, 0)
            print("done %.6f %d" % (usage.ru_utime + usage.ru_stime,
                                    os.waitstatus_to_exitcode(status)), flush=True)
    finally:
        target.kill()
        target.wait()


main()
