"""Every output format read by a real consumer: `go tool pprof` for pprof, json plus the
structure speedscope's importer relies on, xml.etree for the flame graph SVG, and the folded
format as flamegraph.pl / inferno split it.

The files come from tests/tools/write_output_fixture (the fixed synthetic profile of
tests/tools/output_fixture.hpp), which also prints what they must contain. Its path is
$SPYGLASS_WRITE_FIXTURE (set by tests/CMakeLists.txt), else tests/write_output_fixture beside
$SPYGLASS_BIN. Without `go` (package golang-go, installed by scripts/setup) the pprof tests
skip, saying so.
"""
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"
OFF_CPU = "[off-cpu]"
NO_FRAMES = "[no Python frames]"


def fixture_tool():
    path = os.environ.get("SPYGLASS_WRITE_FIXTURE")
    if not path:
        path = os.path.join(os.path.dirname(os.path.abspath(harness.SPYGLASS)), "tests",
                            "write_output_fixture")
    if not os.access(path, os.X_OK):
        raise AssertionError("write_output_fixture not found at %s (build the target "
                             "write_output_fixture, or set SPYGLASS_WRITE_FIXTURE)" % path)
    return path


class OutputConsumers(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="spyglass-output-")
        result = subprocess.run([fixture_tool(), cls.dir], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, encoding="utf-8",
                                timeout=harness.TIMEOUT)
        if result.returncode != 0:
            raise AssertionError("write_output_fixture failed: %s" % result.stderr)
        cls.expected = json.loads(result.stdout)
        cls.period = cls.expected["period_ns"]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir, ignore_errors=True)

    def path(self, name):
        return os.path.join(self.dir, name)

    # --- pprof ---------------------------------------------------------------------------

    def pprof(self, *args, **kwargs):
        go = shutil.which("go")
        if go is None:
            reason = "go is not installed (package golang-go; scripts/setup installs it)"
            sys.stderr.write("SKIP %s: %s\n" % (self.id(), reason))
            raise unittest.SkipTest(reason)
        env = dict(os.environ, HOME=self.dir, PPROF_TMPDIR=self.dir)
        profile = self.path(kwargs.get("profile", "profile.pb.gz"))
        result = subprocess.run([go, "tool", "pprof"] + list(args) + [profile],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                encoding="utf-8", timeout=harness.TIMEOUT, env=env)
        self.assertEqual(result.returncode, 0, result.stderr)
        return result.stdout

    def raw_samples(self, text):
        """[(values, {label: value})] from `pprof -raw`."""
        lines = text.split("\n")
        start = lines.index("Samples:")
        self.assertEqual(lines[start + 1].split(),
                         ["samples/count", "wall/nanoseconds[dflt]", "cpu/nanoseconds"])
        samples = []
        for line in lines[start + 2:]:
            if line.startswith("Locations"):
                break
            head = re.match(r"^\s+(\d+)\s+(\d+)\s+(\d+):", line)
            if head:
                samples.append(([int(v) for v in head.groups()], {}))
                continue
            for key, value in re.findall(r"(\w+):\[([^\]]*)\]", line):
                samples[-1][1][key] = value
        return samples

    def test_pprof_raw_types_values_and_labels(self):
        text = self.pprof("-raw")
        self.assertIn("PeriodType: wall nanoseconds", text)
        self.assertIn("Period: %d" % self.period, text)
        self.assertIn("Time: 2023-11-14 22:13:20.123456789", text)
        self.assertNotIn("Main binary filename not available", text)
        samples = self.raw_samples(text)
        self.assertTrue(samples)
        totals = [sum(s[0][i] for s in samples) for i in range(3)]
        self.assertEqual(totals, [self.expected["samples"], self.expected["samples"] * self.period,
                                  self.expected["cpu_ns"]])
        for values, labels in samples:
            self.assertEqual(values[1], values[0] * self.period)
            self.assertIn(labels["state"], ("on-cpu", "off-cpu"))
            self.assertIn(labels["gil"], ("true", "false"))
        on_cpu = sum(s[0][0] for s in samples if s[1]["state"] == "on-cpu")
        self.assertEqual(on_cpu, self.expected["on_cpu_samples"])
        gil = sum(s[0][0] for s in samples if s[1]["gil"] == "true")
        self.assertEqual(gil, self.expected["gil_samples"])
        for thread in self.expected["threads"]:
            mine = [s for s in samples if s[1]["thread_id"] == str(thread["tid"])]
            self.assertEqual(sum(s[0][0] for s in mine), thread["samples"], thread)
            for values, labels in mine:
                self.assertEqual(labels["pid"], str(thread["pid"]))
                self.assertEqual(labels.get("thread", ""), thread["name"])
        locations = text[text.index("Locations"):]
        for function in self.expected["functions"] + ["<truncated>", NO_FRAMES]:
            self.assertIn(" %s " % function, locations)

    def test_pprof_default_and_cpu_sample_index(self):
        self.assertIn("Type: wall", self.pprof("-top"))
        cpu = self.pprof("-top", "-sample_index=cpu")
        self.assertIn("Type: cpu", cpu)
        self.assertIn("Total samples = %gms" % (self.expected["cpu_ns"] / 1e6), cpu)

    def test_pprof_wait_labels(self):
        # make_wait_fixture: MainThread waits 3 ticks on tcp 127.0.0.1:5432 and 1 on the GIL;
        # the worker 4 in queue.Queue.get, 3 asleep, 1 on a socket (kind only).
        tags = self.pprof("-tags", "-sample_index=samples", profile="waits.pb.gz")
        self.assertRegex(tags, r"wait: Total 13(\.0)?\n")
        for value, count in (("socket", 4), ("lock", 4), ("sleep", 3), ("gil", 1),
                             ("cpu-starved", 1)):
            self.assertRegex(tags, r"\n\s+%d(\.0)? \(.*\): %s\n" % (count, re.escape(value)))
        self.assertRegex(tags, r"\n\s+3(\.0)? \(.*\): tcp 127\.0\.0\.1:5432\n")
        self.assertRegex(tags, r"\n\s+4(\.0)? \(.*\): queue\.Queue\.get\n")
        top = self.pprof("-top", "-sample_index=samples", "-tagfocus=wait_target=tcp 127.0.0.1:5432",
                         profile="waits.pb.gz")
        self.assertIn("Cursor.execute", top)
        self.assertNotIn("Queue.get", top)

    def test_pprof_tagfocus_off_cpu(self):
        text = self.pprof("-top", "-tagfocus=state=off-cpu")
        off = self.expected["samples"] - self.expected["on_cpu_samples"]
        self.assertIn("Showing nodes accounting for %dms" % (off * self.period // 10**6), text)
        self.assertIn("SSLSocket.recv_into", text)
        self.assertNotIn("JSONDecoder.decode", text)
        idle = self.pprof("-traces", "-tagfocus=thread_id=4251")
        self.assertIn(NO_FRAMES, idle)

    # --- speedscope ----------------------------------------------------------------------

    def check_speedscope(self, name):
        with open(self.path(name), encoding="utf-8") as f:
            doc = json.load(f)
        self.assertEqual(doc["$schema"], "https://www.speedscope.app/file-format-schema.json")
        self.assertEqual(doc["exporter"], "spyglass")
        frames = doc["shared"]["frames"]
        for frame in frames:
            self.assertIsInstance(frame["name"], str)
            self.assertTrue(frame["name"])
            if "line" in frame:
                self.assertIsInstance(frame["line"], int)
        names = [f["name"] for f in frames]
        self.assertEqual(len(names), len(set(names)))
        for label in self.expected["labels"]:
            self.assertIn(label, names)
        threads = [t for t in self.expected["threads"] if t["samples"]]
        profiles = doc["profiles"]
        self.assertEqual(len(profiles), len(threads))
        self.assertTrue(0 <= doc["activeProfileIndex"] < len(profiles))
        for profile, thread in zip(profiles, threads):
            self.assertEqual(profile["type"], "sampled")
            self.assertEqual(profile["unit"], "seconds")
            self.assertEqual(profile["name"], thread["root"])
            self.assertIn(str(thread["tid"]), profile["name"])
            samples, weights = profile["samples"], profile["weights"]
            self.assertEqual(len(samples), len(weights))
            off = 0.0
            for stack, weight in zip(samples, weights):
                self.assertTrue(stack)
                for index in stack:
                    self.assertTrue(0 <= index < len(frames), index)
                self.assertEqual(frames[stack[0]]["name"], thread["root"])  # root first
                self.assertGreater(weight, 0)
                if frames[stack[-1]]["name"] == OFF_CPU:
                    off += weight
            total = thread["samples"] * self.period / 1e9
            self.assertTrue(math.isclose(sum(weights), total, rel_tol=1e-9), (sum(weights), total))
            waiting = (thread["samples"] - thread["on_cpu_samples"]) * self.period / 1e9
            self.assertTrue(math.isclose(off, waiting, rel_tol=1e-9, abs_tol=1e-12))
            self.assertLessEqual(profile["startValue"], profile["endValue"])
            self.assertGreaterEqual(profile["endValue"] - profile["startValue"] + 1e-9,
                                    sum(weights))
        return doc

    def test_speedscope_from_the_timeline(self):
        doc = self.check_speedscope("profile.json")
        # Time order: MainThread's busy stack comes back after the network wait.
        main = doc["profiles"][0]
        leaves = [doc["shared"]["frames"][s[-1]]["name"] for s in main["samples"]]
        self.assertEqual(leaves[0], leaves[-1])
        self.assertGreater(len(leaves), len(set(leaves)))

    def test_speedscope_from_the_samples(self):
        doc = self.check_speedscope("profile-samples.json")
        for profile in doc["profiles"]:
            stacks = [tuple(s) for s in profile["samples"]]
            self.assertEqual(len(stacks), len(set(stacks)))  # merged

    # --- flame graph ---------------------------------------------------------------------

    def test_flamegraph_svg(self):
        tree = ET.parse(self.path("profile.svg"))
        root = tree.getroot()
        self.assertEqual(root.tag, SVG + "svg")
        self.assertIsNotNone(root.find(SVG + "script"))
        # Self-contained: nothing refers to anything outside the file.
        for element in root.iter():
            for key, value in element.attrib.items():
                if key.endswith("href"):
                    self.fail("external reference %s=%s" % (key, value))
            self.assertNotEqual(element.tag, SVG + "image")
        style = root.find(SVG + "style").text
        self.assertNotIn("url(", style)
        self.assertNotIn("@import", style)
        texts = {e.get("id"): "".join(e.itertext()) for e in root.iter(SVG + "text")}
        self.assertIn("python3 /srv/app/main.py --name=<\u00e4 & \"b\">", texts["title"])
        self.assertIn("%d samples" % self.expected["samples"], texts["subtitle"])
        self.assertIn("at 100 Hz", texts["subtitle"])
        self.assertIn("50.0% on-CPU", texts["subtitle"])

        frames = {}
        for g in root.find(SVG + "g[@id='frames']"):
            title = g.find(SVG + "title").text
            frames.setdefault(title.split("\n")[0], []).append((title, g.find(SVG + "rect")))
        for label in self.expected["labels"]:
            self.assertIn(label, frames)
        for thread in self.expected["threads"]:
            self.assertIn(thread["root"], frames)
        self.assertIn("all", frames)
        self.assertIn("%d samples, 100.00%% of total" % self.expected["samples"],
                      frames["all"][0][0])

        def rgb(rect):
            return [int(v) for v in re.match(r"rgb\((\d+),(\d+),(\d+)\)", rect.get("fill")).groups()]

        for title, rect in frames[OFF_CPU] + frames[NO_FRAMES]:
            r, g, b = rgb(rect)
            self.assertGreater(b, r, title)  # blue: waiting
            self.assertIn("waiting", title)
        for title, rect in frames["compute (/srv/app/main.py:12)"]:
            r, g, b = rgb(rect)
            self.assertGreater(r, b, title)  # warm: on CPU
            self.assertIn("file: /srv/app/main.py:12", title)
            self.assertIn("on-CPU 5 (100.0%), waiting 0 (0.0%)", title)

    # --- folded --------------------------------------------------------------------------

    def test_folded(self):
        with open(self.path("profile.txt"), encoding="utf-8") as f:
            lines = f.read().split("\n")
        self.assertEqual(lines[-1], "")
        lines = lines[:-1]
        self.assertEqual(lines, sorted(lines))
        roots = {t["root"]: t for t in self.expected["threads"]}
        stacks, per_root, off = set(), {}, 0
        for line in lines:
            match = re.match(r"^(.+) (\d+)$", line)  # flamegraph.pl's and inferno's split
            self.assertIsNotNone(match, line)
            stack, count = match.group(1), int(match.group(2))
            self.assertNotIn(stack, stacks)
            stacks.add(stack)
            frames = stack.split(";")
            self.assertTrue(all(frames), line)
            self.assertIn(frames[0], roots)
            per_root[frames[0]] = per_root.get(frames[0], 0) + count
            if frames[-1] == OFF_CPU:
                off += count
        self.assertEqual(sum(per_root.values()), self.expected["samples"])
        for root, thread in roots.items():
            self.assertEqual(per_root.get(root, 0), thread["samples"], root)
        self.assertEqual(off, self.expected["samples"] - self.expected["on_cpu_samples"])


if __name__ == "__main__":
    unittest.main()
