"""The client edge: requests another server could frame or route differently
are refused with a 4xx and their connection closed, before anything reaches
the origin (proxy/proxy_frame.c); bodies nobody asked for (a HEAD's) are
read and dropped; and the listener holds at most max_connections clients and
backs off, quietly, when accept() runs out of descriptors; the admin port
holds at most admin_max_connections, turning the rest away with a 503, so
that neither port can starve the other.
"""

import os
import socket
import time

from harness import (HOST, closed_by_server, expect, expect_eq, raw_exchange, scenario,
                     wait_for)

H = f"Host: {HOST}\r\n".encode()
SMUGGLED = b"GET /smuggled HTTP/1.1\r\n" + H + b"\r\n"


def expect_refused(corral, origin, data, status, what):
    """data, alone on a new connection, gets status, whole, with Connection:
    close, and the connection is closed; the origin sees nothing."""
    r = raw_exchange(corral.host, corral.port, data, timeout=10)
    expect_eq((r.status, r.complete), (status, True), f"{what}: status, whole response ({r})")
    expect_eq(r.end, "eof", f"{what}: how corral ended the connection")
    expect_eq(r.headers.get("connection", "").lower(), "close", f"{what}: Connection")
    expect_eq(origin.count(), 0, f"{what}: requests the origin saw ({origin.stats()['paths']})")
    return r


def replies(data):
    """The status lines in a raw stream of responses."""
    return [line for line in data.split(b"\r\n") if line.startswith(b"HTTP/1.1 ")]


@scenario
def transfer_encoding_with_space_before_colon_and_a_length_is_refused(env):
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin)
    body = b"0\r\n\r\n" + SMUGGLED
    expect_refused(corral, origin, b"POST /te HTTP/1.1\r\n" + H + b"Transfer-Encoding : chunked"
                   b"\r\nContent-Length: %d\r\n\r\n" % len(body) + body, 400,
                   "Transfer-Encoding : chunked with Content-Length")
    expect_eq(corral.counters()["rejected"], 1, "rejected")


@scenario
def content_length_with_space_before_colon_is_refused(env):
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin)
    expect_refused(corral, origin, b"POST /cl HTTP/1.1\r\n" + H +
                   b"Content-Length : 5\r\n\r\nhello", 400, "Content-Length : 5")


@scenario
def transfer_encoding_not_ending_in_chunked_is_refused(env):
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin)
    for coding in (b"xchunked", b"gzip", b"chunked, gzip"):
        expect_refused(corral, origin, b"POST /te HTTP/1.1\r\n" + H +
                       b"Transfer-Encoding: " + coding + b"\r\n\r\n" + SMUGGLED, 400,
                       f"Transfer-Encoding: {coding.decode()}")
    expect_refused(corral, origin, b"POST /te HTTP/1.1\r\n" + H +
                   b"Transfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501,
                   "a transfer coding besides chunked")
    expect_refused(corral, origin, b"POST /te HTTP/1.0\r\n" + H +
                   b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400,
                   "Transfer-Encoding in HTTP/1.0")


@scenario
def head_body_is_read_and_dropped_before_the_next_request(env):
    redis, origin = env.redis(), env.origin()
    origin.script("*", body="{path} #{n}")
    corral = env.corral(redis, origin)
    data = (b"HEAD /h HTTP/1.1\r\n" + H + b"Content-Length: %d\r\n\r\n" % len(SMUGGLED) +
            SMUGGLED + b"GET /next HTTP/1.1\r\n" + H + b"Connection: close\r\n\r\n")
    r = raw_exchange(corral.host, corral.port, data, timeout=10)
    expect_eq(len(replies(r.data)), 2, f"answers on the connection ({r.data!r})")
    expect_eq(r.end, "eof", "how corral ended the connection")
    expect(r.data.endswith(b"/next #1"), f"the second answer is /next's: {r.data!r}")
    expect_eq(sorted(origin.stats()["paths"]), ["/h", "/next"], "paths the origin saw")


