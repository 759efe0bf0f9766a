"""Files that are not what they claim (issue 9, items 1 and 2): a profile goes under its real
name only when complete; an old file is never damaged; what cannot be written is found before
attaching; a closed output pipe is one clear line, never a hang or a spew."""
import fcntl
import os
import signal
import subprocess
import sys
import termios
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import faults  # noqa: E402
from faults import harness  # noqa: E402

F_SETPIPE_SZ = 1031  # fcntl.F_SETPIPE_SZ on Python 3.10+
OLD = "an old profile that must survive\n" * 20


class NotPython(object):
    """A process that is not Python: an error about it means the output was not probed first."""

    def __enter__(self):
        self.process = subprocess.Popen(["sleep", "300"])
        return self.process.pid

    def __exit__(self, *exc):
        self.process.kill()
        self.process.wait()
        return False


class FilesTests(unittest.TestCase):
    def setUp(self):
        self.random, _ = faults.seeded_random(self.id())
        self.python = faults.any_python()

    def assert_old_or_absent(self, work, name, existed):
        if existed:
            with open(work.file(name)) as f:
                self.assertEqual(f.read(), OLD)
        else:
            self.assertFalse(os.path.exists(work.file(name)), work.entries())

    def test_sigkilled_spyglass_leaves_nothing_under_the_real_name(self):
        for existed in (False, True):
            with faults.Workdir() as work, harness.Target(self.python,
                                                          "record_target.py") as target:
                out = work.file("profile.svg")
                if existed:
                    with open(out, "w") as f:
                        f.write(OLD)
                recorder = faults.start_record("--pid", target.pid, "-o", out, "-r", 500)
                time.sleep(self.random.uniform(0.2, 1.0))
                recorder.kill()
                faults.finish(recorder)
                self.assert_old_or_absent(work, "profile.svg", existed)
                # At most the temporary file (documented), never a file under the real name.
                self.assertLessEqual(len(faults.temporaries(work.path)), 1, work.entries())
                self.assertFalse(faults.stopped_threads(target.pid))

    def test_two_stop_signals_abort_and_leave_nothing_half_written(self):
        # Both signals land together (spyglass is stopped while they are sent): the first
        # stops the recording, the second aborts it before anything is written.
        for existed in (False, True):
            with faults.Workdir() as work, harness.Target(self.python,
                                                          "record_target.py") as target:
                out = work.file("profile.txt")
                if existed:
                    with open(out, "w") as f:
                        f.write(OLD)
                recorder = faults.start_record("--pid", target.pid, "-o", out)
                time.sleep(self.random.uniform(0.3, 1.0))
                recorder.send_signal(signal.SIGSTOP)
                recorder.send_signal(signal.SIGINT)
                recorder.send_signal(signal.SIGTERM)
                recorder.send_signal(signal.SIGCONT)
                code, _, err = faults.finish(recorder)
                lines = err.strip().splitlines()
                self.assertEqual(len(lines), 1, err)
                self.assertRegex(lines[0], r"^spyglass: aborted by a second .*\((SIGINT|SIGTERM)\)")
                aborting = signal.SIGINT if "(SIGINT)" in lines[0] else signal.SIGTERM
                self.assertEqual(code, 128 + aborting, err)
                if existed:
                    self.assertIn("%s is unchanged" % out, lines[0])
                else:
                    self.assertIn("nothing was written to %s" % out, lines[0])
                self.assert_old_or_absent(work, "profile.txt", existed)
                self.assertEqual(faults.temporaries(work.path), [])
                self.assertFalse(faults.stopped_threads(target.pid))

    def stalled_fifo(self, work):
        """A FIFO with a reader that does not read, its pipe shrunk to one page."""
        path = work.file("profile.svg")
        os.mkfifo(path)
        reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        capacity = fcntl.fcntl(reader, F_SETPIPE_SZ, 4096)
        return path, reader, capacity

    def wait_until_full(self, reader, capacity, recorder):
        deadline = time.monotonic() + 30
        while True:
            queued = fcntl.ioctl(reader, termios.FIONREAD, b"\0\0\0\0")
            if int.from_bytes(queued, sys.byteorder) >= capacity:
                return
            self.assertIsNone(recorder.poll(), "spyglass exited before filling the FIFO")
            self.assertLess(time.monotonic(), deadline, "the FIFO never filled")
            time.sleep(0.01)

    def drain(self, reader):
        os.set_blocking(reader, True)
        data = b""
        while True:
            chunk = os.read(reader, 65536)
            if not chunk:
                return data
            data += chunk

    def test_ctrl_c_while_the_profile_goes_down_a_slow_pipe(self):
        # spyglass is blocked writing (the reader is slow). A first Ctrl-C then must not cut the
        # profile; a second one aborts, saying the profile is incomplete.
        for presses in (1, 2):
            with faults.Workdir() as work, harness.Target(self.python,
                                                          "record_target.py") as target:
                path, reader, capacity = self.stalled_fifo(work)
                try:
                    recorder = faults.start_record("--pid", target.pid, "-o", path, "-d", 0.5)
                    self.wait_until_full(reader, capacity, recorder)
                    recorder.send_signal(signal.SIGINT)
                    if presses == 2:
                        time.sleep(0.1)
                        recorder.send_signal(signal.SIGINT)
                    data = self.drain(reader)
                    code, _, err = faults.finish(recorder)
                finally:
                    os.close(reader)
                if presses == 1:
                    self.assertEqual(code, 0, err)
                    self.assertTrue(data.rstrip().endswith(b"</svg>"), data[-200:])
                else:
                    self.assertEqual(code, 130, err)
                    self.assertIn("aborted by a second Ctrl-C (SIGINT): the profile written to "
                                  "%s is incomplete" % path, err)

    def test_fifo_without_a_reader_is_said_before_attaching(self):
        with faults.Workdir() as work, NotPython() as pid:
            path = work.file("profile.txt")
            os.mkfifo(path)
            result = harness.spyglass("record", "--pid", pid, "-o", path, "-d", 1, timeout=10)
            self.assertEqual(result.returncode, 1, result.stderr)
            self.assertEqual(result.stderr.count("\n"), 1, result.stderr)
            self.assertIn("no reader on FIFO %s" % path, result.stderr)
            self.assertNotIn("not a Python process", result.stderr)

    def test_fifo_with_a_reader_gets_the_whole_profile(self):
        with faults.Workdir() as work, harness.Target(self.python, "record_target.py") as target:
            path = work.file("profile.txt")
            os.mkfifo(path)
            cat = subprocess.Popen(["cat", path], stdout=subprocess.PIPE)
            time.sleep(0.05)  # cat opens the FIFO; if it has not yet, spyglass says so
            result = harness.spyglass("record", "--pid", target.pid, "-o", path, "-d", 0.5)
            data, _ = cat.communicate(timeout=30)
            if "no reader on FIFO" in result.stderr:
                self.skipTest("cat had not opened the FIFO yet (slow machine)")
            self.assertEqual(result.returncode, 0, result.stderr)
            text = data.decode("utf-8")
            self.assertTrue(text.endswith("\n") and "busy_loop" in text, text[-200:])

    def test_dev_full_is_found_before_attaching(self):
        with NotPython() as pid:
            result = harness.spyglass("record", "--pid", pid, "-o", "/dev/full", "-d", 1,
                                      timeout=10)
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertEqual(result.stderr.strip(),
                         "spyglass: error: cannot write the output to /dev/full: No space left "
                         "on device")

    def test_symbolic_link_stays_a_link(self):
        with faults.Workdir() as work, harness.Target(self.python, "record_target.py") as target:
            with open(work.file("real.txt"), "w") as f:
                f.write(OLD)
            os.symlink("real.txt", work.file("link.txt"))
            result = harness.spyglass("record", "--pid", target.pid, "-o", work.file("link.txt"),
                                      "-d", 0.3)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertTrue(os.path.islink(work.file("link.txt")))
            faults.check_folded(self, work.file("real.txt"))
            self.assertEqual(work.entries(), ["link.txt", "real.txt"])

    def test_raw_recording_replaces_the_old_one_whole(self):
        with faults.Workdir() as work:
            raw = work.file("rec.sgr")
            with open(raw, "w") as f:
                f.write(OLD)
            # Attaching fails: the old recording stays, no temporary file is left.
            with NotPython() as pid:
                result = harness.spyglass("record", "--pid", pid, "-o", work.file("x.txt"),
                                          "--raw", raw, "-d", 1)
            self.assertEqual(result.returncode, 1, result.stderr)
            with open(raw) as f:
                self.assertEqual(f.read(), OLD)
            self.assertEqual(work.entries(), ["rec.sgr"])
            # A recording that completes takes the name.
            with harness.Target(self.python, "record_target.py") as target:
                result = harness.spyglass("record", "--pid", target.pid, "-o",
                                          work.file("x.txt"), "--raw", raw, "-d", 0.5)
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertEqual(work.entries(), ["rec.sgr", "x.txt"])
            report = harness.spyglass("report", raw, "-o", work.file("again.txt"))
            self.assertEqual(report.returncode, 0, report.stderr)
            self.assertNotIn("cut short", report.stderr)

    def test_full_disk_keeps_the_old_file(self):
        if os.geteuid() != 0:
            self.skipTest("needs root to mount a small tmpfs")
        with faults.Workdir() as work, harness.Target(self.python, "record_target.py") as target:
            mount = work.file("disk")
            os.mkdir(mount)
            done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "spyglass-full",
                                   mount], stderr=subprocess.PIPE, encoding="utf-8")
            if done.returncode != 0:
                os.rmdir(mount)
                self.skipTest("cannot mount a tmpfs here: %s" % done.stderr.strip())
            try:
                out = os.path.join(mount, "profile.svg")
                with open(out, "w") as f:
                    f.write(OLD)
                # No room at all: found before attaching (it says so at once).
                filler = os.path.join(mount, "filler")
                subprocess.run(["dd", "if=/dev/zero", "of=" + filler, "bs=4k", "count=64"],
                               stderr=subprocess.DEVNULL)
                result = harness.spyglass("record", "--pid", target.pid, "-o", out, "-d", 5,
                                          timeout=4)
                self.assertEqual(result.returncode, 1, result.stderr)
                self.assertEqual(result.stderr.strip(), "spyglass: error: cannot write the output "
                                 "to %s: No space left on device" % out)
                # Room for a few pages, not for the flame graph: found when writing it.
                os.truncate(filler, os.path.getsize(filler) - 8192)
                result = harness.spyglass("record", "--pid", target.pid, "-o", out, "-d", 0.5)
                self.assertEqual(result.returncode, 1, result.stderr)
                self.assertEqual(result.stderr.strip(), "spyglass: error: cannot write the "
                                 "profile to %s: No space left on device; %s is unchanged"
                                 % (out, out))
                with open(out) as f:
                    self.assertEqual(f.read(), OLD)
                self.assertEqual(sorted(os.listdir(mount)), ["filler", "profile.svg"])
                # A raw recording that fills the disk: the old one is unchanged, the partial
                # one is kept under its temporary name, readable up to its last whole block.
                raw = os.path.join(mount, "rec.sgr")
                with open(raw, "w") as f:
                    f.write(OLD)
                os.unlink(out)
                # Room for the first block of samples (about 7 KB for 2 threads at 1 kHz), not
                # for the second.
                disk = os.statvfs(mount)
                free = disk.f_bavail * disk.f_frsize
                os.truncate(filler, os.path.getsize(filler) + free - 12 * 1024)
                result = harness.spyglass("record", "--pid", target.pid, "-o",
                                          work.file("beside.txt"), "--raw", raw, "-r", 1000,
                                          "-d", 4)
                self.assertEqual(result.returncode, 1, result.stderr)
                partial = [n for n in os.listdir(mount) if n.startswith(".rec.sgr.spyglass-")]
                self.assertEqual(len(partial), 1, os.listdir(mount))
                self.assertIn("No space left on device; kept as %s" % os.path.join(
                    mount, partial[0]), result.stderr)
                self.assertIn("%s is unchanged" % raw, result.stderr)
                with open(raw) as f:
                    self.assertEqual(f.read(), OLD)
                report = harness.spyglass("report", os.path.join(mount, partial[0]), "-o",
                                          work.file("partial.txt"))
                self.assertEqual(report.returncode, 0, report.stderr)
                self.assertIn("was cut short", report.stderr)
                faults.check_folded(self, work.file("partial.txt"))
            finally:
                subprocess.run(["umount", mount])
                os.rmdir(mount)

    def closed_pipe(self):
        """A pipe whose reader is already gone: (write end)."""
        read_end, write_end = os.pipe()
        os.close(read_end)
        return write_end

    def test_closed_stdout_pipe(self):
        with harness.Target(self.python, "record_target.py") as target:
            # record -o -: one line that says the profile did not get through, exit 1.
            pipe = self.closed_pipe()
            recorder = faults.start_record("--pid", target.pid, "-o", "-", "-d", 0.5,
                                           stdout=pipe)
            os.close(pipe)
            code, _, err = faults.finish(recorder, timeout=30)
            self.assertEqual(code, 1, err)
            self.assertEqual(err, "spyglass: error: standard output was closed before the whole "
                             "profile was written\n")
            # dump: dies of SIGPIPE like cat, silently.
            pipe = self.closed_pipe()
            dump = subprocess.run([harness.SPYGLASS, "dump", "--pid", str(target.pid)],
                                  stdout=pipe, stderr=subprocess.PIPE, encoding="utf-8",
                                  timeout=30)
            os.close(pipe)
            self.assertEqual((dump.returncode, dump.stderr), (-signal.SIGPIPE, ""))
            # top: stops printing and exits 0.
            pipe = self.closed_pipe()
            top = subprocess.run([harness.SPYGLASS, "top", "--pid", str(target.pid), "-d", "3",
                                  "--delay", "0.2"], stdout=pipe, stderr=subprocess.PIPE,
                                 encoding="utf-8", timeout=30)
            os.close(pipe)
            self.assertEqual((top.returncode, top.stderr), (0, ""))
            # Through a shell, as users type it: no hang, nothing but the summary on stderr.
            for arguments, consumer in (("record -o - -d 0.5", "head -c 10"),
                                        ("dump", "head -1"), ("top -d 2 --delay 0.2", "head -1")):
                line = "set -o pipefail; %s %s --pid %d | %s" % (harness.SPYGLASS, arguments,
                                                                target.pid, consumer)
                shell = subprocess.run(["bash", "-c", line], stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, encoding="utf-8", timeout=30)
                self.assertEqual(shell.stdout.count("\n"), 0 if "-c 10" in consumer else 1)
                self.assertNotIn("Broken pipe", shell.stderr)
                if arguments.startswith("record") and shell.returncode == 1:
                    # head left after 10 bytes and before the profile's last write: said so.
                    self.assertTrue(shell.stderr.endswith(
                        "spyglass: error: standard output was closed before the whole profile "
                        "was written\n"), shell.stderr)
                    continue
                self.assertIn(shell.returncode, (0, 128 + signal.SIGPIPE), shell.stderr)
                self.assertNotIn("spyglass: error", shell.stderr)

if __name__ == "__main__":
    unittest.main()
