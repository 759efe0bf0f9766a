"""Finding the interpreter without symbols: a libpython stripped of .symtab (2.7 and 3.6 keep
their root pointer in a static, so it has to be decoded from PyInterpreterState_Head), and the
plausibility-checked scan of the data segments (forced with SPYGLASS_ROOT_SCAN=1) on every
installed interpreter. Stacks must come out exactly as with symbols."""
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def frames_of(thread):
    return [[f["function"], f.get("file"), f.get("line")] for f in thread["frames"]]


class StrippedTests(harness.InterpreterCase):
    def test_scan_of_the_data_segments(self):
        env = {"SPYGLASS_ROOT_SCAN": "1"}
        with harness.Target(self.python, "dump_target.py") as target:
            result = harness.spyglass("dump", "--pid", target.pid, "--json",
                                      env=dict(os.environ, **env))
            self.assertEqual(result.returncode, 0, result.stderr)
            dump = json.loads(result.stdout)
            self.assertTrue(any("found by scanning" in n for n in dump["notes"]), dump["notes"])
            threads = {t["thread_id"]: t for t in dump["threads"]}
            for name in ("MainThread", "sleepy", "recursive", "unicode"):
                info = target.report["threads"][name]
                self.assertEqual(frames_of(threads[info["ident"]]), info["stack"], name)

    def test_libpython_without_symtab(self):
        if self.label.startswith("debian"):
            self.skipTest("Debian's python3.11 is already stripped and has no libpython "
                          "(covered by every other test)")
        libs = glob.glob(os.path.join(os.path.dirname(os.path.dirname(self.python)), "lib",
                                      "libpython*.so.1.0"))
        if not libs or not shutil.which("strip"):
            self.skipTest("no shared libpython next to %s, or no strip" % self.python)
        with tempfile.TemporaryDirectory() as directory:
            stripped = os.path.join(directory, os.path.basename(libs[0]))
            shutil.copy(libs[0], stripped)
            subprocess.run(["strip", "--strip-all", stripped], check=True)
            env = dict(os.environ, LD_LIBRARY_PATH=directory)
            with harness.Target(self.python, "dump_target.py", env=env) as target:
                with open("/proc/%d/maps" % target.pid) as f:
                    maps = f.read()
                self.assertIn(stripped, maps)  # the stripped copy is the one in use
                result = harness.spyglass("dump", "--pid", target.pid, "--json")
                self.assertEqual(result.returncode, 0, result.stderr)
                dump = json.loads(result.stdout)
                self.assertTrue(any("no .symtab" in n for n in dump["notes"]), dump["notes"])
                if self.version() < (3, 7):
                    self.assertTrue(any("PyInterpreterState_Head" in n for n in dump["notes"]),
                                    dump["notes"])
                threads = {t["thread_id"]: t for t in dump["threads"]}
                for name in ("MainThread", "sleepy", "recursive", "unicode"):
                    info = target.report["threads"][name]
                    self.assertEqual(frames_of(threads[info["ident"]]), info["stack"], name)
                    self.assertEqual(threads[info["ident"]]["name"], name)
                # The spinning worker may be waiting for the GIL at the moment of one dump
                # (the reporter thread takes it to exit): active in one of a few dumps.
                worker_ident = target.report["threads"]["worker"]["ident"]
                states = [threads[worker_ident]["state"]]
                while states[-1] != "active" and len(states) < 5:
                    again = harness.spyglass("dump", "--pid", target.pid, "--json")
                    self.assertEqual(again.returncode, 0, again.stderr)
                    again = {t["thread_id"]: t for t in json.loads(again.stdout)["threads"]}
                    states.append(again[worker_ident]["state"])
                self.assertEqual(states[-1], "active", states)


harness.interpreter_tests(StrippedTests, globals())

if __name__ == "__main__":
    unittest.main()
