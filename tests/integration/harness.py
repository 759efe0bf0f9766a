"""Shared pieces of the integration tests: the interpreters to test, launching a target with a
readiness pipe, and running spyglass with a timeout.

Every interpreter the project supports is listed in EXPECTED; one that is not installed here
makes its tests skip with the reason printed, never pass silently.
"""
import glob
import json
import os
import select
import signal
import subprocess
import sys
import time
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
WORKLOADS = os.path.join(ROOT, "tests", "workloads")
SPYGLASS = os.environ.get("SPYGLASS_BIN") or os.path.join(ROOT, "build", "spyglass")

# label -> how to find it: "X.Y" pyenv's, "debian-3.11" the system's /usr/bin/python3.11,
# "debian-sid-X.Y" Debian unstable's python3.X (another patch release of 3.13, and 3.14, 3.15),
# run inside the root scripts/debian-pythons makes (DEBIAN_SID below).
EXPECTED = ["2.7", "3.6", "3.7", "3.8", "3.9", "3.10", "3.11", "3.12", "3.13", "debian-3.11",
            "debian-sid-3.13", "debian-sid-3.14", "debian-sid-3.15"]
# Debian sid's -dbg builds (python3.Xd: Py_DEBUG, struct sizes differ from the release builds):
# test_dump runs on them, the other modules do not (CI time).
DEBUG_BUILDS = ["debian-sid-3.13d", "debian-sid-3.14d", "debian-sid-3.15d"]
TIMEOUT = 120

# Debian sid's interpreters run through scripts/debian-sid/python3.X: one process that enters a
# mount namespace, binds this repository, /tmp, /dev and /proc at the same paths inside the root,
# chroots and execs python, so the PID a test holds is Python's and the workloads' files and
# lines are the same as on the host.
DEBIAN_SID_ROOT = os.environ.get("SPYGLASS_DEBIAN_ROOT", "/var/cache/spyglass/debian-sid")
DEBIAN_SID = os.path.join(ROOT, "scripts", "debian-sid")


