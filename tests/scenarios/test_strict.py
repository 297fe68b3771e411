"""Strict to the last detail: the small edges an attacker, an operator or a
packager finds. The client's door (an HTTP/0.9 request line, invalid
percent-encoding, a 413 while the client still uploads), the upstream's
responses (a folded header line, a list in Age, a targeted cache-control
field that is not a Structured Field dictionary, 1xx interim responses),
Redis refusing the password, tags and Vary variants past their limits,
purges by URL and by prefix naming the same keys, and key_host without
hosts.
"""

import socket
import threading
import time

from harness import (HOST, expect, expect_eq, raw_exchange, scenario, slow, wait_for)

H = f"Host: {HOST}\r\n".encode()


# -- the client's door ------------------------------------------------------------------

@scenario
def http09_request_line_is_answered_505_at_once_and_closed(env):
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin)
    # An HTTP/0.9 client sends "GET /path" and its CRLF, then waits: there
    # is no version, no header and no empty line to come.
    r = raw_exchange(corral.host, corral.port, b"GET /old\r\n", timeout=slow(5))
    expect_eq((r.status, r.complete, r.end), (505, True, "eof"),
              f"an HTTP/0.9 request line: answered and closed at once ({r})")
    # A request line that is not even that is a 400, also at once.
    r = raw_exchange(corral.host, corral.port, b"GET/old\r\n", timeout=slow(5))
    expect_eq((r.status, r.end), (400, "eof"), f"a request line without a target ({r})")
    expect_eq(origin.count(), 0, "requests the origin saw")


@scenario
def invalid_percent_encoding_is_refused_not_merged_with_its_escape(env):
    redis, origin = env.redis(), env.origin()
    origin.script("*", body="path={path}")
    corral = env.corral(redis, origin)
    for target in (b"/p%zz", b"/p%2", b"/p%", b"/p?q=%zz", b"/p?q=100%", b"/%g0/x"):
        r = raw_exchange(corral.host, corral.port,
                         b"GET " + target + b" HTTP/1.1\r\n" + H + b"\r\n", timeout=10)
        expect_eq((r.status, r.end), (400, "eof"), f"GET {target.decode()}: refused ({r})")
    expect_eq(origin.count(), 0, "the origin saw none of them")
    # The escaped '%' is a valid target of its own: fetched, and keyed apart.
    r = corral.get("/p%25zz")
    expect_eq((r.status, r.text), (200, "path=/p%25zz"), "GET /p%25zz")
    expect_eq(origin.count("/p%25zz"), 1, "fetched once")


def upload_past_the_limit(corral, length, piece=64 * 1024):
    """Sends a head announcing length bytes, then all of them without reading;
    then reads the answer. Returns (status or None, how it ended)."""
    head = (f"POST /upload HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: {length}\r\n"
            f"Content-Type: application/octet-stream\r\n\r\n").encode()
    data = b""
    with socket.create_connection((corral.host, corral.port), slow(10)) as s:
        s.settimeout(slow(10))
        try:
            s.sendall(head)
            chunk = b"x" * piece
            for _ in range(length // piece):
                s.sendall(chunk)
        except (BrokenPipeError, ConnectionResetError) as e:
            return None, f"send failed: {e!r}"
        try:
            while True:
                got = s.recv(65536)
                if not got:
                    break
                data += got
        except ConnectionResetError:
            return None, f"reset after {len(data)} bytes: {data[:60]!r}"
    line = data.split(b"\r\n", 1)[0]
    return (int(line.split()[1]) if line.startswith(b"HTTP/1.1 ") else None), "eof"


@scenario
def client_uploading_past_max_body_bytes_reads_the_413(env):
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, extra={"server": {"max_body_bytes": "64k"}})
    # 4 MiB announced and sent while Corral answers 413 at the head: Corral
    # reads and drops what follows (a bounded amount) before it closes, so
    # the client's upload ends and it reads the 413 instead of a reset.
    for i in range(3):
        status, end = upload_past_the_limit(corral, 4 << 20)
        expect_eq((status, end), (413, "eof"), f"upload {i + 1}: the answer the client read")
    expect_eq(origin.count(), 0, "nothing reached the origin")
    expect_eq(corral.counters()["rejected"], 3, "rejected")