@scenario
def chunk_extensions_are_accepted_and_the_body_reaches_the_origin(env):
    redis, origin = env.redis(), env.origin()
    origin.script("*", body="got {path}")
    corral = env.corral(redis, origin)
    data = (b"POST /upload HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n"
            b"Connection: close\r\n\r\n5;ext=1\r\nhello\r\n6;q=\"a b\";flag\r\n world\r\n"
            b"0\r\nTrailer-A: x\r\n\r\n")
    r = raw_exchange(corral.host, corral.port, data, timeout=10)
    expect_eq((r.status, r.body), (200, b"got /upload"), f"POST with chunk extensions ({r})")
    st = origin.path_stats("/upload")
    expect_eq(st["bodies"], [11], "body bytes the origin received")
    headers = {k.lower(): v for k, v in st["headers"].items()}
    expect_eq(headers.get("content-length"), "11", f"origin's request headers {headers}")
    expect("trailer-a" not in headers, f"the trailer was dropped: {headers}")


@scenario
def http11_without_host_or_with_two_is_refused(env):
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin)
    expect_refused(corral, origin, b"GET /a HTTP/1.1\r\n\r\n", 400, "HTTP/1.1 without Host")
    expect_refused(corral, origin, b"GET /a HTTP/1.1\r\n" + H + b"Host: other.test\r\n\r\n",
                   400, "two Host lines")
    expect_refused(corral, origin, b"GET /a HTTP/1.0\r\n" + H + H + b"\r\n", 400,
                   "two Host lines in HTTP/1.0")


@scenario
def control_bytes_in_the_target_are_refused_before_any_key_is_made(env):
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin)
    for target in (b"/a\rb", b"/a\tb", b"/a\x01b", b"/a\x7fb", b"/caf\xc3\xa9"):
        expect_refused(corral, origin, b"GET " + target + b" HTTP/1.1\r\n" + H + b"\r\n",
                       400, f"target {target!r}")
    expect_eq(redis.keys("*"), [], "keys in Redis (no entry, lock or backoff)")
    expect(corral.get("/fine").status == 200, "a good request afterwards")
    log = corral.log()
    expect("\r" not in log and "\x01" not in log and "\x7f" not in log,
           "the error log holds no raw control byte")


@scenario
def at_most_max_connections_clients_are_accepted(env):
    limit, clients = 50, 120
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, extra={"server": {"max_connections": str(limit)}})
    socks = [socket.create_connection((corral.host, corral.port), 10) for _ in range(clients)]
    seen = []

    def connections():
        seen.append(corral.stats()["connections"])
        return seen[-1]
    try:
        wait_for(lambda: connections() == limit, what=f"{limit} connections open")
        socks.pop().close()
        socks.pop(0).close()
        # A closed one is replaced from the backlog; the count never passes the limit.
        wait_for(lambda: "resumed accepting" in corral.log(), what="accepting to resume")
        wait_for(lambda: connections() == limit and
                 corral.log().count("stopped accepting") >= 2,
                 what="the limit to be reached again")
    finally:
        for s in socks:
            s.close()
    wait_for(lambda: connections() == 0, what="every connection to close")
    expect_eq(max(seen), limit, f"most connections seen at once ({len(seen)} samples)")
    expect_eq(corral.get("/after").status, 200, "a request once the clients left")


