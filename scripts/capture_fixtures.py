#!/usr/bin/env python3
"""Regenerates tests/unit/data/fixtures/<label>.fixture for every installed interpreter: the
memory that a known stack spans (tests/workloads/fixture_target.py), as spyglass reads it, and
the stack as the interpreter itself reported it. tests/unit/test_captured_stacks.cpp replays them.

  scripts/capture_fixtures.py [--build build] [LABEL ...]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import harness  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("labels", nargs="*", default=harness.EXPECTED)
    args = parser.parse_args()
    tool = os.path.join(args.build, "tests", "capture_fixture")
    out_dir = os.path.join(ROOT, "tests", "unit", "data", "fixtures")
    os.makedirs(out_dir, exist_ok=True)
    for label in args.labels:
        python, reason = harness.find_interpreter(label)
        if python is None:
            print("%s: skipped (%s)" % (label, reason))
            continue
        with harness.Target(python, "fixture_target.py") as target:
            report = target.report
            with tempfile.NamedTemporaryFile("w", suffix=".expected", delete=False) as expected:
                expected.write("thread %x\n" % report["thread_id"])
                for frame in report["frames"]:
                    expected.write("frame %d\t%s\t%s\n" % (frame["line"], frame["function"],
                                                           frame["file"]))
            out = os.path.join(out_dir, "%s.fixture" % label)
            try:
                subprocess.run([tool, str(target.pid), expected.name, out], check=True)
            finally:
                os.unlink(expected.name)
        print("%s: %s (%d bytes)" % (label, os.path.relpath(out, ROOT), os.path.getsize(out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
