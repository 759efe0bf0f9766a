"""Per-sample labels end to end: `record --label` puts its labels on every pprof sample (every
window's too) and in the raw recording, `report --where` and `diff --where` keep the samples
that have them (all of them, repeated), and a malformed --label or --where is a one-line error
with exit status 2."""
import os
import re
import socket
import sys
import unittest
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import pprof_decode  # noqa: E402
import test_push  # noqa: E402  (its local ingest server)

RATE = 200


def labels_workdir():
    directory = os.path.join(os.environ.get("TMPDIR", "/tmp"), "spyglass-tests", "labels")
    os.makedirs(directory, exist_ok=True)
    for entry in os.listdir(directory):
        os.unlink(os.path.join(directory, entry))
    return directory


def sample_count(path):
    return sum(s["values"][0] for s in pprof_decode.decode_file(path)["samples"])


class LabelTests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.python = harness.any_interpreter()

    def run_ok(self, *args):
        result = harness.spyglass(*args)
        self.assertEqual(result.returncode, 0, result.stderr)
        return result

    def test_record_labels_every_sample_and_report_selects_by_them(self):
        d = labels_workdir()
        pprof = os.path.join(d, "labelled.pb.gz")
        raw = os.path.join(d, "labelled.sgr")
        with harness.Target(self.python, "record_target.py") as target:
            self.run_ok("record", "--rate", RATE, "--pid", target.pid, "-d", 1, "-f", "pprof",
                        "-o", pprof, "--raw", raw, "--label", "env=prod", "--label", "tier=web")
        samples = pprof_decode.decode_file(pprof)["samples"]
        self.assertTrue(samples)
        for sample in samples:
            self.assertEqual(sample["labels"].get("env"), "prod", sample)
            self.assertEqual(sample["labels"].get("tier"), "web", sample)
        total = sum(s["values"][0] for s in samples)

        prod = os.path.join(d, "prod.pb.gz")
        self.run_ok("report", raw, "-o", prod, "--where", "env=prod")
        self.assertEqual(sample_count(prod), total)
        both = os.path.join(d, "both.pb.gz")
        self.run_ok("report", raw, "-o", both, "--where", "env=prod", "--where", "tier=web")
        self.assertEqual(sample_count(both), total)
        for where in (["--where", "env=dev"], ["--where", "env=prod", "--where", "tier=db"]):
            none = os.path.join(d, "none.pb.gz")
            result = self.run_ok("report", raw, "-o", none, *where)
            self.assertEqual(sample_count(none), 0, where)
            self.assertIn("report: 0 samples of", result.stderr)

        # diff --where selects in both inputs alike, raw or pprof.
        result = self.run_ok("diff", raw, pprof, "--where", "env=prod", "--where", "tier=web")
        self.assertIn("%", result.stdout)
        for base, new in ((raw, pprof), (pprof, raw)):
            result = harness.spyglass("diff", base, new, "--where", "env=dev")
            self.assertEqual(result.returncode, 1, result.stderr)
            self.assertIn("has no samples with env=dev: nothing to compare", result.stderr)
        folded = os.path.join(d, "labelled.txt")
        self.run_ok("report", raw, "-o", folded)
        result = harness.spyglass("diff", folded, raw, "--where", "env=prod")
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("folded stacks, which keep no labels", result.stderr)

    def test_every_window_carries_the_labels_across_table_resets(self):
        d = labels_workdir()
        pattern = os.path.join(d, "w-%H%M%S.pb.gz")
        raw = os.path.join(d, "bounded.sgr")
        # Tables bounded hard and code that never repeats: they are emptied many times, and the
        # label set is interned anew after each.
        env = dict(os.environ, SPYGLASS_TABLE_LIMIT="64")
        with harness.Target(self.python, "new_code.py", 2) as target:
            result = harness.spyglass("-v", "record", "--rate", RATE, "--pid", target.pid, "-d",
                                      2.5, "--window", 1, "-o", pattern, "--raw", raw, "--label",
                                      "env=prod", env=env)
        self.assertEqual(result.returncode, 0, result.stderr)
        resets = re.search(r"tables were emptied (\d+) times", result.stderr)
        self.assertTrue(resets and int(resets.group(1)) > 1, result.stderr)
        windows = sorted(name for name in os.listdir(d) if name.startswith("w-"))
        self.assertGreaterEqual(len(windows), 2, windows)
        total = 0
        for name in windows:
            for sample in pprof_decode.decode_file(os.path.join(d, name))["samples"]:
                self.assertEqual(sample["labels"].get("env"), "prod", (name, sample))
                total += sample["values"][0]
        prod = os.path.join(d, "prod.pb.gz")
        self.run_ok("report", raw, "-o", prod, "--where", "env=prod")
        everything = os.path.join(d, "all.pb.gz")
        self.run_ok("report", raw, "-o", everything)
        self.assertEqual(sample_count(prod), sample_count(everything))
        self.assertEqual(sample_count(prod), total)

    def test_labels_are_push_tags_too(self):
        server = test_push.Server(200)
        try:
            with harness.Target(self.python, "record_target.py") as target:
                result = harness.spyglass("record", "--pid", target.pid, "--rate", 100, "-d", 2,
                                          "--window", 1, "--push", server.url, "--app",
                                          "testapp", "--tag", "env=test", "--label", "tier=web")
                pid = target.pid
        finally:
            server.close()
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertTrue(server.requests, result.stderr)
        for path, _, _ in server.requests:
            query = dict(urllib.parse.parse_qsl(urllib.parse.urlparse(path).query))
            self.assertEqual(query["name"], "testapp{env=test,tier=web,hostname=%s,pid=%d}" % (
                socket.gethostname(), pid))

    def test_a_recording_without_labels_has_none(self):
        d = labels_workdir()
        pprof = os.path.join(d, "plain.pb.gz")
        with harness.Target(self.python, "record_target.py") as target:
            self.run_ok("record", "--rate", RATE, "--pid", target.pid, "-d", 0.5, "-f", "pprof",
                        "-o", pprof)
        for sample in pprof_decode.decode_file(pprof)["samples"]:
            self.assertNotIn("env", sample["labels"])

    def test_malformed_labels_are_one_line_errors(self):
        d = labels_workdir()
        out = os.path.join(d, "never.pb.gz")
        for args in (["record", "--label", "env", "-o", out, "--", self.python, "-c", "pass"],
                     ["record", "--label", "bad key=1", "-o", out, "--", self.python, "-c",
                      "pass"],
                     ["record", "--label", "env=", "-o", out, "--", self.python, "-c", "pass"],
                     ["record", "--label", "state=busy", "-o", out, "--", self.python, "-c",
                      "pass"],
                     ["report", os.path.join(d, "missing.sgr"), "--where", "=prod"],
                     ["diff", out, out, "--where", "env"]):
            result = harness.spyglass(*args)
            self.assertEqual(result.returncode, 2, (args, result.stderr))
            lines = result.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, result.stderr)
            self.assertIn("spyglass: error: --", lines[0])
            self.assertFalse(os.path.exists(out))


if __name__ == "__main__":
    unittest.main()
