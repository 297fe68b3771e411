# SPDX-License-Identifier: MIT
"""A minimal RESP2 client for Redis: RespClient, RespError (an error reply)
and _decode (bulk strings to str).
"""

import socket
import threading


class RespError(Exception):
    """An error reply from Redis (-ERR ...)."""


class RespClient:
    """A minimal, thread-safe RESP2 client: one connection, one command at a time."""

    def __init__(self, host, port, timeout=5.0, auth=None):
        """auth: (user, password) sent with AUTH on each new connection."""
        self.host, self.port, self.timeout, self.auth = host, port, timeout, auth
        self.sock = None
        self.buf = b""
        self.lock = threading.Lock()

    def close(self):
        if self.sock:
            self.sock.close()
        self.sock, self.buf = None, b""

    @staticmethod
    def encode(args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            if isinstance(a, str):
                a = a.encode()
            elif not isinstance(a, (bytes, bytearray)):
                a = str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        return b"".join(out)

    def command(self, *args):
        """Sends one command; returns bytes/int/list/None; raises RespError."""
        with self.lock:
            if self.sock is None:
                self.sock = socket.create_connection((self.host, self.port), self.timeout)
                self.sock.settimeout(self.timeout)
                if self.auth:
                    self.sock.sendall(self.encode(["AUTH", *self.auth]))
                    self.read_reply()
            try:
                self.sock.sendall(self.encode(args))
                return self.read_reply()
            except RespError:
                raise
            except Exception:
                self.close()
                raise

    def read_line(self):
        while b"\r\n" not in self.buf:
            self.fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("redis closed the connection")
        self.buf += chunk

    def read_reply(self):
        line = self.read_line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest
        if kind == b"-":
            raise RespError(rest.decode(errors="replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self.fill()
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.read_reply() for _ in range(n)]
        raise ConnectionError(f"bad RESP reply line {line!r}")


def _decode(reply):
    if isinstance(reply, bytes):
        return reply.decode("utf-8", errors="surrogateescape")
    if isinstance(reply, list):
        return [_decode(r) for r in reply]
    return reply
