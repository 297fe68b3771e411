# SPDX-License-Identifier: MIT
"""The scriptable origin: Origin runs tests/origin.py (the origin server
itself, run as a program) in a subprocess and drives its control API.
"""

import json
import os
import re
import subprocess
import sys

from .http import http_request
from .wait import START_TIMEOUT_S, STOP_TIMEOUT_S, read_text, tail, wait_for

TESTS_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ORIGIN_PY = os.path.join(TESTS_DIR, "origin.py")
WSGI_ORIGIN_PY = os.path.join(TESTS_DIR, "wsgi_origin.py")


class Origin:
    """tests/origin.py in a subprocess on a free port (or on port, e.g. to
    restart one that was stopped)."""

    def __init__(self, workdir, name="origin", delay=None, port=None, program=ORIGIN_PY):
        self.name = name
        self.log_path = os.path.join(workdir, f"{name}.log")
        cmd = [sys.executable, program, "--port", str(port or 0), "--host", "127.0.0.1"]
        if delay is not None:
            cmd += ["--delay", str(delay)]
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)
        try:
            m = wait_for(self.listening, timeout=START_TIMEOUT_S, what=f"{name} to listen")
        except BaseException:
            self.stop()
            raise
        self.host, self.port = m.group(1), int(m.group(2))
        self.url = f"http://{self.host}:{self.port}"

    def listening(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"{self.name} exited with {self.proc.returncode}:\n"
                                 f"{tail(self.log())}")
        return re.search(r"origin listening on (\S+):(\d+)", self.log())

    def control(self, method, what, payload=None):
        body = json.dumps(payload).encode() if payload is not None else None
        r = http_request(self.host, self.port, "/__origin/" + what, method=method,
                         body=body, headers={"Host": f"{self.host}:{self.port}",
                                             "Content-Type": "application/json"},
                         timeout=10)
        if r.status != 200:
            raise AssertionError(f"origin control {what}: {r.status} {r.text}")
        return r.json()

    def script(self, path="*", **kw):
        """e.g. script("/users/1", delay_ms=500, body="v{n}", hold=True)."""
        self.control("POST", "script", dict(kw, path=path))

    def release(self, path="*"):
        from urllib.parse import quote
        return self.control("POST", "release?path=" + quote(path, safe=""))["released"]

    def stats(self):
        return self.control("GET", "stats")

    def path_stats(self, path):
        """One path's stats, with zero values if it was never requested."""
        empty = {"count": 0, "methods": {}, "done_at": [], "held": 0,
                 "bodies": [], "headers": {}}
        return self.stats()["paths"].get(path, empty)

    def count(self, path=None):
        stats = self.stats()
        if path is None:
            return stats["total"]
        return stats["paths"].get(path, {}).get("count", 0)

    def held(self, path):
        return self.path_stats(path)["held"]

    def reset(self):
        self.control("POST", "reset")

    def get(self, path, headers=None, method="GET", body=None):
        return http_request(self.host, self.port, path, headers, method, body)

    def log(self):
        return read_text(self.log_path)

    def running(self):
        return self.proc.poll() is None

    def stop(self):
        if self.running():
            self.proc.terminate()
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    kill = stop


class WsgiOrigin(Origin):
    """tests/wsgi_origin.py: a real WSGI server (wsgiref), which reads a
    field spelled with '_' as the one spelled with '-'."""

    def __init__(self, workdir, name="wsgi"):
        super().__init__(workdir, name, program=WSGI_ORIGIN_PY)

    def count(self, path=None):
        from urllib.parse import quote
        r = http_request(self.host, self.port, "/__count?path=" + quote(path or "/", safe=""),
                         headers={"Host": f"{self.host}:{self.port}"}, timeout=10)
        return int(r.text)


def origin_max_active(origin, path):
    """The most requests of path the origin had in progress at once."""
    return origin.path_stats(path).get("max_active", 0)