def pyenv_root():
    try:
        out = subprocess.run(["pyenv", "root"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             encoding="utf-8", timeout=30).stdout.strip()
        if out:
            return out
    except (OSError, subprocess.SubprocessError):
        pass
    return os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")


def find_interpreter(label):
    """(path, None) or (None, reason)."""
    if label.startswith("debian-sid-"):
        name = "python" + label[len("debian-sid-"):]
        if not os.path.exists(os.path.join(DEBIAN_SID_ROOT, ".spyglass-debian-pythons")):
            return None, "the Debian sid root %s is not made (scripts/debian-pythons says why)" % (
                DEBIAN_SID_ROOT)
        if not os.path.exists(os.path.join(DEBIAN_SID_ROOT, "usr", "bin", name)):
            return None, "%s is not installed in %s" % (name, DEBIAN_SID_ROOT)
        if os.geteuid() != 0:
            return None, "running %s inside %s needs root (a mount namespace)" % (
                name, DEBIAN_SID_ROOT)
        return os.path.join(DEBIAN_SID, name), None
    if label.startswith("debian-"):
        path = "/usr/bin/python" + label.split("-", 1)[1]
        if os.path.exists(path):
            return path, None
        return None, "%s is not installed" % path
    root = pyenv_root()
    for candidate in sorted(glob.glob(os.path.join(root, "versions", label + ".*", "bin",
                                                   "python" + label))):
        if os.access(candidate, os.X_OK):
            return candidate, None
    return None, "Python %s is not installed (no %s/versions/%s.*/bin/python%s)" % (
        label, root, label, label)


def selected_versions():
    """SPYGLASS_TEST_VERSIONS=3.8,3.12 restricts the per-version tests (scripts/test uses it for
    the slower ASan/UBSan runs); unset: every expected interpreter."""
    wanted = os.environ.get("SPYGLASS_TEST_VERSIONS", "").strip()
    if not wanted:
        return None
    labels = [w.strip() for w in wanted.split(",") if w.strip()]
    unknown = [w for w in labels if w not in EXPECTED + DEBUG_BUILDS]
    if unknown:
        raise ValueError("SPYGLASS_TEST_VERSIONS names unknown versions %s (known: %s)"
                         % (", ".join(unknown), ", ".join(EXPECTED + DEBUG_BUILDS)))
    return labels


def interpreter_tests(base, module_globals, labels=None):
    """Makes one TestCase class per expected interpreter (or per label of `labels`) from `base`
    (which has no test_ in its name), each with `python` and `label` set; missing ones skip
    with their reason, and so do versions left out by SPYGLASS_TEST_VERSIONS."""
    selected = selected_versions()
    for label in labels or EXPECTED:
        path, reason = find_interpreter(label)
        if selected is not None and label not in selected:
            path, reason = None, "not in SPYGLASS_TEST_VERSIONS=%s" % ",".join(selected)
        name = "%s_%s" % (base.__name__, label.replace(".", "_").replace("-", "_"))
        attrs = {"python": path, "label": label, "skip_reason": reason}
        module_globals[name] = type(name, (base, unittest.TestCase), attrs)


def host_path(python, path):
    """`path` as named by `python` (inside the Debian sid root for its interpreters), as seen
    from here."""
    if os.path.dirname(python) == DEBIAN_SID:
        return DEBIAN_SID_ROOT + path
    return path


def any_interpreter():
    """An installed interpreter, the newest first (those of the host before Debian sid's), for
    tests that need one, not each."""
    host = [label for label in EXPECTED if not label.startswith("debian-sid-")]
    sid = [label for label in EXPECTED if label.startswith("debian-sid-")]
    for label in host[::-1] + sid[::-1]:
        path, _ = find_interpreter(label)
        if path:
            return path
    raise AssertionError("no Python interpreter of %s is installed" % ", ".join(EXPECTED))


class InterpreterCase(object):
    python = None
    label = None
    skip_reason = None

    @classmethod
    def setUpClass(cls):
        if cls.python is None:
            sys.stderr.write("SKIP %s: %s\n" % (cls.__name__, cls.skip_reason))
            raise unittest.SkipTest(cls.skip_reason)

    def version(self):
        out = subprocess.run([self.python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                             stdout=subprocess.PIPE, encoding="utf-8", timeout=TIMEOUT)
        return tuple(int(x) for x in out.stdout.strip().split("."))


class Target(object):
    """Runs `python workload fd [args]` and waits until it writes a line to the pipe fd.

    with Target(python, "dump_target.py") as target:
        target.pid, target.report (the parsed JSON line)
    """

    def __init__(self, python, workload, *args, **kwargs):
        self.argv = [python, os.path.join(WORKLOADS, workload)]
        self.args = [str(a) for a in args]
        self.env = kwargs.get("env")
        self.ready_timeout = kwargs.get("ready_timeout", 60)
        self.process = None
        self.report = None  # the readiness line: parsed if it is JSON

    def __enter__(self):
        read_fd, write_fd = os.pipe()
        self.process = subprocess.Popen(self.argv + [str(write_fd)] + self.args,
                                        pass_fds=(write_fd,), env=self.env)
        os.close(write_fd)
        self._read_fd = read_fd
        try:
            line = read_line(read_fd, self.ready_timeout, self.process)
            self.report = json.loads(line) if line.startswith("{") else line.strip()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    @property
    def pid(self):
        return self.process.pid

    def read_line(self, timeout=60):
        return read_line(self._read_fd, timeout, self.process)

    def __exit__(self, *exc):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait(timeout=TIMEOUT)
        os.close(self._read_fd)
        return False


def read_line(fd, timeout, process=None):
    """Reads one line from fd, failing (not hanging) if nothing comes within `timeout`."""
    data = b""
    deadline = time.monotonic() + timeout
    while not data.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError("target did not signal readiness within %ds" % timeout)
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            code = process.poll() if process else None
            raise AssertionError("target closed its pipe before it was ready (exit %s)" % code)
        data += chunk
    return data.decode("utf-8")


def spyglass(*args, **kwargs):
    """Runs spyglass; returns the CompletedProcess (text mode)."""
    timeout = kwargs.pop("timeout", TIMEOUT)
    return subprocess.run([SPYGLASS] + [str(a) for a in args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, encoding="utf-8", timeout=timeout,
                          **kwargs)


def catches_signal(pid, signum):
    """Whether process pid has a handler installed for signum (SigCgt in its status)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("SigCgt:"):
                return bool(int(line.split()[1], 16) & (1 << (signum - 1)))
    return False


def task_states(pid):
    """{tid: state letter} from /proc."""
    states = {}
    for entry in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/stat" % (pid, entry)) as f:
                text = f.read()
            states[int(entry)] = text[text.rindex(")") + 2]
        except OSError:
            pass
    return states
