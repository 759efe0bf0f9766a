"""The one file to copy (scripts/build-static): `ldd` lists only glibc's own libraries, and from
inside a minimal root that holds nothing but that binary, those libraries and /proc (a tmpfs in
a private mount namespace, entered with chroot) it dumps and records a Python process that
runs outside, on the host.

The binary is $SPYGLASS_STATIC_BIN, else build-static/spyglass; scripts/test builds it and sets
the variable, and then a missing binary is a failure, not a skip.
"""
import os
import re
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402

GLIBC = {"linux-vdso.so.1", "libc.so.6", "libm.so.6", "libpthread.so.0", "libdl.so.2",
         "librt.so.1", "ld-linux-x86-64.so.2"}
# Runs inside `unshare --mount`: builds the root on a tmpfs, then runs spyglass in it.
MINIMAL_ROOT = r"""
set -eu
root=$(mktemp -d)
mount -t tmpfs -o size=64m spyglass-root "$root"
cp "$0" "$root/spyglass"
for lib in "$@"; do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
done
mkdir "$root/proc"
mount -t proc proc "$root/proc"
echo "root: $(cd "$root" && find . -path ./proc -prune -o -type f -print | sort | tr '\n' ' ')"
chroot "$root" /spyglass dump --pid "$TARGET_PID"
echo "--- record"
chroot "$root" /spyglass record --pid "$TARGET_PID" -d 1 -f raw -o -
"""


def static_binary():
    path = os.environ.get("SPYGLASS_STATIC_BIN") or os.path.join(harness.ROOT, "build-static",
                                                                 "spyglass")
    if os.access(path, os.X_OK):
        return path
    if os.environ.get("SPYGLASS_STATIC_BIN"):
        raise AssertionError("SPYGLASS_STATIC_BIN=%s is not an executable" % path)
    reason = "no static binary at %s (build it with ./scripts/build-static)" % path
    sys.stderr.write("SKIP test_static_binary: %s\n" % reason)
    raise unittest.SkipTest(reason)


def ldd(path):
    """[(name, path or None)] of what the dynamic loader would load."""
    result = subprocess.run(["ldd", path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            encoding="utf-8", timeout=60)
    if result.returncode != 0:
        raise AssertionError("ldd %s: %s" % (path, result.stderr))
    libraries = []
    for line in result.stdout.splitlines():
        match = re.match(r"^\s*(\S+)(?: => (\S+))?", line)
        name, where = match.group(1), match.group(2)
        if where is None and name.startswith("/"):
            where = name
        libraries.append((os.path.basename(name), where))
    return libraries


class StaticBinary(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.binary = static_binary()
        sys.stderr.write("\nstatic binary %s: %d bytes\n" % (cls.binary,
                                                             os.path.getsize(cls.binary)))

    def test_ldd_lists_only_glibc(self):
        libraries = ldd(self.binary)
        names = {name for name, _ in libraries}
        self.assertLessEqual(names, GLIBC, libraries)
        self.assertIn("libc.so.6", names)
        version = subprocess.run([self.binary, "--version"], stdout=subprocess.PIPE,
                                 encoding="utf-8", timeout=30)
        self.assertRegex(version.stdout, r"^spyglass \d+\.\d+\.\d+ \(commit ")

    def test_profiles_from_a_root_with_nothing_else(self):
        if os.geteuid() != 0 or shutil.which("unshare") is None:
            reason = "needs root and unshare (util-linux) for a private mount namespace"
            sys.stderr.write("SKIP %s: %s\n" % (self.id(), reason))
            raise unittest.SkipTest(reason)
        libraries = [where for _, where in ldd(self.binary) if where]
        with harness.Target(harness.any_interpreter(), "record_target.py") as target:
            result = subprocess.run(
                ["unshare", "--mount", "--propagation", "private", "sh", "-c", MINIMAL_ROOT,
                 self.binary] + libraries,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, encoding="utf-8", timeout=120,
                env=dict(os.environ, TARGET_PID=str(target.pid)))
        self.assertEqual(result.returncode, 0, result.stdout + result.stderr)
        root_line, rest = result.stdout.split("\n", 1)
        files = root_line.split()[1:]
        self.assertEqual(sorted(files), sorted(["./spyglass"] + ["." + lib for lib in libraries]))
        dump, folded = rest.split("--- record\n")
        self.assertIn("Process %d: " % target.pid, dump)
        self.assertRegex(dump, r'Thread \d+ \[0x[0-9a-f]+\] "busy"')
        self.assertIn("slow_part", dump + folded)
        lines = [line for line in folded.splitlines() if line]
        self.assertTrue(lines)
        self.assertTrue(all(re.match(r"^.+ \d+$", line) for line in lines), lines[:3])
        self.assertTrue(any("slow_part (" in line for line in lines), lines[:5])
        self.assertIn("samples in 1.0 s", result.stderr)


if __name__ == "__main__":
    unittest.main()
