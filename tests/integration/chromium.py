"""Headless Chromium (Debian's `chromium`, installed by scripts/setup) driven over the DevTools
protocol on a pipe: open a file at a window size, wait until it is loaded and painted, run
JavaScript in it, take a screenshot. No network, a fresh profile each time.

    with Browser() as browser:
        page = browser.open("file:///tmp/x.svg", 1000, 600)   # page.load_seconds
        page.evaluate("document.title")
        png = page.screenshot()                              # PNG bytes
"""
import base64
import json
import os
import select
import shutil
import subprocess
import tempfile
import time

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars", "--mute-audio", "--remote-debugging-pipe"]
TIMEOUT = 120


def find_chromium():
    """The path of chromium, or None."""
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser(object):
    def __init__(self, executable=None):
        self.executable = executable or find_chromium()
        if self.executable is None:
            raise AssertionError("chromium is not installed (scripts/setup installs it)")
        self.profile = None
        self.process = None
        self._next_id = 0
        self._buffer = b""
        self._events = []

    def __enter__(self):
        self.profile = tempfile.mkdtemp(prefix="spyglass-chromium-")
        # Chromium reads commands from fd 3 and writes answers to fd 4: a shell puts the pipes
        # there just before it becomes chromium.
        commands_read, self._to_browser = os.pipe()
        self._from_browser, answers_write = os.pipe()
        try:
            self.process = subprocess.Popen(
                ["/bin/sh", "-c", 'exec "$@" 3<&%d 4>&%d' % (commands_read, answers_write), "sh",
                 self.executable] + FLAGS + ["--user-data-dir=" + self.profile, "about:blank"],
                pass_fds=(commands_read, answers_write), stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        finally:
            os.close(commands_read)
            os.close(answers_write)
        return self

    def __exit__(self, *exc):
        try:
            if self.process and self.process.poll() is None:
                try:
                    self.command("Browser.close", timeout=10)
                except (AssertionError, OSError):
                    pass
                try:
                    self.process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait(timeout=TIMEOUT)
        finally:
            os.close(self._to_browser)
            os.close(self._from_browser)
            shutil.rmtree(self.profile, ignore_errors=True)
        return False

    def _read_message(self, deadline):
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("chromium did not answer within the time limit")
            ready, _, _ = select.select([self._from_browser], [], [], left)
            if ready:
                chunk = os.read(self._from_browser, 1 << 20)
                if not chunk:
                    raise AssertionError("chromium exited (status %s)" % self.process.poll())
                self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message.decode("utf-8"))

    def command(self, method, params=None, session=None, timeout=TIMEOUT):
        self._next_id += 1
        request = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            request["sessionId"] = session
        os.write(self._to_browser, json.dumps(request).encode("utf-8") + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            message = self._read_message(deadline)
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise AssertionError("%s failed: %s" % (method, message["error"]))
                return message.get("result", {})
            self._events.append(message)

    def wait_event(self, method, session, timeout=TIMEOUT):
        deadline = time.monotonic() + timeout
        while True:
            for i, event in enumerate(self._events):
                if event.get("method") == method and event.get("sessionId") == session:
                    del self._events[i]
                    return event.get("params", {})
            self._events.append(self._read_message(deadline))

    def open(self, url, width, height):
        target = self.command("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.command("Target.attachToTarget",
                               {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session)
        self.command("Page.enable", session=session)
        self.command("Emulation.setDeviceMetricsOverride",
                     {"width": width, "height": height, "deviceScaleFactor": 1,
                      "mobile": False}, session=session)
        started = time.monotonic()
        self.command("Page.navigate", {"url": url}, session=session)
        self.wait_event("Page.loadEventFired", session)
        # Two animation frames after the load event: the script's layout has been painted.
        page.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
        page.load_seconds = time.monotonic() - started
        return page


class Page(object):
    def __init__(self, browser, session):
        self.browser = browser
        self.session = session
        self.load_seconds = None

    def evaluate(self, expression):
        result = self.browser.command("Runtime.evaluate",
                                      {"expression": expression, "awaitPromise": True,
                                       "returnByValue": True}, session=self.session)
        if "exceptionDetails" in result:
            raise AssertionError("JavaScript failed: %s" % result["exceptionDetails"])
        return result["result"].get("value")

    def resize(self, width, height):
        self.browser.command("Emulation.setDeviceMetricsOverride",
                             {"width": width, "height": height, "deviceScaleFactor": 1,
                              "mobile": False}, session=self.session)
        self.evaluate("new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")

    def screenshot(self):
        result = self.browser.command("Page.captureScreenshot", {"format": "png"},
                                      session=self.session)
        return base64.b64decode(result["data"])
