"""Corral's own HTTP server (proxy/proxy_conn.c, proxy/proxy_conn_reply.c)
from a client's side: Expect: 100-continue answered before the body is
read, any other expectation refused with 417; HTTP/1.0's keep-alive and
HTTP/1.1's close, as tokens of a list; a body of unknown length chunked to
an HTTP/1.1 client and ended by the close for an HTTP/1.0 one; a HEAD that
never carries a body, even while the GET's body streams.
"""

import socket

from harness import HOST, expect, expect_eq, raw_exchange, scenario

H = f"Host: {HOST}\r\n".encode()
WAIT_S = 10	# for an answer that comes at once, or never


def connect(corral):
    sock = socket.create_connection((corral.host, corral.port), timeout=WAIT_S)
    sock.settimeout(WAIT_S)
    return sock


def read_head(sock, data=b""):
    """Reads up to the end of a head; (head lines, bytes after it)."""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head.split(b"\r\n"), rest


def fields(lines):
    return {l.split(b":")[0].lower(): l.split(b":", 1)[1].strip() for l in lines[1:]}


def read_sized(sock, lines, rest):
    """The body after a head with Content-Length; (body, bytes after it)."""
    length = int(fields(lines)[b"content-length"])
    while len(rest) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    return rest[:length], rest[length:]


def read_chunked(sock, rest):
    """A chunked body, decoded; (body, bytes after it)."""
    body = b""
    while True:
        while b"\r\n" not in rest:
            rest += sock.recv(65536)
        line, _, rest = rest.partition(b"\r\n")
        size = int(line.split(b";")[0], 16)
        while len(rest) < size + 2:
            rest += sock.recv(65536)
        expect_eq(rest[size:size + 2], b"\r\n", "a chunk ends in CRLF")
        body, rest = body + rest[:size], rest[size + 2:]
        if size == 0:
            return body, rest


def read_to_close(sock, rest):
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return rest
        rest += chunk


@scenario
def expect_100_continue_is_answered_before_the_body_and_other_expectations_get_417(env):
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin)
    # HTTP/1.1 with a body: the interim answer comes before a byte of it
    # is sent, then the request goes on as any other.
    sock = connect(corral)
    sock.sendall(b"POST /p HTTP/1.1\r\n" + H + b"Expect: 100-Continue\r\n"
                 b"Content-Length: 5\r\n\r\n")
    lines, rest = read_head(sock)
    expect_eq(lines[0], b"HTTP/1.1 100 Continue", "the interim answer, alone")
    expect_eq(rest, b"", "nothing after the interim answer before the body")
    sock.sendall(b"hello")
    lines, rest = read_head(sock, rest)
    expect(lines[0].startswith(b"HTTP/1.1 200"), f"the final answer: {lines[0]!r}")
    read_sized(sock, lines, rest)
    expect_eq(origin.path_stats("/p")["texts"][-1], "hello", "the body the origin got")
    # The next request on the same connection: no body, no interim answer.
    sock.sendall(b"POST /p HTTP/1.1\r\n" + H + b"Expect: 100-continue\r\n"
                 b"Content-Length: 0\r\n\r\n")
    lines, rest = read_head(sock)
    expect(lines[0].startswith(b"HTTP/1.1 200"), f"no 100 without a body: {lines[0]!r}")
    sock.close()
    # HTTP/1.0: no interim answer (RFC 9110 10.1.1); the body is read.
    sock = connect(corral)
    sock.sendall(b"POST /p HTTP/1.0\r\n" + H + b"Expect: 100-continue\r\n"
                 b"Content-Length: 3\r\n\r\nabc")
    data = read_to_close(sock, b"")
    expect(data.startswith(b"HTTP/1.0 200"), f"HTTP/1.0: the answer alone: {data[:40]!r}")
    expect_eq(origin.path_stats("/p")["texts"][-1], "abc", "HTTP/1.0's body")
    sock.close()
    before = origin.count()
    for value in (b"100-continue, x", b"200-ok", b"100-continues"):
        r = raw_exchange(corral.host, corral.port, b"POST /p HTTP/1.1\r\n" + H +
                         b"Expect: " + value + b"\r\nContent-Length: 1\r\n\r\nx",
                         timeout=WAIT_S)
        expect_eq((r.status, r.end), (417, "eof"), f"Expect: {value!r}")
    expect_eq(origin.count(), before, "a refused expectation reaches no origin")


@scenario
def keep_alive_and_close_are_tokens_of_the_connection_list(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/k", body="kept")
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}})
    # HTTP/1.0 asking to keep: said back, sized, and kept for another.
    sock = connect(corral)
    for i in range(2):
        sock.sendall(b"GET /k HTTP/1.0\r\n" + H + b"Connection: Keep-Alive\r\n\r\n")
        lines, rest = read_head(sock)
        expect(lines[0].startswith(b"HTTP/1.0 200"), f"HTTP/1.0 #{i}: {lines[0]!r}")
        expect_eq(fields(lines).get(b"connection", b"").lower(), b"keep-alive",
                  f"HTTP/1.0 #{i}: Connection")
        body, rest = read_sized(sock, lines, rest)
        expect_eq((body, rest), (b"kept", b""), f"HTTP/1.0 #{i}: body")
    sock.close()
    # HTTP/1.1: close anywhere in the list closes; another token keeps.
    for value, closes in ((b"foo, close", True), (b"CLOSE", True), (b"foo", False),
                          (b"closed", False)):
        sock = connect(corral)
        sock.sendall(b"GET /k HTTP/1.1\r\n" + H + b"Connection: " + value + b"\r\n\r\n")
        lines, rest = read_head(sock)
        body, rest = read_sized(sock, lines, rest)
        expect_eq(body, b"kept", f"Connection: {value!r}: body")
        said = fields(lines).get(b"connection", b"").lower()
        if closes:
            expect_eq(said, b"close", f"Connection: {value!r}: said")
            expect_eq(read_to_close(sock, rest), b"", f"Connection: {value!r}: closed")
        else:
            expect_eq(said, b"", f"Connection: {value!r}: nothing said")
            sock.sendall(b"GET /k HTTP/1.1\r\n" + H + b"\r\n")
            lines, _ = read_head(sock)
            expect(lines[0].startswith(b"HTTP/1.1 200"), f"Connection: {value!r}: kept")
        sock.close()


