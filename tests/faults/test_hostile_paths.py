"""Output paths on a hostile host (issue 23, items 1, 2 and 4): one rule for every output
(record -o, --raw, report -o, diff -o, the --window files, the SIGUSR1 flush). Run as root, as spyglass usually is:
another user's link in a sticky world-writable directory is not followed, a link of ours is; a
device or a FIFO is written in place, never replaced; a temporary name planted in advance
neither blocks the write nor redirects it."""
import os
import select
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faults  # noqa: E402
from faults import harness  # noqa: E402

NOBODY = 65534
SECRET = "root only: must not change\n"


def catches_sigusr1(pid):
    return harness.catches_signal(pid, signal.SIGUSR1)


class HostilePaths(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if os.geteuid() != 0:
            raise unittest.SkipTest("needs root: the links belong to another user")
        cls.python = faults.any_python()
        cls.target = harness.Target(cls.python, "record_target.py")
        cls.target.__enter__()
        # One short raw recording for report and diff to read.
        cls.inputs = tempfile.mkdtemp(prefix="spyglass-hostile-inputs-")
        cls.raw = os.path.join(cls.inputs, "rec.sgr")
        made = harness.spyglass("record", "--pid", cls.target.pid, "-d", 0.3, "-o",
                                os.path.join(cls.inputs, "x.txt"), "--raw", cls.raw)
        if made.returncode != 0:
            cls.tearDownClass()
            raise AssertionError("the raw recording: " + made.stderr)

    @classmethod
    def tearDownClass(cls):
        cls.target.__exit__(None, None, None)
        shutil.rmtree(cls.inputs, ignore_errors=True)

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="spyglass-hostile-")
        self.secret = self.file("secret")
        with open(self.secret, "w") as f:
            f.write(SECRET)
        os.chmod(self.secret, 0o600)
        # Like /tmp: sticky and world-writable, owned by root.
        self.shared = self.file("shared")
        os.mkdir(self.shared)
        os.chmod(self.shared, 0o1777)
        # Planted by another user: a link to the root-only file, and a dangling one.
        self.planted = os.path.join(self.shared, "prof.txt")
        self.dangling = os.path.join(self.shared, "new.txt")
        for link, target in ((self.planted, self.secret), (self.dangling, self.file("created"))):
            os.symlink(target, link)
            os.lchown(link, NOBODY, NOBODY)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def file(self, name):
        return os.path.join(self.dir, name)

    def assert_refused(self, result, link):
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertEqual(result.stderr.count("\n"), 1, result.stderr)
        self.assertIn("%s is a symbolic link owned by nobody (uid %d) in the sticky "
                      "world-writable directory %s: not followed" % (link, NOBODY, self.shared),
                      result.stderr)
        self.assertTrue(os.path.islink(link))
        with open(self.secret) as f:
            self.assertEqual(f.read(), SECRET)
        self.assertEqual(stat.S_IMODE(os.stat(self.secret).st_mode), 0o600)
        self.assertFalse(os.path.lexists(self.file("created")))
        self.assertEqual(sorted(os.listdir(self.shared)), ["new.txt", "prof.txt"])

    def test_record_refuses_another_users_link(self):
        for link in (self.planted, self.dangling):
            result = harness.spyglass("record", "--pid", self.target.pid, "-d", 0.3, "-o", link)
            self.assert_refused(result, link)
            self.assertNotIn("samples", result.stderr)  # refused before attaching

    def test_a_planted_link_on_the_way_is_refused_too(self):
        # /shared/d -> the root-only directory: /shared/d/secret is the root-only file itself.
        on_the_way = os.path.join(self.shared, "d")
        os.symlink(self.dir, on_the_way)
        os.lchown(on_the_way, NOBODY, NOBODY)
        through = os.path.join(on_the_way, "secret")
        for args in (("record", "--pid", self.target.pid, "-d", 0.3, "-o", through),
                     ("report", self.raw, "-o", through)):
            result = harness.spyglass(*args)
            self.assertEqual(result.returncode, 1, result.stderr)
            self.assertEqual(result.stderr.count("\n"), 1, result.stderr)
            self.assertIn("%s is a symbolic link owned by nobody (uid %d) in the sticky "
                          "world-writable directory %s: not followed" % (on_the_way, NOBODY,
                                                                         self.shared),
                          result.stderr)
            with open(self.secret) as f:
                self.assertEqual(f.read(), SECRET)
        # A link of ours on the way is followed.
        ours = os.path.join(self.shared, "ours")
        os.symlink(self.dir, ours)
        result = harness.spyglass("report", self.raw, "-o", os.path.join(ours, "mine.txt"))
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertTrue(os.path.isfile(self.file("mine.txt")))

    def test_raw_recording_refuses_another_users_link(self):
        for link in (self.planted, self.dangling):
            result = harness.spyglass("record", "--pid", self.target.pid, "-d", 0.3, "-o",
                                      self.file("x.txt"), "--raw", link)
            self.assert_refused(result, link)
            self.assertFalse(os.path.exists(self.file("x.txt")))

    def test_report_and_diff_refuse_another_users_link(self):
        for link in (self.planted, self.dangling):
            self.assert_refused(harness.spyglass("report", self.raw, "-o", link), link)
            self.assert_refused(harness.spyglass("diff", self.raw, self.raw, "-o", link), link)

    def test_window_files_refuse_another_users_links(self):
        # A link planted at the name of every window of the next minute (local time, as the
        # pattern is filled in).
        pattern = os.path.join(self.shared, "w-%Y%m%d-%H%M%S.txt")
        now = int(time.time())
        links = set()
        for second in range(now - 2, now + 60):
            link = time.strftime(pattern, time.localtime(second))
            if link not in links:
                os.symlink(self.secret, link)
                os.lchown(link, NOBODY, NOBODY)
                links.add(link)
        result = harness.spyglass("record", "--pid", self.target.pid, "-d", 1.5, "--window", 1,
                                  "-o", pattern)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("is a symbolic link owned by nobody (uid %d) in the sticky world-writable "
                      "directory %s: not followed" % (NOBODY, self.shared), result.stderr)
        self.assertIn("wrote 0 window files", result.stderr)
        for link in links:
            self.assertTrue(os.path.islink(link), link)
        with open(self.secret) as f:
            self.assertEqual(f.read(), SECRET)

    def test_a_link_of_ours_there_is_followed(self):
        mine = os.path.join(self.shared, "mine.txt")
        os.symlink(self.file("mine-target.txt"), mine)
        for args in (("record", "--pid", self.target.pid, "-d", 0.3, "-o", mine),
                     ("report", self.raw, "-o", mine),
                     ("diff", self.raw, self.raw, "-o", mine)):
            if os.path.exists(self.file("mine-target.txt")):
                os.unlink(self.file("mine-target.txt"))
            result = harness.spyglass(*args)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertTrue(os.path.islink(mine), args[0])
            self.assertGreater(os.path.getsize(self.file("mine-target.txt")), 0, args[0])

    def test_report_and_diff_write_a_character_device_in_place(self):
        device = self.file("null")
        os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # a /dev/null of our own
        for args in (("report", self.raw, "-o", device),
                     ("diff", self.raw, self.raw, "-o", device)):
            result = harness.spyglass(*args)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertTrue(stat.S_ISCHR(os.lstat(device).st_mode), args[0])
        # The real one only once our own stayed a device: a binary that replaces devices must
        # not get to break the host.
        for args in (("report", self.raw, "-o", "/dev/null"),
                     ("diff", self.raw, self.raw, "-o", "/dev/null")):
            result = harness.spyglass(*args)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertTrue(stat.S_ISCHR(os.lstat("/dev/null").st_mode), args[0])
        result = harness.spyglass("report", self.raw, "-o", "/dev/full")
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("/dev/full: No space left on device", result.stderr)
        self.assertTrue(stat.S_ISCHR(os.lstat("/dev/full").st_mode))

    def read_fifo_while(self, reader, process):
        """What comes down the FIFO until its writer closes it (or spyglass exits without)."""
        data = b""
        while True:
            ready, _, _ = select.select([reader], [], [], 0.1)
            if ready:
                chunk = os.read(reader, 65536)
                data += chunk
                if chunk:
                    continue
            if ready or process.poll() is not None:
                process.wait(timeout=60)
                return data

    def test_report_and_diff_write_a_fifo_in_place(self):
        fifo = self.file("fifo")
        os.mkfifo(fifo)
        for args, end in ((("report", self.raw, "-o", fifo), b"\n"),
                          (("diff", self.raw, self.raw, "-o", fifo), b"</svg>\n")):
            reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
            try:
                process = subprocess.Popen([harness.SPYGLASS] + [str(a) for a in args],
                                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
                data = self.read_fifo_while(reader, process)
                err = process.stderr.read().decode()
                process.stderr.close()
            finally:
                os.close(reader)
            self.assertEqual(process.returncode, 0, err)
            self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode), args[0])
            self.assertTrue(data.endswith(end) and len(data) > 10, data[-200:])
        # Nobody reading: said, and the FIFO stays.
        result = harness.spyglass("report", self.raw, "-o", fifo)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn("no reader on FIFO %s" % fifo, result.stderr)
        self.assertTrue(stat.S_ISFIFO(os.lstat(fifo).st_mode))

    def test_sigusr1_writes_a_character_device_in_place(self):
        device = self.file("null")
        os.mknod(device, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
        process = subprocess.Popen([harness.SPYGLASS, "record", "--pid", str(self.target.pid),
                                    "-o", device, "--hideprogress"], stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 30
            while not catches_sigusr1(process.pid):
                self.assertIsNone(process.poll(), "spyglass exited before recording")
                self.assertLess(time.monotonic(), deadline, "no SIGUSR1 handler")
                time.sleep(0.02)
            process.send_signal(signal.SIGUSR1)
            line = harness.read_line(process.stderr.fileno(), 30, process)
            self.assertIn("SIGUSR1: wrote the recording so far", line)
            self.assertTrue(stat.S_ISCHR(os.lstat(device).st_mode))
            process.send_signal(signal.SIGINT)
            code, _, err = faults.finish(process)
        finally:
            if process.poll() is None:
                process.kill()
                process.communicate()
        self.assertEqual(code, 0, err)
        self.assertTrue(stat.S_ISCHR(os.lstat(device).st_mode))
        self.assertEqual(sorted(os.listdir(self.dir)), ["null", "secret", "shared"])

    def test_planted_temporary_names_neither_block_nor_redirect(self):
        # spyglass's PID is known before it runs: the shell that execs it waits for a line.
        out = self.file("out.txt")
        victim = self.file("victim")
        process = subprocess.Popen(["sh", "-c", 'read go && exec "$0" "$@"', harness.SPYGLASS,
                                    "report", self.raw, "-o", out], stdin=subprocess.PIPE,
                                   stderr=subprocess.PIPE, encoding="utf-8")
        pid = process.pid
        planted = {".out.txt.tmp-%d-0" % pid: None, ".out.txt.spyglass-%d.tmp" % pid: None}
        for n in range(1, 4):
            planted[".out.txt.tmp-%d-%d" % (pid, n)] = victim
        for name, link_to in planted.items():
            if link_to:
                os.symlink(link_to, self.file(name))
            else:
                with open(self.file(name), "w") as f:
                    f.write("planted")
        _, err = process.communicate("go\n", timeout=60)
        self.assertEqual(process.returncode, 0, err)
        self.assertGreater(os.path.getsize(out), 0)
        self.assertFalse(os.path.lexists(victim))
        for name, link_to in planted.items():
            if link_to:
                self.assertEqual(os.readlink(self.file(name)), link_to)
            else:
                with open(self.file(name)) as f:
                    self.assertEqual(f.read(), "planted")


if __name__ == "__main__":
    unittest.main()
