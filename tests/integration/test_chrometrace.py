"""The Chrome trace-event output (-f chrometrace) checked against the format's documented
structure (the JSON Object Format of Google's "Trace Event Format" document, which Perfetto and
chrome://tracing read): a traceEvents array of events with ph/name/pid/tid, complete events
("X") with ts and dur in microseconds and properly nested per thread, metadata events ("M")
naming every process and thread. On the fixed synthetic profile of tests/tools/output_fixture.hpp
(written by write_output_fixture) the slices are checked exactly.

check_trace is also used by test_pyspy_compat on a real recording.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from test_output_consumers import fixture_tool  # noqa: E402

METADATA = {"process_name": "name", "thread_name": "name", "thread_sort_index": "sort_index",
            "process_sort_index": "sort_index", "process_labels": "labels"}
EPSILON = 1e-6  # microseconds


def check_trace(test, doc):
    """Asserts the documented structure; returns {(pid, tid): [X events]} and the
    {(pid, tid): thread name} of the metadata."""
    test.assertIsInstance(doc, dict)
    test.assertIsInstance(doc.get("traceEvents"), list)
    test.assertIn(doc.get("displayTimeUnit", "ms"), ("ms", "ns"))
    tracks, names, processes = {}, {}, {}
    for event in doc["traceEvents"]:
        test.assertIsInstance(event.get("ph"), str, event)
        test.assertIsInstance(event.get("name"), str, event)
        test.assertIsInstance(event.get("pid"), int, event)
        test.assertIsInstance(event.get("tid"), int, event)
        if event["ph"] == "M":
            test.assertIn(event["name"], METADATA, event)
            test.assertIn(METADATA[event["name"]], event["args"], event)
            if event["name"] == "thread_name":
                test.assertIsInstance(event["args"]["name"], str)
                names[(event["pid"], event["tid"])] = event["args"]["name"]
            if event["name"] == "process_name":
                processes[event["pid"]] = event["args"]["name"]
            continue
        test.assertEqual(event["ph"], "X", event)
        for key in ("ts", "dur"):
            test.assertIsInstance(event[key], (int, float), event)
            test.assertGreaterEqual(event[key], 0, event)
        test.assertIsInstance(event.get("cat", ""), str)
        test.assertIsInstance(event.get("args", {}), dict)
        tracks.setdefault((event["pid"], event["tid"]), []).append(event)
    for track, events in tracks.items():
        test.assertIn(track, names, "track %s has no thread_name" % (track,))
        test.assertIn(track[0], processes, "process %d has no process_name" % track[0])
        # Properly nested: a slice lies inside the one below it or after it, never across.
        stack = []
        for event in sorted(events, key=lambda e: (e["ts"], -e["dur"])):
            end = event["ts"] + event["dur"]
            while stack and event["ts"] >= stack[-1] - EPSILON:
                stack.pop()
            if stack:
                test.assertLessEqual(end, stack[-1] + EPSILON, "slice %s crosses its parent"
                                     % event)
            stack.append(end)
    return tracks, names


def depth_zero(events):
    """The slices with no slice around them, in time order."""
    out, end = [], -1.0
    for event in sorted(events, key=lambda e: (e["ts"], -e["dur"])):
        if event["ts"] >= end - EPSILON:
            out.append(event)
            end = event["ts"] + event["dur"]
    return out


class ChromeTrace(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="spyglass-trace-")
        result = subprocess.run([fixture_tool(), cls.dir], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, encoding="utf-8", timeout=harness.TIMEOUT)
        if result.returncode != 0:
            raise AssertionError("write_output_fixture failed: %s" % result.stderr)
        cls.expected = json.loads(result.stdout)
        with open(os.path.join(cls.dir, "profile.trace.json"), encoding="utf-8") as f:
            cls.doc = json.load(f)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def test_structure_and_tracks(self):
        tracks, names = check_trace(self, self.doc)
        threads = {(t["pid"], t["tid"]): t for t in self.expected["threads"]}
        self.assertEqual(set(tracks), set(threads))
        for track, thread in threads.items():
            self.assertEqual(names[track], thread["name"] or thread["root"])
        self.assertEqual(self.doc["otherData"]["exporter"], "spyglass")
        self.assertEqual(self.doc["otherData"]["python"], "3.11.4")

    def test_slices_cover_the_samples(self):
        tracks, _ = check_trace(self, self.doc)
        period_us = self.expected["period_ns"] / 1e3
        for thread in self.expected["threads"]:
            events = tracks[(thread["pid"], thread["tid"])]
            covered = sum(e["dur"] for e in depth_zero(events))
            self.assertAlmostEqual(covered, thread["samples"] * period_us, places=3)
            # The track is the thread: no "thread ..." root pseudo-frame on it.
            self.assertFalse([e for e in events if e["name"].startswith("thread ")])

    def test_consecutive_samples_make_one_slice(self):
        tracks, _ = check_trace(self, self.doc)
        main = tracks[(4242, 4242)]
        period_us = self.expected["period_ns"] / 1e3
        # Every MainThread sample runs under <module>, main and Handler.handle: one slice each.
        for label in ("<module> (/srv/app/main.py:40)", "main (/srv/app/main.py:31)"):
            [slice_] = [e for e in main if e["name"] == label]
            self.assertEqual((slice_["ts"], slice_["dur"]), (0, 10 * period_us))
            self.assertEqual(slice_["cat"], "python")
            self.assertEqual(slice_["args"]["file"], "/srv/app/main.py")
        # Three network samples in a row: one wait of 3 periods, off-CPU above the leaf.
        [recv] = [e for e in main if e["name"].startswith("SSLSocket.recv_into")]
        self.assertEqual((recv["ts"], recv["dur"]), (4 * period_us, 3 * period_us))
        off = [e for e in main if e["cat"] == "off-cpu"]
        self.assertEqual([(e["ts"], e["dur"]) for e in off], [(4 * period_us, 3 * period_us)])
        # compute at line 12 twice, then line 14: two slices, one after the other.
        compute = sorted((e["ts"], e["dur"]) for e in main if e["name"].startswith("compute ("))
        self.assertEqual(compute[:2], [(0, 2 * period_us), (2 * period_us, period_us)])
        idle = tracks[(4242, 4251)]
        self.assertEqual(sorted(e["name"] for e in idle), ["[no Python frames]", "[off-cpu]"])


if __name__ == "__main__":
    unittest.main()