def cpu_seconds(pid):
    """utime + stime of a process, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def open_fds(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


@scenario
def descriptor_exhaustion_backs_off_quietly_and_recovers(env):
    nofile, clients, observe_s = 256, 400, 2.0
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, nofile=nofile)
    pid = corral.proc.pid
    expect_eq(corral.get("/before").status, 200, "a request before")
    socks = []
    started = time.monotonic()
    try:
        for _ in range(clients):
            socks.append(socket.create_connection((corral.host, corral.port), 10))
        wait_for(lambda: open_fds(pid) >= nofile - 1,
                 what=f"corral to hold all {nofile} descriptors")
        t0, cpu0 = time.monotonic(), cpu_seconds(pid)
        time.sleep(observe_s)	# a bounded observation window, not a wait for a condition
        cpu, wall = cpu_seconds(pid) - cpu0, time.monotonic() - t0
    finally:
        for s in socks:
            s.close()
    exhausted_s = time.monotonic() - started
    expect(cpu < 0.25 * wall, f"corral used {cpu:.2f} s of CPU in {wall:.2f} s while "
           "accept() failed")
    log = corral.log()
    lines = log.splitlines()
    expect(len(lines) < 50, f"error log lines: {len(lines)}; last: {lines[-3:]}")
    expect("accept: " in log, "the failing accepts are reported")
    reports = sum(1 for line in lines if "accept: " in line)
    expect(reports <= int(exhausted_s) + 2,	# one a second, and one at the start
           f"{reports} accept reports in {exhausted_s:.1f} s of failing accepts")
    r = wait_for(lambda: (lambda r: r if r.status == 200 else None)(corral.get("/after")),
                 what="a normal request to succeed once the clients left")
    expect_eq(r.status, 200, "a request after the clients left")


ADMIN_CAP = 64		# the default admin_max_connections



def admin_stats(corral):
    r = corral.admin("GET", "/stats")
    return r.json() if r.status == 200 else None


@scenario
def idle_admin_connections_are_capped_and_never_starve_the_public_port(env):
    # 400 idle connections to the admin port of a corral with 256
    # descriptors: before the cap they took every descriptor, and the
    # public port could accept no client.
    nofile, idle = 256, 400
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, nofile=nofile)
    socks, got, closed = [], {}, set()
    try:
        for _ in range(idle):
            socks.append(socket.create_connection((corral.admin_host, corral.admin_port), 10))
            socks[-1].setblocking(False)
        wait_for(lambda: closed_by_server(socks, got, closed) >= idle - ADMIN_CAP,
                 timeout=20, what=f"corral to turn away {idle - ADMIN_CAP} admin connections "
                 f"(so far {len(closed)})")
        expect_eq(len(closed), idle - ADMIN_CAP, "admin connections turned away")
        expect(all(got.get(s, b"").startswith(b"HTTP/1.1 503 ") for s in closed),
               f"each turned away with a 503: {set(got.get(s, b'')[:40] for s in closed)}")
        r = corral.get("/public", timeout=10)
        expect_eq(r.status, 200, f"the public port, with {ADMIN_CAP} idle admin connections open")
        r = corral.admin("GET", "/stats")
        expect_eq(r.status, 503, "one more admin connection, at the cap")
    finally:
        for s in socks:
            s.close()
    stats = wait_for(lambda: admin_stats(corral), what="the admin port once the idle ones left")
    expect_eq(stats["admin"]["refused"], idle - ADMIN_CAP + 1, "admin.refused in /stats")
    expect(stats["admin"]["connections"] >= 1, f"admin.connections counts this one: {stats}")
    expect_eq(stats["connections"], 0, "public connections: admin ones are not among them")
    metrics = corral.admin("GET", "/metrics").text
    expect(f"corral_admin_connections_refused_total {idle - ADMIN_CAP + 1}" in metrics,
           "corral_admin_connections_refused_total in /metrics")
    expect("admin_max_connections" in corral.log(), "the log names the limit")


@scenario
def a_full_public_port_leaves_the_admin_port_serving(env):
    limit = 3
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, extra={"server": {"max_connections": str(limit),
                                                         "admin_max_connections": "2"}})
    socks = [socket.create_connection((corral.host, corral.port), 10) for _ in range(limit + 5)]
    try:
        wait_for(lambda: corral.stats()["connections"] == limit, what=f"{limit} public "
                 "connections open")
        for i in range(10):
            expect_eq(corral.admin("GET", "/stats").status, 200,
                      f"/stats {i} with the public port full")
    finally:
        for s in socks:
            s.close()
    expect_eq(corral.get("/after").status, 200, "the public port once the clients left")


@scenario
def a_head_trickled_slower_than_client_timeout_is_cut(env):
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, extra={"server": {"client_timeout": "1s"}})
    head = b"GET /slow HTTP/1.1\r\n" + H + b"X-Pad: " + b"a" * 60 + b"\r\n\r\n"
    t0 = time.monotonic()
    with socket.create_connection((corral.host, corral.port), 10) as s:
        s.settimeout(0.1)
        end = None
        for byte in head:	# one byte every 0.1 s: 8 s for all of it
            try:
                s.sendall(bytes([byte]))
                end = s.recv(100)
                break		# closed (b"") or answered
            except socket.timeout:
                continue
            except (BrokenPipeError, ConnectionResetError):
                end = b""
                break
    took = time.monotonic() - t0
    expect_eq(end, b"", "corral closed the connection without an answer")
    expect(took < 4, f"closed after {took:.1f} s with client_timeout = 1s")
    expect_eq(origin.count(), 0, "requests the origin saw")


@scenario
def a_slow_chunked_body_is_not_cut_while_it_moves(env):
    redis, origin = env.redis(), env.origin()
    origin.script("*", body="got {path}")
    corral = env.corral(redis, origin, extra={"server": {"client_timeout": "2s"}})
    with socket.create_connection((corral.host, corral.port), 10) as s:
        s.sendall(b"POST /up HTTP/1.1\r\n" + H + b"Transfer-Encoding: chunked\r\n"
                  b"Connection: close\r\n\r\n")
        for _ in range(12):	# 3.6 s in all, never 2 s without a byte
            s.sendall(b"3\r\nabc\r\n")
            time.sleep(0.3)	# pacing the upload, not waiting for a condition
        s.sendall(b"0\r\n\r\n")
        s.settimeout(10)
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    expect(data.startswith(b"HTTP/1.1 200 ") and data.endswith(b"got /up"),
           f"answer to the slow upload: {data!r}")
    expect_eq(origin.path_stats("/up")["bodies"], [36], "body bytes the origin received")


@scenario
def a_refusal_is_counted_and_logged_without_the_clients_bytes(env):
    redis, origin = env.redis(), env.origin()
    access = os.path.join(env.workdir, "access.log")
    corral = env.corral(redis, origin, extra={"server": {"access_log": access}})
    expect_refused(corral, origin, b"GET /a\r\x1b[31mred HTTP/1.1\r\n" + H + b"\r\n", 400,
                   "an escape sequence in the target")
    c = corral.counters()
    expect_eq((c["requests"], c["rejected"]), (1, 1), "requests, rejected")
    lines = wait_for(lambda: open(access).read().splitlines(), what="an access-log line")
    expect_eq(len(lines), 1, f"access-log lines: {lines}")
    expect('"- - HTTP/1.1" 400 ' in lines[0] and " cache=error " in lines[0],
           f"the access-log line: {lines[0]!r}")
    log = corral.log()
    expect("rejected a request from 127.0.0.1: 400 control byte or space in the target" in log,
           "the error-log line names the rule")
    expect("\x1b" not in log + lines[0], "no raw control byte in either log")


@scenario
def clients_that_close_after_their_answer_leave_nothing_behind(env):
    # A hit is written to the socket at once. The connection's end must
    # still free both its buffers and its descriptor, whoever closes it:
    # Corral (Connection: close), or the client right after reading.
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}})
    expect_eq(corral.get("/c").status, 200, "cached")
    pid = corral.proc.pid
    fds = len(os.listdir(f"/proc/{pid}/fd"))
    for i in range(100):
        close = "Connection: close\r\n" if i % 2 else ""
        sock = socket.create_connection((corral.host, corral.port), timeout=10)
        sock.sendall(f"GET /c HTTP/1.1\r\nHost: {HOST}\r\n{close}\r\n".encode())
        data = b""
        while b"\r\n\r\n" not in data or not data.endswith(b"}"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            data += chunk
        expect(data.startswith(b"HTTP/1.1 200"), f"request {i}: {data[:40]!r}")
        sock.close()
    wait_for(lambda: corral.stats()["connections"] == 0, 10, "every connection closed")
    # Give or take the admin request's own and the idle upstream one.
    after = len(os.listdir(f"/proc/{pid}/fd"))
    expect(after <= fds + 2, f"{after} descriptors after 100 connections, {fds} before")
    noise = [l for l in corral.log().splitlines() if l.startswith("[")]
    expect_eq(noise, [], "the event library's own warnings in the log")


def read_until_closed(sock):
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk


@scenario
def a_hit_head_has_each_field_once_and_honours_connection_close(env):
    # A hit's head is the entry's rendering plus Cache-Status, Age and
    # Connection, written once by Corral's server. Each
    # field must come once, and a client's "close" must close.
    redis, origin = env.redis(), env.origin()
    origin.script("/h", headers={"Via": "1.0 upstream-cache", "Age": "5"})
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}})
    expect_eq(corral.get("/h").status, 200, "cached")
    for version, extra, closes in (("1.1", "Connection: close\r\n", True),
                                   ("1.1", "", False), ("1.0", "", True)):
        sock = socket.create_connection((corral.host, corral.port), timeout=10)
        sock.sendall(f"GET /h HTTP/{version}\r\nHost: {HOST}\r\n{extra}\r\n".encode())
        if closes:
            data = read_until_closed(sock)
        else:
            data = b""
            while b"\r\n\r\n" not in data:
                data += sock.recv(65536)
            head, _, rest = data.partition(b"\r\n\r\n")
            length = int([l for l in head.split(b"\r\n")
                          if l.lower().startswith(b"content-length:")][0].split(b":")[1])
            while len(rest) < length:
                rest += sock.recv(65536)
            data = head + b"\r\n\r\n" + rest
            sock.sendall(f"GET /h HTTP/1.1\r\nHost: {HOST}\r\n\r\n".encode())
            again = sock.recv(65536)
            expect(again.startswith(b"HTTP/1.1 200"), f"kept open for another: {again[:40]!r}")
        sock.close()
        head, _, body = data.partition(b"\r\n\r\n")
        lines = head.split(b"\r\n")
        names = [l.split(b":")[0].lower() for l in lines[1:]]
        what = f"HTTP/{version} {extra.strip() or 'keep-alive'}"
        expect(lines[0].startswith(f"HTTP/{version} 200".encode()), f"{what}: {lines[0]!r}")
        # Sized for every version: a stored body's length is known.
        once = (b"date", b"cache-status", b"age", b"via", b"content-length")
        for name in once:
            expect_eq(names.count(name), 1, f"{what}: {name.decode()} fields in {head!r}")
        expect(names.count(b"content-length") <= 1, f"{what}: one Content-Length at most")
        fields = {l.split(b":")[0].lower(): l.split(b":", 1)[1].strip() for l in lines[1:]}
        expect_eq(int(fields.get(b"content-length", len(body))), len(body),
                  f"{what}: the body's length")
        expect_eq(fields[b"via"], b"1.0 upstream-cache, 1.1 corral", f"{what}: Via")
        expect(int(fields[b"age"]) >= 5, f"{what}: Age counts the origin's 5 s")
        expect(b"hit" in fields[b"cache-status"], f"{what}: {fields[b'cache-status']!r}")
        if version == "1.1":
            expect_eq(fields.get(b"connection"), b"close" if closes else None,
                      f"{what}: Connection: close said when it closes")
            expect(names.count(b"connection") <= 1, f"{what}: one Connection at most")
