"""spyglass diff: two recordings of a workload whose function's share is changed on purpose
(20% -> 60% of its thread's time) show that function as the top grower, with the right sign and
size, from pprof, raw and folded inputs, in the --top table and in the differential flame
graph's colours; --mode cpu; bad input is one clear error."""
import os
import re
import sys
import unittest
import xml.etree.ElementTree as ElementTree

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

ROW = re.compile(r"^\s*([\d.]+)%\s+([\d.]+)%\s+([+-][\d.]+)%\s+([\d.]+)%\s+([\d.]+)%\s+"
                 r"([+-][\d.]+)%\s+(.*)$")


def table(text):
    """[(frame, self change, total change)] in the table's order, as fractions."""
    rows = []
    for line in text.splitlines():
        match = ROW.match(line)
        if match:
            rows.append((match.group(7), float(match.group(3)) / 100,
                         float(match.group(6)) / 100))
    return rows


def function(label):
    return label.split(" (", 1)[0]


class DiffTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.python = harness.any_interpreter()
        cls.dir = os.path.join(os.environ.get("TMPDIR", "/tmp"), "spyglass-tests", "diff")
        os.makedirs(cls.dir, exist_ok=True)
        for entry in os.listdir(cls.dir):
            os.unlink(os.path.join(cls.dir, entry))
        cls.files = {}
        for share in ("0.2", "0.6"):
            with harness.Target(cls.python, "shares.py", share) as target:
                base = os.path.join(cls.dir, "share-" + share)
                result = harness.spyglass("record", "--pid", target.pid, "--rate", 200, "-d", 3,
                                          "-o", base + ".pb.gz", "--raw", base + ".sgr")
                assert result.returncode == 0, result.stderr
                result = harness.spyglass("report", base + ".sgr", "-o", base + ".txt")
                assert result.returncode == 0, result.stderr
            cls.files[share] = base

    def diff(self, base, new, *args):
        result = harness.spyglass("diff", base, new, *args)
        self.assertEqual(result.returncode, 0, result.stderr)
        return result

    def check_grower(self, rows, expected_sign):
        # A function can have more than one row (a sample on its `def` line, at its first
        # instruction, is a frame of its own): its row is the one that moved most, the first.
        changes = {}
        for frame, _, total in rows:
            changes.setdefault(function(frame), total)
        self.assertIn("grown", changes, rows)
        self.assertIn("steady", changes, rows)
        # 20% -> 60% of the thread's time: +40 points (loose: sampling and spin overheads).
        self.assertAlmostEqual(changes["grown"], expected_sign * 0.40, delta=0.12)
        self.assertAlmostEqual(changes["steady"], -expected_sign * 0.40, delta=0.12)
        # The top grower (or shrinker): no frame moved more in that direction.
        extreme = max(expected_sign * total for _, _, total in rows)
        self.assertAlmostEqual(expected_sign * changes["grown"], extreme, places=4)
        # The table is sorted by the size of the change: grown is among the first rows.
        self.assertIn("grown", [function(f) for f, _, _ in rows[:4]])

    def test_top_grower_from_every_input_format(self):
        for ext in (".pb.gz", ".sgr", ".txt"):
            result = self.diff(self.files["0.2"] + ext, self.files["0.6"] + ext, "--top", 10)
            self.check_grower(table(result.stdout), +1)
            result = self.diff(self.files["0.6"] + ext, self.files["0.2"] + ext, "--top", 10)
            self.check_grower(table(result.stdout), -1)

    def test_cpu_mode(self):
        result = self.diff(self.files["0.2"] + ".sgr", self.files["0.6"] + ".sgr", "--mode", "cpu",
                           "--top", 10)
        self.check_grower(table(result.stdout), +1)
        # No off-CPU frame in a cpu diff, and the busy thread's shares still sum sensibly.
        self.assertNotIn("[off-cpu]", result.stdout)

    def test_differential_flame_graph(self):
        out = os.path.join(self.dir, "diff.svg")
        self.diff(self.files["0.2"] + ".pb.gz", self.files["0.6"] + ".pb.gz", "-o", out)
        ns = {"svg": "http://www.w3.org/2000/svg"}
        root = ElementTree.parse(out).getroot()
        colours = {}
        for group in root.iter("{http://www.w3.org/2000/svg}g"):
            title = group.find("svg:title", ns)
            rect = group.find("svg:rect", ns)
            if title is None or rect is None:
                continue
            name = function(title.text.split("\n", 1)[0])
            colours.setdefault(name, []).append((rect.get("fill"), title.text))
        self.assertIn("grown", colours)
        for fill, text in colours["grown"]:
            r, g, b = (int(x) for x in re.match(r"rgb\((\d+),(\d+),(\d+)\)", fill).groups())
            self.assertTrue(r > b and r - g > 100, (fill, text))  # strongly red
            change = float(re.search(r"\(([+-][\d.]+) points\)", text).group(1))
            self.assertAlmostEqual(change, 40, delta=12)
        for fill, text in colours["steady"]:
            r, g, b = (int(x) for x in re.match(r"rgb\((\d+),(\d+),(\d+)\)", fill).groups())
            self.assertTrue(b > r and b - g > 100, (fill, text))  # strongly blue
        with open(out, encoding="utf-8") as f:
            self.assertIn("share of all samples grew", f.read())

    def test_bad_input(self):
        missing = os.path.join(self.dir, "missing.pb.gz")
        result = harness.spyglass("diff", missing, self.files["0.6"] + ".pb.gz")
        self.assertEqual(result.returncode, 1)
        self.assertIn("cannot read", result.stderr)
        self.assertEqual(len(result.stderr.strip().splitlines()), 1)
        junk = os.path.join(self.dir, "junk.txt")
        with open(junk, "w") as f:
            f.write("this is not a profile\n")
        out = os.path.join(self.dir, "junk.svg")
        result = harness.spyglass("diff", junk, self.files["0.6"] + ".txt", "-o", out)
        self.assertEqual(result.returncode, 1)
        self.assertIn("not a pprof profile, a raw recording or folded stacks", result.stderr)
        self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    unittest.main()
