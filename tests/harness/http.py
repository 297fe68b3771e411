# SPDX-License-Identifier: MIT
"""HTTP clients: Headers, CacheStatus and Response, http_request (one request
on a fresh connection), and raw connections (raw_exchange, RawReply,
send_and_leave, get_request) for bytes no HTTP client would send.
"""

import http.client
import json
import re
import socket
import time

from .keys import HOST
from .wait import CLIENT_TIMEOUT_S


class Headers:
    """Response headers: ordered, case-insensitive look-ups."""

    def __init__(self, pairs):
        self.pairs = list(pairs)

    def get(self, name, default=None):
        values = self.get_all(name)
        return ", ".join(values) if values else default

    def get_all(self, name):
        name = name.lower()
        return [v for k, v in self.pairs if k.lower() == name]

    def __getitem__(self, name):
        value = self.get(name)
        if value is None:
            raise KeyError(name)
        return value

    def __contains__(self, name):
        return bool(self.get_all(name))

    def __repr__(self):
        return f"Headers({self.pairs!r})"


class CacheStatus:
    """A parsed RFC 9211 Cache-Status member for one cache, e.g.
    'corral; fwd=miss; fwd-status=200; stored'."""

    def __init__(self, raw):
        self.raw = raw or ""
        parts = [p.strip() for p in self.raw.split(";")]
        self.cache = parts[0] if parts else ""
        self.params = {}
        for p in parts[1:]:
            if not p:
                continue
            key, _, value = p.partition("=")
            self.params[key.strip().lower()] = value.strip().strip('"') if _ else True

    def __contains__(self, param):
        return param in self.params

    @property
    def hit(self):
        return self.params.get("hit") is True

    @property
    def ttl(self):
        v = self.params.get("ttl")
        return int(v) if isinstance(v, str) else None

    @property
    def stale(self):
        return self.hit and self.ttl is not None and self.ttl < 0

    @property
    def fwd(self):
        v = self.params.get("fwd")
        return v if isinstance(v, str) else None

    @property
    def fwd_status(self):
        v = self.params.get("fwd-status")
        return int(v) if isinstance(v, str) else None

    @property
    def stored(self):
        return self.params.get("stored") is True

    @property
    def collapsed(self):
        return self.params.get("collapsed") is True

    @property
    def detail(self):
        v = self.params.get("detail")
        return v if isinstance(v, str) else None

    def __repr__(self):
        return f"CacheStatus({self.raw!r})"


class Response:
    def __init__(self, status, headers, body, elapsed, t_done=None):
        self.status = status
        self.headers = headers
        self.body = body
        self.elapsed = elapsed
        self.t_done = t_done

    @property
    def text(self):
        return self.body.decode("utf-8", errors="replace")

    def json(self):
        return json.loads(self.body)

    @property
    def cache_status(self):
        """The Cache-Status member written by corral (empty if absent)."""
        for member in (self.headers.get("Cache-Status") or "").split(","):
            if member.strip().split(";")[0].strip() == "corral":
                return CacheStatus(member.strip())
        return CacheStatus("")

    def __repr__(self):
        return (f"Response({self.status}, cache_status={self.headers.get('Cache-Status')!r}, "
                f"body={self.body[:80]!r})")


def http_request(host, port, path, headers=None, method="GET", body=None,
                 timeout=CLIENT_TIMEOUT_S):
    """One request on a fresh connection; sends Host: HOST unless given."""
    headers = dict(headers or {})
    if not any(k.lower() == "host" for k in headers):
        headers["Host"] = HOST
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    t0 = time.monotonic()
    try:
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        return Response(resp.status, Headers(resp.getheaders()), data,
                        time.monotonic() - t0, time.time())
    finally:
        conn.close()


# -- raw connections ---------------------------------------------------------

class RawReply:
    """What one raw exchange read: the response (status, lower-cased header
    names, body) and how the connection ended: "eof" (the server closed it
    cleanly: recv returned b""), "reset" (ECONNRESET), "timeout" or "open"."""

    def __init__(self, data, end):
        self.data = data
        self.end = end
        self.status = None
        self.headers = {}
        self.body = b""
        self.complete = False	# a whole response, as its Content-Length says
        head, sep, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        m = re.match(r"HTTP/1\.[01] (\d{3})", lines[0]) if sep else None
        if m:
            self.status = int(m.group(1))
            for line in lines[1:]:
                name, _, value = line.partition(":")
                self.headers[name.strip().lower()] = value.strip()
            self.body = body
            length = self.headers.get("content-length")
            self.complete = length is not None and len(body) == int(length)

    @property
    def cache_status(self):
        return CacheStatus(self.headers.get("cache-status"))

    def __repr__(self):
        return f"RawReply(status={self.status}, end={self.end!r}, data={self.data[:120]!r})"


def raw_exchange(host, port, data, timeout=CLIENT_TIMEOUT_S):
    """Sends data (bytes, as is) on a new connection and reads until the
    server closes it or timeout seconds pass. Returns a RawReply."""
    chunks, end = [], "open"
    with socket.create_connection((host, port), timeout) as s:
        s.settimeout(timeout)
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass	# what was answered is read below
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                end = "reset"
                break
            except socket.timeout:
                end = "timeout"
                break
            if not chunk:
                end = "eof"
                break
            chunks.append(chunk)
    return RawReply(b"".join(chunks), end)


def read_head(stream):
    """A response head from a buffered binary stream (sock.makefile("rb")),
    whose body stays to be read: (status line, fields by lower-case
    name)."""
    status = stream.readline()
    fields = {}
    while (line := stream.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode("latin-1").partition(":")
        fields[name.strip().lower()] = value.strip()
    return status, fields


def send_and_leave(host, port, data):
    """Sends data on a new connection, then closes it without reading."""
    with socket.create_connection((host, port), CLIENT_TIMEOUT_S) as s:
        s.sendall(data)


def get_request(path, host=HOST, extra=b""):
    """The bytes of a plain GET, for raw sockets."""
    return (f"GET {path} HTTP/1.1\r\nHost: {host}\r\n".encode() + extra + b"\r\n")