@scenario
def a_body_of_unknown_length_is_chunked_for_http11_and_ended_by_the_close_for_http10(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/u*", size=70000, no_length=True, pieces=4, interval_ms=50)
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}})
    want = origin.get("/u0").body
    # HTTP/1.1: chunked, then the connection serves another request.
    sock = connect(corral)
    sock.sendall(b"GET /u1 HTTP/1.1\r\n" + H + b"\r\n")
    lines, rest = read_head(sock)
    f = fields(lines)
    expect_eq((f.get(b"transfer-encoding"), f.get(b"content-length")), (b"chunked", None),
              f"HTTP/1.1, length unknown: framing in {lines!r}")
    body, rest = read_chunked(sock, rest)
    expect_eq((len(body), body == want, rest), (len(want), True, b""), "the body, whole")
    sock.sendall(b"GET /u1 HTTP/1.1\r\n" + H + b"\r\n")
    lines, rest = read_head(sock)
    body, _ = read_sized(sock, lines, rest)
    expect(body == want, "kept for another request: the stored copy, sized")
    sock.close()
    # HTTP/1.0: no chunked coding; the close ends the body.
    sock = connect(corral)
    sock.sendall(b"GET /u2 HTTP/1.0\r\n" + H + b"\r\n")
    lines, rest = read_head(sock)
    f = fields(lines)
    expect_eq(f.get(b"transfer-encoding"), None, "HTTP/1.0: never chunked")
    body = read_to_close(sock, rest)
    expect(body == want, f"HTTP/1.0: the body, whole ({len(body)} of {len(want)})")
    sock.close()


@scenario
def a_head_carries_no_body_even_while_the_get_streams(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/s", size=70000, pieces=4, interval_ms=50)
    origin.script("/n", size=70000, no_length=True, pieces=4, interval_ms=50)
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}})
    # A cold HEAD, then a GET pipelined behind it on the same connection:
    # the second answer's status line comes right after the first's head.
    sock = connect(corral)
    sock.sendall(b"HEAD /s HTTP/1.1\r\n" + H + b"\r\n" + b"GET /s HTTP/1.1\r\n" + H + b"\r\n")
    lines, rest = read_head(sock)
    expect(lines[0].startswith(b"HTTP/1.1 200"), f"HEAD: {lines[0]!r}")
    expect(fields(lines).get(b"content-length") in (None, b"70000"),
           f"HEAD: the GET's length or none: {lines!r}")
    lines, rest = read_head(sock, rest)
    expect(lines[0].startswith(b"HTTP/1.1 200"),
           f"the GET's answer follows the HEAD's head at once: {lines[0]!r}")
    body, rest = read_sized(sock, lines, rest)
    expect_eq((len(body), rest), (70000, b""), "the GET's body, and nothing more")
    # Of a body of unknown length: neither chunked nor a last chunk, and
    # the connection is kept (nothing to delimit).
    sock.sendall(b"HEAD /n HTTP/1.1\r\n" + H + b"\r\n" + b"GET /s HTTP/1.1\r\n" + H + b"\r\n")
    lines, rest = read_head(sock, rest)
    expect(lines[0].startswith(b"HTTP/1.1 200"), f"HEAD, length unknown: {lines[0]!r}")
    expect_eq(fields(lines).get(b"transfer-encoding"), None, "HEAD, length unknown: framing")
    expect(fields(lines).get(b"content-length") in (None, b"70000"),
           f"HEAD, length unknown: the GET's length or none: {lines!r}")
    lines, rest = read_head(sock, rest)
    expect(lines[0].startswith(b"HTTP/1.1 200"),
           f"the GET's answer follows the HEAD's head at once: {lines[0]!r}")
    body, rest = read_sized(sock, lines, rest)
    expect_eq((len(body), rest), (70000, b""), "the GET's body, and nothing more")
    sock.close()
    # The admin listener's answers are built whole: a HEAD gets the head
    # alone there too.
    admin = f"Host: 127.0.0.1:{corral.admin_port}\r\n".encode()
    sock = socket.create_connection((corral.admin_host, corral.admin_port), timeout=WAIT_S)
    sock.settimeout(WAIT_S)
    sock.sendall(b"HEAD /health HTTP/1.1\r\n" + admin + b"\r\n" +
                 b"GET /health HTTP/1.1\r\n" + admin + b"\r\n")
    lines, rest = read_head(sock)
    expect(lines[0].startswith(b"HTTP/1.1 200"), f"admin HEAD: {lines[0]!r}")
    length = fields(lines).get(b"content-length")
    lines, rest = read_head(sock, rest)
    expect(lines[0].startswith(b"HTTP/1.1 200"),
           f"admin: the GET's answer follows the HEAD's head at once: {lines[0]!r}")
    body, rest = read_sized(sock, lines, rest)
    expect(length in (None, str(len(body)).encode()),
           f"admin HEAD: the GET's Content-Length or none: {length!r}")
    sock.close()
