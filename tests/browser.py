# SPDX-License-Identifier: MIT
"""Headless Chromium for scenario tests, driven over the DevTools protocol
on a pipe (--remote-debugging-pipe): Python standard library only.

    with Browser(workdir) as b:
        b.open("http://127.0.0.1:8081/")
        b.wait_for_js("document.body.dataset.polls >= 3", timeout=20)
        b.screenshot(os.path.join(workdir, "dashboard.png"))

Chromium reads commands from its fd 3 and writes replies to its fd 4, each
a JSON message ended by a NUL byte. Every call here is bounded in time, and
the browser is always stopped on exit.
"""

import base64
import fcntl
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")
COMMAND_TIMEOUT_S = 30		# one DevTools command
START_TIMEOUT_S = 30		# until the browser answers its first command
STOP_TIMEOUT_S = 10

# The flags the issue names, plus what a container needs (no /dev/shm).
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--hide-scrollbars", "--mute-audio",
         "--remote-debugging-pipe")


def find_chromium():
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    raise AssertionError("chromium not found: scripts/install-deps test installs it "
                         "(Debian package chromium)")


def high_fd(fd):
    """fd moved to a descriptor number above 9 (fd is closed)."""
    high = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return high


class BrowserError(AssertionError):
    pass


class Browser:
    def __init__(self, workdir, width=1280, height=900):
        self.width, self.height = width, height
        self.profile = tempfile.mkdtemp(prefix="chromium-", dir=workdir)
        self.log_path = os.path.join(workdir, "chromium.log")
        self.next_id = 0
        self.replies = {}
        self.events = []
        self.cond = threading.Condition()
        self.session = None
        self.closed = False

        to_chrome_r, self.to_chrome = os.pipe()
        self.from_chrome, from_chrome_w = os.pipe()
        # Chromium's ends move above 9 first, so none of them is 3 or 4.
        to_chrome_r = high_fd(to_chrome_r)
        from_chrome_w = high_fd(from_chrome_w)
        args = [find_chromium(), *FLAGS, f"--user-data-dir={self.profile}",
                f"--window-size={width},{height}", "about:blank"]
        # bash (dash takes no fd above 9) puts the pipe ends where Chromium
        # expects them: 3 in, 4 out.
        script = f'exec "$0" "$@" 3<&{to_chrome_r} 4>&{from_chrome_w} ' \
                 f'{to_chrome_r}<&- {from_chrome_w}>&-'
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(["bash", "-c", script, *args],
                                         pass_fds=(to_chrome_r, from_chrome_w),
                                         stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self.reader = threading.Thread(target=self.read_loop, daemon=True)
        self.reader.start()
        try:
            self.attach()
        except BaseException:
            self.close()
            raise

    # -- the protocol --

    def read_loop(self):
        buf = b""
        while True:
            try:
                chunk = os.read(self.from_chrome, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                break
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                with self.cond:
                    if "id" in msg:
                        self.replies[msg["id"]] = msg
                    else:
                        self.events.append(msg)
                    self.cond.notify_all()
        with self.cond:
            self.closed = True
            self.cond.notify_all()

    def send(self, method, params=None, session=True, timeout=COMMAND_TIMEOUT_S):
        """Sends one command (to the page's session unless session=False);
        returns its result or raises BrowserError."""
        with self.cond:
            self.next_id += 1
            mid = self.next_id
        msg = {"id": mid, "method": method, "params": params or {}}
        if session and self.session:
            msg["sessionId"] = self.session
        data = json.dumps(msg).encode() + b"\0"
        try:
            while data:
                data = data[os.write(self.to_chrome, data):]
        except OSError as e:
            raise BrowserError(f"chromium closed its pipe ({method}): {e}\n{self.log_tail()}")
        deadline = time.monotonic() + timeout
        with self.cond:
            while mid not in self.replies:
                left = deadline - time.monotonic()
                if self.closed or left <= 0:
                    why = "exited" if self.closed else f"no reply within {timeout} s"
                    raise BrowserError(f"chromium {why} to {method}\n{self.log_tail()}")
                self.cond.wait(left)
            reply = self.replies.pop(mid)
        if "error" in reply:
            raise BrowserError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def attach(self):
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            targets = self.send("Target.getTargets", session=False)["targetInfos"]
            pages = [t for t in targets if t["type"] == "page"]
            if pages:
                break
            if time.monotonic() > deadline:
                raise BrowserError("chromium opened no page")
            time.sleep(0.05)
        self.session = self.send("Target.attachToTarget",
                                 {"targetId": pages[0]["targetId"], "flatten": True},
                                 session=False)["sessionId"]
        self.send("Page.enable")
        self.send("Runtime.enable")
        self.send("Network.enable")
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": self.width, "height": self.height,
                   "deviceScaleFactor": 1, "mobile": False})

    # -- what tests use --

    def open(self, url):
        result = self.send("Page.navigate", {"url": url})
        if result.get("errorText"):
            raise BrowserError(f"cannot open {url}: {result['errorText']}")

    def js(self, expression):
        """Evaluates expression in the page; returns its value (JSON-able)."""
        result = self.send("Runtime.evaluate", {"expression": expression,
                                                "returnByValue": True,
                                                "awaitPromise": True})
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait_for_js(self, expression, timeout=20, what=None, interval=0.1):
        """Polls expression until it is truthy; returns its value."""
        deadline = time.monotonic() + timeout
        last = None
        while True:
            try:
                last = self.js(expression)
                if last:
                    return last
            except BrowserError as e:
                last = e
            if time.monotonic() >= deadline:
                raise AssertionError(f"timed out waiting for {what or expression} "
                                     f"in the browser (last: {last!r})")
            time.sleep(interval)

    def screenshot(self, path, full_page=False):
        """A PNG of the viewport, or with full_page of the whole page (as
        wide as the viewport, as long as the page)."""
        params = {"format": "png"}
        if full_page:
            size = self.send("Page.getLayoutMetrics")["cssContentSize"]
            params.update(captureBeyondViewport=True, clip={
                "x": 0, "y": 0, "width": self.width,
                "height": max(self.height, int(size["height"])), "scale": 1})
        data = self.send("Page.captureScreenshot", params)["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        return path

    def requests_seen(self):
        """URLs of every request the page made (Network events)."""
        with self.cond:
            return [e["params"]["request"]["url"] for e in self.events
                    if e.get("method") == "Network.requestWillBeSent"]

    def log_tail(self, lines=20):
        try:
            with open(self.log_path, errors="replace") as f:
                return "\n".join(f.read().splitlines()[-lines:])
        except OSError:
            return ""

    def close(self):
        if self.proc.poll() is None:
            try:
                self.send("Browser.close", session=False, timeout=5)
            except BrowserError:
                pass
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.reader.join(STOP_TIMEOUT_S)
        for fd in (self.to_chrome, self.from_chrome):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
