"""spyglass dump against every installed interpreter: exact frames, thread names and ids,
active/idle, GIL holder, non-ASCII names, a 500-deep stack, text and JSON output."""
import json
import re
import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

WORKLOAD = os.path.join(harness.WORKLOADS, "dump_target.py")
PARKED = ["MainThread", "sleepy", "recursive", "unicode"]


def marker_line(name):
    with open(WORKLOAD, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if "# MARK:%s" % name in line:
                return number
    raise AssertionError("no marker " + name)


def frames_of(thread):
    return [[f["function"], f.get("file"), f.get("line")] for f in thread["frames"]]


class DumpTests(harness.InterpreterCase):
    def dump(self, pid, *extra):
        result = harness.spyglass("dump", "--pid", pid, "--json", *extra)
        self.assertEqual(result.returncode, 0, result.stderr)
        return json.loads(result.stdout)

    def threads_by_ident(self, dump):
        return {t["thread_id"]: t for t in dump["threads"]}

    def expected_stack(self, report, name):
        return report["threads"][name]["stack"]

    def test_stacks_match_the_interpreters_own_view(self):
        with harness.Target(self.python, "dump_target.py") as target:
            dump = self.dump(target.pid)
            threads = self.threads_by_ident(dump)
            for name in PARKED:
                ident = target.report["threads"][name]["ident"]
                self.assertIn(ident, threads, "thread %s missing from the dump" % name)
                self.assertEqual(frames_of(threads[ident]), self.expected_stack(target.report, name),
                                 "thread " + name)
                self.assertEqual(threads[ident]["stack"], "ok")
            # The busy thread moves within busy_inner's loop; the frames below it do not.
            worker = threads[target.report["threads"]["worker"]["ident"]]
            got = frames_of(worker)
            expected = target.report["threads"]["worker"]["stack"]
            self.assertEqual([f[0] for f in got], [f[0] for f in expected])
            self.assertEqual(got[1:], expected[1:])
            self.assertEqual(got[0][1], WORKLOAD)
            self.assertTrue(marker_line("busy_loop_start") <= got[0][2] <= marker_line("busy_loop_end"),
                            got[0])

    def test_known_lines_of_the_parked_threads(self):
        with harness.Target(self.python, "dump_target.py") as target:
            threads = self.threads_by_ident(self.dump(target.pid))
            main = frames_of(threads[target.report["threads"]["MainThread"]["ident"]])
            self.assertEqual(main[:3], [["main_inner", WORKLOAD, marker_line("main_inner")],
                                        ["main_middle", WORKLOAD, marker_line("main_middle")],
                                        ["main_outer", WORKLOAD, marker_line("main_outer")]])
            self.assertEqual(main[3][0], "<module>")
            sleepy = frames_of(threads[target.report["threads"]["sleepy"]["ident"]])
            self.assertEqual(sleepy[:2], [["sleep_inner", WORKLOAD, marker_line("sleep_inner")],
                                          ["sleep_outer", WORKLOAD, marker_line("sleep_outer")]])

    def test_thread_ids_names_and_states(self):
        with harness.Target(self.python, "dump_target.py") as target:
            # The spinning worker may be waiting for the GIL at the moment of one dump (the
            # reporter thread takes it to exit): it must be active in one of a few dumps, and
            # the parked threads idle in every one.
            worker_states = []
            while "active" not in worker_states and len(worker_states) < 5:
                dump = self.dump(target.pid)
                self.assertEqual(dump["pid"], target.pid)
                threads = self.threads_by_ident(dump)
                # The reporter thread may still be on its way out.
                self.assertIn(len(dump["threads"]), (5, 6))
                for name, info in target.report["threads"].items():
                    thread = threads[info["ident"]]
                    self.assertEqual(thread["tid"], info["tid"], name)
                    self.assertEqual(thread["name"], name)
                    if name == "worker":
                        worker_states.append(thread["state"])
                    else:
                        self.assertEqual(thread["state"], "idle", name)
            self.assertEqual(worker_states[-1], "active", worker_states)

    def test_gil_holder_is_the_busy_thread(self):
        # The busy thread drops the GIL for a moment every switch interval, so one dump may
        # catch nobody holding it; over several it must be the only holder seen.
        with harness.Target(self.python, "dump_target.py") as target:
            worker = target.report["threads"]["worker"]["ident"]
            seen_worker = 0
            for _ in range(5):
                parked = {t["ident"] for t in target.report["threads"].values()}
                for thread in self.dump(target.pid)["threads"]:
                    if thread["gil"] and thread["thread_id"] in parked:
                        self.assertEqual(thread["thread_id"], worker, thread["name"])
                        seen_worker += 1
            self.assertGreaterEqual(seen_worker, 3)

    def test_non_ascii_names(self):
        with harness.Target(self.python, "dump_target.py") as target:
            threads = self.threads_by_ident(self.dump(target.pid))
            frames = frames_of(threads[target.report["threads"]["unicode"]["ident"]])
            names = [f[0] for f in frames[:3]]
            if self.version() >= (3, 0):
                self.assertEqual(names, [u"\U00020000", u"\u51fd\u6570", u"f\u00fcnf"])
            else:
                self.assertEqual(names, ["inner_u", "middle_u", "outer_u"])
            self.assertEqual({f[1] for f in frames[:3]}, {u"n\u00e4me_\u03a9.py"})

    def test_deep_recursion_is_read_completely(self):
        with harness.Target(self.python, "dump_target.py") as target:
            threads = self.threads_by_ident(self.dump(target.pid))
            frames = frames_of(threads[target.report["threads"]["recursive"]["ident"]])
            recursion = [f for f in frames if f[0] == "recurse"]
            self.assertEqual(len(recursion), 500)
            self.assertEqual(recursion[0][2], marker_line("recurse_leaf"))
            self.assertTrue(all(f[2] == marker_line("recurse_call") for f in recursion[1:]))
            self.assertNotIn("<truncated>", [f[0] for f in frames])

    def test_locals(self):
        with harness.Target(self.python, "dump_target.py") as target:
            threads = self.threads_by_ident(self.dump(target.pid, "--locals"))
            recursion = threads[target.report["threads"]["recursive"]["ident"]]["frames"]
            # recurse(n) called itself with n - 1: the innermost frame has n = 1.
            for depth in (0, 1, 2, 499):
                self.assertEqual(recursion[depth]["locals"],
                                 [{"name": "n", "value": str(depth + 1), "argument": True}])
            # The busy thread rebinds n all the time: read while it runs, the int object may be
            # freed and reused under the read, and the honest answer is then "unreadable".
            busy = threads[target.report["threads"]["worker"]["ident"]]["frames"][0]
            [n] = busy["locals"]
            self.assertEqual((n["name"], n["argument"]), ("n", False))
            self.assertRegex(n["value"], r"^(\d+L?|<unreadable object at 0x[0-9a-f]+>)$")
            # Stopped (--blocking), the same local reads as a number every time.
            threads = self.threads_by_ident(self.dump(target.pid, "--locals", "--blocking"))
            busy = threads[target.report["threads"]["worker"]["ident"]]["frames"][0]
            [n] = busy["locals"]
            self.assertEqual(n["name"], "n")
            self.assertTrue(int(n["value"].rstrip("L")) >= 0, n)
            text = harness.spyglass("dump", "--pid", target.pid, "--locals").stdout
            self.assertIn("        Arguments:\n            n = 1\n", text)

    def test_text_output(self):
        with harness.Target(self.python, "dump_target.py") as target:
            worker_tid = target.report["threads"]["worker"]["tid"]
            header = r'Thread %d \[0x[0-9a-f]+\] "worker" \(active(, \+gil)?\)' % worker_tid
            for _ in range(5):  # the worker may wait for the GIL at one dump's moment
                result = harness.spyglass("dump", "--pid", target.pid)
                self.assertEqual(result.returncode, 0, result.stderr)
                text = result.stdout
                if re.search(header, text):
                    break
            self.assertIn("Process %d: " % target.pid, text)
            self.assertIn("Python %d.%d." % self.version(), text)
            self.assertTrue(re.search(header, text), text[:2000])
            self.assertIn('"sleepy" (idle)', text)
            self.assertIn("    main_inner (%s:%d)\n" % (WORKLOAD, marker_line("main_inner")), text)

    def test_blocking_dump_leaves_the_target_running(self):
        with harness.Target(self.python, "dump_target.py") as target:
            dump = self.dump(target.pid, "--blocking")
            threads = self.threads_by_ident(dump)
            sleepy = target.report["threads"]["sleepy"]
            self.assertEqual(frames_of(threads[sleepy["ident"]]), sleepy["stack"])
            states = harness.task_states(target.pid)
            self.assertFalse([s for s in states.values() if s in "tT"], states)
            self.assertEqual(states[target.report["threads"]["worker"]["tid"]], "R")


harness.interpreter_tests(DumpTests, globals(), labels=harness.EXPECTED + harness.DEBUG_BUILDS)

if __name__ == "__main__":
    unittest.main()
