"""record --context NAME: each sample carries the value of the contextvars.ContextVar called
NAME in its thread's current context, read at the sample (pprof sample labels, the raw file,
report --where). Threads that never set it carry no such label; a variable set around one call
labels exactly the samples in that call; another variable's value never shows under the name."""
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
import pprof_decode  # noqa: E402

RATE = 250


WORK = ("work_a", "work_b", "work_plain", "phase_one", "phase_two")


def leaf_function(sample):
    """The innermost of the target's work functions in the sample (spin() is below each)."""
    for frame in reversed(sample["stack"]):
        name = frame.split(" (")[0]
        if name in WORK:
            return name
    return sample["stack"][-1].split(" (")[0] if sample["stack"] else ""


def workdir(label):
    directory = os.path.join(os.environ.get("TMPDIR", "/tmp"), "spyglass-tests", "context",
                             label)
    os.makedirs(directory, exist_ok=True)
    return directory


class ContextLabels(harness.InterpreterCase):
    def test_samples_carry_their_threads_context_values(self):
        d = workdir(self.label)
        pprof = os.path.join(d, "context.pb.gz")
        raw = os.path.join(d, "context.sgr")
        with harness.Target(self.python, "context_target.py") as target:
            result = harness.spyglass("record", "--pid", target.pid, "-r", RATE, "-d", 2,
                                      "-f", "pprof", "-o", pprof, "--raw", raw,
                                      "--context", "request_id", "--context", "tenant")
        self.assertEqual(result.returncode, 0, result.stderr)
        total = sum(s["values"][0] for s in pprof_decode.decode_file(pprof)["samples"])
        unreadable = re.search(r"(\d+) --context values? could not be read", result.stderr)
        # Only a context that changed while it was read (the switcher's, every 3 ms).
        self.assertLessEqual(int(unreadable.group(1)) if unreadable else 0, 0.01 * total,
                             result.stderr)
        leaves = {}
        for sample in pprof_decode.decode_file(pprof)["samples"]:
            labels = sample["labels"]
            values = leaves.setdefault(leaf_function(sample), {})
            key = (labels.get("request_id"), labels.get("tenant"))
            values[key] = values.get(key, 0) + sample["values"][0]
        # The workers never change their variables: every sample has exactly their values.
        for leaf, values in (("work_a", ("req-a", "acme")), ("work_b", ("req-b", "42")),
                             ("work_plain", (None, None))):
            got = leaves.get(leaf, {})
            self.assertTrue(got, (leaf, sorted(leaves)))
            self.assertEqual(set(got), {values}, (leaf, got))
        # The switcher sets and resets request_id around each call: the variable and the stack
        # are read a few microseconds apart from a running thread, so a sample at the very
        # edge of a call may pair the call with the value just before or after it.
        for leaf, values in (("phase_one", ("req-1", None)), ("phase_two", ("req-2", None))):
            got = leaves.get(leaf, {})
            self.assertTrue(got, (leaf, sorted(leaves)))
            right = got.get(values, 0)
            self.assertGreaterEqual(right, 0.97 * sum(got.values()), (leaf, got))
        # The raw recording keeps them: report --where selects one request's samples.
        req_a = os.path.join(d, "req-a.pb.gz")
        result = harness.spyglass("report", raw, "-o", req_a, "--where", "request_id=req-a")
        self.assertEqual(result.returncode, 0, result.stderr)
        selected = pprof_decode.decode_file(req_a)["samples"]
        self.assertTrue(selected)
        self.assertEqual({leaf_function(s) for s in selected}, {"work_a"})


harness.interpreter_tests(ContextLabels, globals(),
                          labels=["3.8", "3.11", "3.12", "3.13", "debian-3.11",
                                  "debian-sid-3.14", "debian-sid-3.15"])


class ContextOnOlderPythons(harness.InterpreterCase):
    def test_an_interpreter_without_the_offsets_is_said_and_recorded_unlabelled(self):
        d = workdir(self.label)
        pprof = os.path.join(d, "old.pb.gz")
        with harness.Target(self.python, "busy_threads.py") as target:
            result = harness.spyglass("record", "--pid", target.pid, "-r", RATE, "-d", 0.5,
                                      "-f", "pprof", "-o", pprof, "--context", "request_id")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertRegex(result.stderr, r"--context request_id: contextvars are read on Python "
                                        r"3\.8 to 3\.15, not \d")
        samples = pprof_decode.decode_file(pprof)["samples"]
        self.assertTrue(samples)
        self.assertFalse([s for s in samples if "request_id" in s["labels"]])


harness.interpreter_tests(ContextOnOlderPythons, globals(), labels=["2.7", "3.6", "3.7"])


class ContextArguments(unittest.TestCase):
    def test_bad_names_are_one_line_errors(self):
        for args, message in (
                (["--context", "bad name"], "a label's name is"),
                (["--context", "thread"], "a label spyglass gives every sample itself"),
                (["--context", "env", "--label", "env=prod"], "names it too"),
                (["--context", "a", "--context", "a"], "asked for twice"),
                (["--context", "a", "--context", "b", "--context", "c", "--context", "d",
                  "--context", "e"], "at most 4")):
            result = harness.spyglass("record", "--pid", os.getpid(), "-d", 0.1, "-o",
                                      os.devnull, *args)
            self.assertNotEqual(result.returncode, 0, args)
            lines = result.stderr.strip().splitlines()
            self.assertEqual(len(lines), 1, result.stderr)
            self.assertIn(message, lines[0], args)


if __name__ == "__main__":
    unittest.main()
