"""Strict to the last detail: the small edges an attacker, an operator or a
packager finds. The client's door (an HTTP/0.9 request line, invalid
percent-encoding, a 413 while the client still uploads), the upstream's
responses (a folded header line, a list in Age, a targeted cache-control
field that is not a Structured Field dictionary, 1xx interim responses),
Redis refusing the password, tags and Vary variants past their limits,
purges by URL and by prefix naming the same keys, and key_host without
hosts.
"""

import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from harness import (HOST, PREFIX, docs, expect, expect_eq, free_port, raw_exchange,
                     read_text, scenario, slow, wait_for)

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
def empty_lines_before_a_request_are_read_up_to_max_header_bytes(env):
    """RFC 9112 2.2: empty lines before a request line are ignored, at
    most max_header_bytes of them (1 KiB here; 16 KiB by default): one
    line more is a 400, never read on and on."""
    redis, origin = env.redis(), env.origin()
    origin.script("*", body="path={path}")
    small = env.corral(redis, origin, extra={"server": {"max_header_bytes": "1k"}})
    request = b"GET /e HTTP/1.1\r\n" + H + b"Connection: close\r\n\r\n"
    for lines, status in ((1, 200), (512, 200), (513, 400)):
        r = raw_exchange(small.host, small.port, b"\r\n" * lines + request, timeout=slow(10))
        expect_eq((r.status, r.end), (status, "eof"), f"{lines} empty lines first ({r})")
    default = env.corral(redis, origin)
    for lines, status in ((8192, 200), (8193, 400), (65536, 400)):
        r = raw_exchange(default.host, default.port, b"\r\n" * lines + request,
                         timeout=slow(10))
        expect_eq(r.status, status, f"{lines} empty lines first, by default ({r})")
    expect_eq(origin.count("/e"), 1, "the origin's requests (the first was stored)")


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


@scenario
def purge_ban_trace_and_unknown_methods_get_corrals_own_answer(env):
    redis, origin = env.redis(), env.origin()
    access = os.path.join(env.workdir, "access.log")
    corral = env.corral(redis, origin, extra={"server": {"access_log": access}})
    cases = [("PURGE", 405), ("BAN", 405), ("TRACE", 405), ("FROB", 501),
             ("purge", 501), ("CONNECT", 501)]
    for method, status in cases:
        target = b"127.0.0.1:80" if method == "CONNECT" else b"/a"
        r = raw_exchange(corral.host, corral.port,
                         method.encode() + b" " + target + b" HTTP/1.1\r\n" + H + b"\r\n",
                         timeout=10)
        expect_eq((r.status, r.end), (status, "eof"), f"{method}: answered and closed ({r})")
        expect_eq(r.cache_status.raw, "corral; detail=rejected", f"{method}: Cache-Status")
        expect_eq(r.headers.get("via"), "1.1 corral", f"{method}: Via")
        expect_eq(r.headers.get("content-type"), "text/plain", f"{method}: a plain-text body")
        if status == 405:
            expect_eq(r.headers.get("allow"), "GET, HEAD, POST, PUT, DELETE, OPTIONS, PATCH",
                      f"{method}: Allow")
        if method in ("PURGE", "BAN"):
            expect(b"POST /purge?url=" in r.body, f"{method}: where purges go: {r.body!r}")
    expect_eq(origin.count(), 0, "the origin saw none of them")
    lines = wait_for(lambda: len(read_text(access).splitlines()) == len(cases) and
                     read_text(access).splitlines(), what="an access-log line for each")
    expect_eq([re.search(r'" (\d{3}) ', line).group(1) for line in lines],
              [str(status) for _, status in cases], "the access log's statuses")
    expect_eq(corral.counters()["rejected"], len(cases), "counted as rejected")
    expect("rejected a request from 127.0.0.1: 405 purges go to the admin listener" in
           corral.log(), "the error log says where purges go")


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


def linger_bounds():
    """(bytes, ms, connections): proxy_linger.h's bounds on a lingering close."""
    text = read_text(os.path.join(ROOT, "proxy", "proxy_linger.h"))
    shift = re.search(r"#define LINGER_BYTES_MAX\s+\(\(size_t\)(\d+) << (\d+)\)", text)
    return (int(shift.group(1)) << int(shift.group(2)),
            int(re.search(r"#define LINGER_MS\s+(\d+)", text).group(1)),
            int(re.search(r"#define LINGER_MAX\s+(\d+)", text).group(1)))


def refused_at_the_head(corral, length):
    """A connection whose head announces length bytes, answered 413 and
    ended by Corral (EOF) before the client sent any of them."""
    s = socket.create_connection((corral.host, corral.port), slow(10))
    s.settimeout(slow(10))
    s.sendall(f"POST /upload HTTP/1.1\r\nHost: {HOST}\r\nContent-Length: {length}\r\n"
              f"\r\n".encode())
    data = b""
    while (got := s.recv(65536)):
        data += got
    expect(data.startswith(b"HTTP/1.1 413 "), f"413 at the head: {data[:80]!r}")
    return s


def send_refused(s, data):
    """Sends data on s: False once Corral has closed it (a reset)."""
    try:
        s.sendall(data)
        return True
    except (BrokenPipeError, ConnectionResetError):
        return False


@scenario(timeout=120)
def lingering_413_is_closed_once_its_drain_bound_is_reached(env):
    most_bytes, most_ms, _ = linger_bounds()
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, extra={"server": {"max_body_bytes": "64k"}})
    # Bytes: the client uploads as fast as it can; Corral drops what it
    # reads and closes once most_bytes are dropped, long before most_ms.
    s = refused_at_the_head(corral, 4 * most_bytes)
    chunk, sent, started = b"x" * 65536, 0, time.monotonic()
    with s:
        while sent < 4 * most_bytes and send_refused(s, chunk):
            sent += len(chunk)
    took = time.monotonic() - started
    expect(sent < 4 * most_bytes, f"the upload was cut: {sent} bytes sent")
    # What Corral dropped, then what the two sockets' buffers held.
    expect(most_bytes <= sent + len(chunk) and sent <= most_bytes + (16 << 20),
           f"cut once {most_bytes} bytes were dropped: {sent} bytes sent")
    expect(took < most_ms / 1000, f"by the bytes, not the time: after {took:.1f} s")
    # Time: a client that trickles is cut after most_ms.
    s = refused_at_the_head(corral, 4 * most_bytes)
    started = time.monotonic()
    with s:
        wait_for(lambda: not send_refused(s, b"x" * 1024), timeout=most_ms / 1000 + 5,
                 what="the trickling upload cut", interval=0.1)
    took = time.monotonic() - started
    expect(most_ms / 1000 - 0.5 <= took <= slow(most_ms / 1000 + 2),
           f"cut after {most_ms} ms: after {took:.1f} s")
    expect_eq(corral.counters()["rejected"], 2, "rejected")


@scenario(timeout=120)
def refused_connections_past_the_lingering_bound_are_closed_at_once(env):
    _, most_ms, most = linger_bounds()
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, extra={"server": {"max_body_bytes": "64k"}})
    started = time.monotonic()
    # Opened 16 at a time: one after another they could take longer than
    # the first ones linger on a busy machine.
    with ThreadPoolExecutor(16) as pool:
        lingering = list(pool.map(lambda _: refused_at_the_head(corral, 1 << 20),
                                  range(most)))
    one_more = refused_at_the_head(corral, 1 << 20)
    first_last = (lingering[0], lingering[-1])
    # Lingering, a connection takes what the client sends (read and
    # dropped); closed, the kernel answers it with a reset.
    expect(all(send_refused(s, b"x" * 1024) for s in first_last), "the first and last linger")
    with one_more:
        wait_for(lambda: not send_refused(one_more, b"x" * 1024), timeout=2,
                 what=f"connection {most + 1} closed at once", interval=0.05)
    expect(all(send_refused(s, b"x" * 1024) for s in first_last),
           "the first and last still linger")
    took = time.monotonic() - started
    expect(took < most_ms / 1000, f"all within {most_ms} ms, while the first ones linger: "
           f"{took:.1f} s")
    for s in lingering:
        s.close()
    expect_eq(corral.counters()["rejected"], most + 1, "rejected")


# -- the upstream's responses -----------------------------------------------------------

class RawOrigin:
    """An origin that answers each request with bytes of its own making:
    answer(path) -> bytes, sent as they are, then the connection closed.
    Counts the requests per path."""

    def __init__(self, answer):
        self.answer = answer
        self.counts = {}
        self.lock = threading.Lock()
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = "http://127.0.0.1:%d" % self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return	# stopped
            threading.Thread(target=self.one, args=(conn,), daemon=True).start()

    def one(self, conn):
        with conn:
            conn.settimeout(slow(10))
            data = b""
            try:
                while b"\r\n\r\n" not in data:
                    got = conn.recv(65536)
                    if not got:
                        return
                    data += got
                path = data.split(b" ", 2)[1].decode()
                with self.lock:
                    self.counts[path] = self.counts.get(path, 0) + 1
                conn.sendall(self.answer(path))
            except OSError:
                pass

    def count(self, path):
        with self.lock:
            return self.counts.get(path, 0)

    def stop(self):
        self.sock.close()


def raw_origin(env, answer):
    return env.track(RawOrigin(answer))


def response(status_line, headers, body):
    head = "".join(f"{line}\r\n" for line in headers)
    return (f"{status_line}\r\n{head}Content-Length: {len(body)}\r\n\r\n").encode() + body


@scenario
def folded_response_header_line_is_a_502_never_stored(env):
    redis = env.redis()
    origin = raw_origin(env, lambda path: response(
        "HTTP/1.1 200 OK", ["Cache-Control: max-age=60", "X-Folded: one", " two"], b"ok"))
    corral = env.corral(redis, origin.url)
    for i in range(2):
        r = corral.get("/folded")
        expect_eq(r.status, 502, f"request {i + 1}: a response with obs-fold ({r})")
    expect_eq(origin.count("/folded"), 2, "each request went to the origin: nothing stored")
    expect_eq(corral.stats()["upstream"]["bad_framing"], 2, "counted as a response refused")
    expect("obs-fold" in corral.log(), "the error log says why")


@scenario
def age_list_or_repeated_age_counts_its_first_value(env):
    redis, origin = env.redis(), env.origin()
    # max-age 3600 but 7200 s old already: stale on arrival, and with no
    # stale_while_revalidate and no validator, not worth storing.
    origin.script("/one-line", headers={"Cache-Control": "max-age=3600", "Age": "7200, 0"})
    origin.script("/two-lines", headers=[["Cache-Control", "max-age=3600"], ["Age", "7200"],
                                         ["Age", "0"]])
    origin.script("/fresh", headers={"Cache-Control": "max-age=3600", "Age": "10, 9000"})
    corral = env.corral(redis, origin, routes={"/": {
        "origin_cache_control": "on", "stale_while_revalidate": "0"}})
    for path in ("/one-line", "/two-lines", "/fresh"):
        corral.get(path)
        corral.get(path)
    expect_eq((origin.count("/one-line"), origin.count("/two-lines")), (2, 2),
              "origin fetches of a response whose first Age value says it is stale")
    expect_eq(origin.count("/fresh"), 1, "Age: 10, 9000 is 10 s old: still fresh, a hit")


@scenario
def targeted_cache_control_that_is_not_a_dictionary_falls_back_to_cache_control(env):
    redis, origin = env.redis(), env.origin()
    bad = {"/token": "&&&&", "/string": 'max-age="10000"', "/upper": "Max-Age=10000",
           "/trailing": "max-age=10000,", "/decimal-age": "max-age=10.5",
           "/escape-start": 'max-age=10000, x="\\a"', "/escape-end": 'max-age=10000, x="a\\b"',
           "/unclosed": 'max-age=10000, x="a\\"'}
    for path, value in bad.items():
        origin.script(path, headers={"CDN-Cache-Control": value, "Cache-Control": "no-store"})
    # Valid dictionaries still rule over Cache-Control.
    origin.script("/valid", headers={"CDN-Cache-Control": "max-age=600, stale-if-error=60;x=1",
                                     "Cache-Control": "no-store"})
    origin.script("/escaped", headers={"CDN-Cache-Control": 'max-age=600, x="\\"a\\\\"',
                                       "Cache-Control": "no-store"})
    origin.script("/route-field", headers=[
        ["Corral-Cache-Control", "&&&&"], ["CDN-Cache-Control", "max-age=600"],
        ["Cache-Control", "no-store"]])
    corral = env.corral(redis, origin, routes={"/": {
        "origin_cache_control": "on", "targeted_cache_control": "Corral-Cache-Control"}})
    for path in [*bad, "/valid", "/escaped", "/route-field"]:
        corral.get(path)
        corral.get(path)
    got = {path: origin.count(path) for path in bad}
    expect_eq(got, {path: 2 for path in bad},
              "origin fetches: an invalid CDN-Cache-Control is ignored, no-store rules")
    expect_eq(origin.count("/valid"), 1, "a valid CDN-Cache-Control: max-age=600 is a hit")
    expect_eq(origin.count("/escaped"), 1, "a string escaping '\"' and '\\': valid, a hit")
    expect_eq(origin.count("/route-field"), 1,
              "an invalid route field gives way to the next targeted field")


EARLY_HINTS = b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n"


@scenario
def interim_103_is_relayed_before_the_response_and_never_stored(env):
    redis = env.redis()
    final = response("HTTP/1.1 200 OK", ["Cache-Control: max-age=60"], b"ok")
    origin = raw_origin(env, lambda path: EARLY_HINTS + final)
    corral = env.corral(redis, origin.url, routes={"/": {"origin_cache_control": "on"}})

    def exchange(request):
        r = raw_exchange(corral.host, corral.port, request, timeout=slow(5))
        return r.data

    data = exchange(b"GET /hints HTTP/1.1\r\n" + H + b"Connection: close\r\n\r\n")
    expect(data.startswith(b"HTTP/1.1 103 Early Hints\r\n"), f"103 first: {data[:200]!r}")
    interim, _, rest = data.partition(b"\r\n\r\n")
    expect(b"\r\nLink: </style.css>; rel=preload" in interim, f"with its Link: {interim!r}")
    expect(rest.startswith(b"HTTP/1.1 200 OK\r\n") and rest.endswith(b"\r\n\r\nok"),
           f"then the response: {rest[:200]!r}")
    expect(b"link:" not in rest.lower(), f"the 103's fields are not the response's: {rest!r}")
    hit = exchange(b"GET /hints HTTP/1.1\r\n" + H + b"Connection: close\r\n\r\n")
    expect(hit.startswith(b"HTTP/1.1 200 OK\r\n") and b"link:" not in hit.lower(),
           f"a hit: the stored response has no 103 and no Link: {hit[:200]!r}")
    expect_eq(origin.count("/hints"), 1, "one fetch")
    # HTTP/1.0 clients get no 1xx (RFC 9110 15.2); a pass-through gets it.
    old = exchange(b"GET /old HTTP/1.0\r\n" + H + b"\r\n")
    expect(old.split(b"\r\n", 1)[0].endswith(b" 200 OK") and b" 103 " not in old,
           f"HTTP/1.0: no 103: {old[:200]!r}")
    post = exchange(b"POST /form HTTP/1.1\r\n" + H + b"Content-Length: 1\r\n"
                    b"Connection: close\r\n\r\nx")
    expect(post.startswith(b"HTTP/1.1 103 Early Hints\r\n") and b"HTTP/1.1 200 OK" in post,
           f"a POST gets the 103 too: {post[:200]!r}")


# -- Redis, tags, variants, purges, keys --------------------------------------------------

@scenario
def refused_redis_password_is_logged_once_not_once_per_script(env):
    redis, origin = env.redis(), env.origin()
    redis.cmd("CONFIG", "SET", "requirepass", "right")
    corral = env.corral(redis, origin, extra={"redis": {"password": "wrong"}},
                        wait_redis=False)
    wait_for(lambda: corral.stats()["redis"]["auth_failures"] >= 3, timeout=30,
             what="three refused connection attempts")
    lines = [l for l in corral.log().splitlines() if " redis: " in l and
             (" warn " in l or " error " in l)]
    scripts = [l for l in lines if "SCRIPT LOAD" in l]
    expect_eq(len(scripts), 0, f"SCRIPT LOAD warnings after a refused AUTH:\n" +
              "\n".join(scripts[:10]))
    refusals = [l for l in lines if "WRONGPASS" in l]
    expect_eq(len(refusals), 1, "the refusal, said once over three attempts:\n" +
              "\n".join(lines))
    expect("AUTH" in refusals[0] and "retrying" in refusals[0],
           f"and clearly: what was refused, and that it goes on trying: {refusals[0]}")
    expect_eq(len(lines), 1, "nothing else at warn or above:\n" + "\n".join(lines))
    # Accepted at last: it connects, and says so.
    redis.cmd("CONFIG", "SET", "requirepass", "wrong")
    wait_for(lambda: corral.stats()["redis"]["up"] is True, timeout=15,
             what="redis up once the password is accepted")


@scenario
def tags_past_the_limit_are_counted_and_logged(env):
    redis, origin = env.redis(), env.origin()
    keys = " ".join(f"t{i}" for i in range(40))
    origin.script("/many", headers={"Surrogate-Key": keys})
    origin.script("/long", headers={"Cache-Tag": "ok," + "x" * 200})
    corral = env.corral(redis, origin)
    corral.get("/many")
    corral.get("/long")
    wait_for(lambda: corral.counters()["stores"] == 2, what="both stored")
    expect_eq(corral.counters()["tags_dropped"], 8 + 1,
              "tags not filed: 8 past the 32nd, and one over 128 bytes")
    warned = [l for l in corral.log().splitlines() if "not filed" in l]
    expect_eq(len(warned), 1, "one line for both, within 10 s:\n" + "\n".join(warned))
    expect("8 tags" in warned[0] and "32" in warned[0], f"says how many and the limit: {warned}")
    # The first 32 were filed: a purge of the 32nd reaches it, the 33rd not.
    expect_eq(corral.purge(tag="t31", soft="0").json()["purged"], 1, "purge tag t31")
    corral.get("/many")
    expect_eq(corral.purge(tag="t32", soft="0").json()["purged"], 0, "purge tag t32")


@scenario
def tags_past_the_limit_in_a_burst_are_all_counted_and_logged_at_most_every_10_s(env):
    redis, origin = env.redis(), env.origin()
    origin.script("*", headers={"Surrogate-Key": " ".join(f"t{i}" for i in range(40))})
    corral = env.corral(redis, origin)
    started = time.monotonic()
    for i in range(50):
        expect_eq(corral.get(f"/burst/{i}").status, 200, f"GET /burst/{i}")
    wait_for(lambda: corral.counters()["stores"] == 50, what="the 50 responses stored")
    took = time.monotonic() - started
    expect_eq(corral.counters()["tags_dropped"], 50 * 8, "every tag past the 32nd counted")
    warned = [l for l in corral.log().splitlines() if "not filed" in l]
    expect(1 <= len(warned) <= 1 + int(took / 10),
           f"{len(warned)} lines in {took:.1f} s, at most one every 10 s:\n" +
           "\n".join(warned[:5]))


@scenario
def vary_variants_past_max_variants_are_not_stored_and_counted(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/v", headers={"Vary": "X-Lang"}, body="lang={h:X-Lang}")
    corral = env.corral(redis, origin, routes={"/": {"max_variants": "3"}})
    for lang in ("a", "b", "c", "d", "e"):
        r = corral.get("/v", headers={"X-Lang": lang})
        expect_eq((r.status, r.text), (200, f"lang={lang}"), f"X-Lang: {lang}")
    expect_eq(corral.counters()["variants_refused"], 2, "variants past 3 not stored")
    expect_eq(len(redis.cmd("SMEMBERS", PREFIX + "{" + HOST + "/v}:variants") or []), 3,
              "the key's variants in Redis")
    for lang in ("a", "e"):
        corral.get("/v", headers={"X-Lang": lang})
    expect_eq(origin.count("/v"), 6, "a stored variant is a hit; one refused is fetched again")
    expect("max_variants" in corral.log(), "the log names the limit")


@scenario
def purges_of_keys_with_one_vary_variant_count_each_key(env):
    redis, origin = env.redis(), env.origin()
    # Each key has its marker and one variant: a purge changes two entries
    # of it, and counts one key.
    for path in ("/u/one", "/p/1", "/p/2", "/t/1"):
        tag = "tag" + path.replace("/", "-")	# /t/1: tag-t-1
        origin.script(path, headers={"Vary": "X-Lang", "Surrogate-Key": tag},
                      body="{path} {h:X-Lang}")
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}})

    def fill(*paths):
        for p in paths:
            r = corral.get(p, headers={"X-Lang": "en"})
            expect_eq((r.status, r.text), (200, f"{p} en"), f"GET {p}")
        wait_for(lambda: all(len(redis.cmd("SMEMBERS", PREFIX + "{" + HOST + p +
                                           "}:variants") or []) == 1 for p in paths),
                 what=f"one variant stored for each of {paths}")

    def purged(**params):
        r = corral.purge(**params)
        expect_eq(r.status, 200, f"purge {params}: {r.text!r}")
        return r.json()["purged"]

    fill("/u/one")
    expect_eq(purged(url=f"http://{HOST}/u/one", soft="1"), 1, "a soft URL purge")
    expect_eq(purged(url=f"http://{HOST}/u/one", soft="0"), 1, "a URL purge")
    fill("/p/1", "/p/2")
    expect_eq(purged(prefix=f"{HOST}/p/", soft="1"), 2, "a soft prefix purge")
    expect_eq(purged(prefix=f"{HOST}/p/", soft="0"), 2, "a prefix purge")
    expect_eq(redis.entry_keys(), [], "the URL's and the prefix's keys are gone")
    # A variant files its tags under its own key: a tag purge takes the
    # variant, and leaves the marker for the next variant stored.
    fill("/t/1")
    expect_eq(purged(tag="tag-t-1", soft="1"), 1, "a soft tag purge")
    expect_eq(purged(tag="tag-t-1", soft="0"), 1, "a tag purge")
    expect_eq(redis.keys("*:entry:*"), [], "no variant left")
    expect_eq(corral.counters()["variants_refused"], 0, "no variant refused")


@scenario
def purge_by_prefix_names_the_host_as_purge_by_url_does(env):
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, routes={"/": {"key_host": "off"}})
    for p in ("/users/1", "/users/2", "/users/3"):
        corral.get(p)
    # The route is keyed on the upstream: a URL names its path only, and so
    # does a prefix with a host, whatever host it names.
    expect_eq(corral.purge(url="http://App.Example:80/users/1").json()["purged"], 1,
              "url= with a host")
    expect_eq(corral.purge(prefix="http://app.example/users/").json()["purged"], 2,
              "prefix= with a host, on the same route")
    expect_eq(corral.purge(prefix="/users/").json()["purged"], 0, "all gone")


@scenario
def key_host_without_hosts_is_warned_about(env):
    redis, origin = env.redis(), env.origin()
    text = (f"[server]\nlisten = 127.0.0.1:1\n[redis]\naddress = {redis.address}\n"
            f"[upstream]\nurl = {origin.url}\n[route /]\nkey_host = on\n"
            f"[route /api/]\nkey_host = off\n")
    path = env.config_file(text)
    p = env.run_corral("-t", "-c", path)
    expect_eq(p.stdout.strip(), "configuration OK", "a warning is no error")
    expect(f"{path}:7: warning: [route /] key_host is on and [server] hosts is empty"
           in p.stderr, f"corral -t warns, with file and line:\n{p.stderr}")
    expect("/api/" not in p.stderr, f"only for the route that keys on Host:\n{p.stderr}")
    ok = env.config_file(text.replace("[server]\n", "[server]\nhosts = app.test\n"), "ok.conf")
    expect_eq(env.run_corral("-t", "-c", ok).stderr, "", "no warning with hosts set")
    corral = env.corral(redis, origin, routes={"/": {"key_host": "on"}})
    expect("key_host is on and [server] hosts is empty" in corral.log(),
           "and the running corral logs it")
    # Every reload too: the file may have been changed since the start.
    corral.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: any("reload: " in l and "key_host is on and [server] hosts is empty" in l
                         for l in corral.log().splitlines()),
             what="the reload's warning")


# -- what the docs say, against what the code does ----------------------------------------

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESTART_MARK = "(restart)"


def restart_keys_of_help(text):
    """The "section.key" names corral -h marks as needing a restart."""
    keys = set()
    for line in text.splitlines():
        m = re.match(r"\[(server|redis|upstream|route) ?\S*\]\s+(\S+)\s", line)
        if m and RESTART_MARK in line:
            keys.add(f"{m.group(1)}.{m.group(2)}")
    return keys


def section_of(text, start, end):
    i = text.index(start)
    return text[i:text.index(end, i + len(start))]


@scenario(timeout=300, alone=True)
def docs_name_the_restart_keys_the_reload_keeps(env):
    help_keys = restart_keys_of_help(env.run_corral("-h").stdout)
    expect(len(help_keys) >= 10, f"corral -h marks the restart-only keys: {help_keys}")
    subprocess.run(["make", "--no-print-directory", "man"], cwd=ROOT, check=True,
                   capture_output=True, timeout=300)
    man5 = read_text(os.path.join(ROOT, "build", "man", "corral.conf.5"))
    man5_keys, section, key, lines = set(), None, None, man5.splitlines()
    for i, line in enumerate(lines):
        if line.startswith('.SS "['):
            section = re.match(r'\.SS "\[(\w+)', line).group(1)
        elif line == ".TP" and i + 1 < len(lines) and lines[i + 1].startswith(".B "):
            key = f"{section}.{lines[i + 1][3:].strip()}"
        elif "needs a restart" in line and key is not None:
            man5_keys.add(key)
    expect_eq(man5_keys, help_keys, "corral.conf(5) marks the same keys as corral -h")
    sighup = section_of(read_text(os.path.join(ROOT, "man", "corral.8.in")),
                        ".B SIGHUP", ".B SIGUSR1")
    man8_keys = set(re.findall(r"\b((?:server|redis|upstream)\.\w+)", sighup.replace("\\", "")))
    expect_eq(man8_keys, help_keys, "corral(8), SIGHUP, lists the same keys")
    ops = docs.doc(docs.OPERATIONS)
    listed = section_of(ops, "`restart_pending` names", "after a reload")
    expect_eq(set(re.findall(r"`((?:server|redis|upstream)\.\w+)`", listed)), help_keys,
              f"{docs.OPERATIONS} (/stats restart_pending) lists the same keys")
    code = section_of(read_text(os.path.join(ROOT, "conf", "conf_restart.c")),
                      "conf_restart_keys[", "};")
    code_keys = set(re.findall(r'"((?:server|redis|upstream)\.\w+)"', code))
    expect_eq(help_keys, code_keys, "corral -h marks the keys of conf_restart.c")
    row = next(l for l in ops.splitlines() if l.startswith("| `SIGHUP` |"))
    expect_eq(set(re.findall(r"`((?:server|redis|upstream)\.\w+)`", row)), code_keys,
              f"{docs.OPERATIONS} (Failure modes, SIGHUP) lists the keys of conf_restart.c:"
              f"\n{row}")

    # The code: a reload that changes every one of them keeps them all
    # pending, and changes log_level (not among them) at once.
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, extra={"server": {"log_level": "warn"}})
    corral.purge(url=f"http://{HOST}/before")
    text = read_text(corral.config_path)
    changed = {"listen": f"127.0.0.1:{free_port()}", "admin_listen": None,
               "workers": "2", "l1_max_bytes": "1m", "l2_max_bytes": "1m",
               "access_log": os.path.join(env.workdir, "a.log"),
               "error_log": os.path.join(env.workdir, "e.log"), "log_format": "json",
               "pid_file": os.path.join(env.workdir, "new.pid"),
               "log_level": "info"}
    lines, section = [], None
    for line in text.splitlines():
        key = line.split("=")[0].strip()
        section = line if line.startswith("[") else section
        if (key in changed and changed[key] is not None) or \
                (section == "[redis]" and key == "timeout"):
            continue
        lines.append(line)
        if line == "[server]":
            lines += [f"{k} = {v}" for k, v in changed.items() if v is not None]
        if line == "[redis]":
            lines += ["mode = sentinel", "master_name = m", "password = x", "db = 2",
                      "timeout = 1001ms"]
    text = "\n".join(lines) + "\n"
    text = re.sub(r"address = \S+", "address = 127.0.0.1:1,127.0.0.1:2", text)
    text = re.sub(r"prefix = \S+", "prefix = other:", text)
    text = text.replace("admin_listen = 127.0.0.1:", "admin_listen = 127.0.0.2:")
    with open(corral.config_path, "w") as f:
        f.write(text)
    corral.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: corral.stats()["restart_pending"], what="the reload")
    expect_eq(set(corral.stats()["restart_pending"]), help_keys,
              f"restart_pending after changing each of them:\n{text}")
    corral.purge(url=f"http://{HOST}/after")
    wait_for(lambda: "purge " in corral.log() and "/after" in corral.log(),
             what="log_level info in effect without a restart")
    expect("/before" not in corral.log(), "at warn, the first purge was not logged")


@scenario
def docs_say_what_stale_if_error_the_watchdog_and_the_stop_timeout_do(env):
    help_text = env.run_corral("-h").stdout
    line = next(l for l in help_text.splitlines() if " stale_if_error " in l)
    expect("past ttl" in line and "stale_while_revalidate" not in line,
           f"stale_if_error counts from the end of ttl (proxy_flight.c: fresh_until + "
           f"stale_if_error), as corral -h says: {line}")
    man8 = read_text(os.path.join(ROOT, "man", "corral.8.in"))
    ops = docs.doc(docs.OPERATIONS)
    # proxy_service.c: WATCHDOG=1 goes with STATUS= every SERVICE_STATUS_MS,
    # or at half of WatchdogSec when that is shorter.
    status_ms = re.search(r"#define SERVICE_STATUS_MS\s+(\d+)",
                          read_text(os.path.join(ROOT, "proxy", "proxy_service.h"))).group(1)
    every = f"every {int(status_ms) // 1000} s"
    for name, text in (("corral(8)", man8.replace("\\fB", "").replace("\\fR", "")),
                       (docs.OPERATIONS, ops)):
        m = re.search(r"WATCHDOG=1[^.]*", text.replace("\n", " ").replace(".B ", ""))
        expect(m and every in m.group(0) and "half" in m.group(0),
               f"{name}: WATCHDOG=1 {every}, or at half of WatchdogSec: {m and m.group(0)}")
    # The stop: shutdown_timeout above the unit's TimeoutStopSec= is asked
    # for with EXTEND_TIMEOUT_USEC (proxy_service.c); the docs say so.
    for name, text in (("corral(8)", man8), (docs.OPERATIONS, ops)):
        expect("EXTEND_TIMEOUT_USEC" in text.replace("\\", ""),
               f"{name} says how a long shutdown_timeout gets its time")


def markdown_tables_cut(text):
    """The table rows of a markdown text that follow neither a row nor, as a
    header, precede the |---| line: a table cut by a paragraph."""
    lines, cut = text.splitlines(), []
    for i, line in enumerate(lines):
        if not line.startswith("|") or (i > 0 and lines[i - 1].startswith("|")):
            continue
        if i + 1 >= len(lines) or not re.match(r"\|[-:| ]+\|$", lines[i + 1]):
            cut.append(f"line {i + 1}: {line[:80]}")
    return cut


@scenario
def docs_say_what_the_drain_the_pid_file_and_key_host_without_hosts_do(env):
    for name in docs.markdown_docs():
        expect_eq(markdown_tables_cut(docs.doc(name)), [],
                  f"{name}: rows after a paragraph, not a header")
    # proxy_linger.h: the drain of a refused connection, in both places the
    # docs say it.
    ops = docs.doc(docs.OPERATIONS)
    most_bytes, most_ms, most = linger_bounds()
    bounds = (f"{most_bytes >> 20} MiB", f"{most_ms // 1000} s", f"{most} ")
    security = section_of(ops, "A refused connection is not closed at once", "\n\n")
    failure = next(l for l in ops.splitlines() if l.startswith("| Body over `max_body"))
    for name, text in (("Security", security.replace("\n", " ")), ("Failure modes", failure)):
        expect(all(b in text for b in bounds), f"{docs.OPERATIONS} ({name}) says {bounds}: {text}")
    # The packaged pid_file (the Makefile writes it into the installed
    # configuration) is in corral(8) FILES.
    pid_file = re.search(r"\|pid_file = (/\S+) ;\|",
                         read_text(os.path.join(ROOT, "Makefile"))).group(1)
    files = section_of(read_text(os.path.join(ROOT, "man", "corral.8.in")), ".SH FILES", ".SH ")
    expect(f".I {pid_file}\n" in files, f"corral(8) FILES names {pid_file}:\n{files}")
    # The unit's comment says when SIGKILL comes.
    unit = read_text(os.path.join(ROOT, "dist", "corral.service.in"))
    expect("EXTEND_TIMEOUT_USEC" in unit and "shutdown_timeout" in unit,
           "corral.service says STOPPING=1 asks for shutdown_timeout + 5 s")
    # conf.c's warning for key_host without hosts, quoted in both docs.
    code = read_text(os.path.join(ROOT, "conf", "conf.c"))
    call = section_of(code, 'snprintf(out, outlen, "%s:%d: warning: [route', "c->file")
    warning = "".join(re.findall(r'"([^"]*)"', call)).split("] ", 1)[1]
    man5 = read_text(os.path.join(ROOT, "man", "corral.conf.5.in"))
    for name, text, said in ((docs.HTTP, docs.doc(docs.HTTP), warning),
                             ("corral.conf(5)", man5, warning.split(":")[0])):
        text = " ".join(text.replace("\\", "").split())
        expect(said in text, f"{name} quotes the warning: {said!r}")


# -- the package and the build ----------------------------------------------------------

def run(cmd, cwd=ROOT, env=None, timeout=900, check=True):
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, errors="replace",
                       timeout=timeout, stdin=subprocess.DEVNULL,
                       env=dict(os.environ, **(env or {})))
    if check and p.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited with {p.returncode}:\n"
                             f"{(p.stdout + p.stderr)[-3000:]}")
    return p


def makefile_version():
    return re.search(r"^VERSION\s*:=\s*(\S+)", read_text(os.path.join(ROOT, "Makefile")),
                     re.M).group(1)


def built_deb():
    """make deb; the package's path (its version has a Debian revision)."""
    out = run(["make", "--no-print-directory", "deb"]).stdout
    m = re.search(r"make-deb: (\S+\.deb)", out)
    expect(m is not None, f"make deb names the package it made:\n{out}")
    return os.path.join(ROOT, m.group(1))


@scenario(timeout=900, alone=True)
def version_bump_and_build_flags_rebuild_and_the_build_is_hardened(env):
    copy = os.path.join(env.workdir, "tree")
    files = run(["git", "ls-files", "-co", "--exclude-standard"]).stdout.split()
    for name in files:
        if os.path.isfile(os.path.join(ROOT, name)):
            os.makedirs(os.path.dirname(os.path.join(copy, name)), exist_ok=True)
            shutil.copy2(os.path.join(ROOT, name), os.path.join(copy, name))
    obj = "build/release/proxy/main.o"
    run(["nice", "make", "--no-print-directory", obj], cwd=copy)
    up_to_date = lambda *args, **env: run(["make", "-q", obj, *args], cwd=copy, env=env,
                                           check=False).returncode == 0
    expect(up_to_date(), "built: up to date")
    expect(not up_to_date("VERSION=9.9.9"), "VERSION on the command line rebuilds it")
    expect(not up_to_date(CFLAGS="-O1"), "CFLAGS from the environment rebuilds it")
    mk = os.path.join(copy, "Makefile")
    with open(mk) as f:
        text = f.read()
    with open(mk, "w") as f:
        f.write(re.sub(r"^VERSION\s*:=.*$", "VERSION := 9.9.9", text, flags=re.M))
    run(["make", "--no-print-directory", obj], cwd=copy)	# the old VERSION, rebuilt
    with open(mk, "w") as f:
        f.write(text.replace("VERSION := ", "VERSION := 9."))
    expect(not up_to_date(), "a VERSION bump in the Makefile rebuilds it")

    plan = run(["make", "-n", "-B", "build/release/corral"], cwd=copy).stdout
    for flag in ("-fstack-protector-strong", "-D_FORTIFY_SOURCE=", "-Wl,-z,relro",
                 "-Wl,-z,now", "-Werror=format-security"):
        expect(flag in plan, f"the release build has {flag} (dpkg-buildflags):\n{plan[-600:]}")
    plan = run(["make", "-n", "-B", obj], cwd=copy,
               env={"CFLAGS": "-O2 -DSTRICT_MARK", "CPPFLAGS": "-DSTRICT_CPP"}).stdout
    expect("-DSTRICT_MARK" in plan and "-DSTRICT_CPP" in plan,
           f"CFLAGS and CPPFLAGS from the environment are used:\n{plan}")

    # The packaged binary: RELRO, bind now, the stack protector and fortify.
    root = os.path.join(env.workdir, "root")
    run(["dpkg-deb", "-x", built_deb(), root])
    binary = os.path.join(root, "usr/sbin/corral")
    dyn = run(["readelf", "-d", binary]).stdout
    heads = run(["readelf", "-lW", binary]).stdout
    syms = run(["readelf", "--dyn-syms", "-W", binary]).stdout
    expect("BIND_NOW" in dyn or re.search(r"FLAGS_1.*NOW", dyn), f"bind now:\n{dyn}")
    expect("GNU_RELRO" in heads, "RELRO")
    expect("__stack_chk_fail" in syms, "the stack protector")
    expect(re.search(r"__\w+_chk\b", syms.replace("__stack_chk_fail", "")),
           "fortified functions")


def lintian_or_why_not():
    """lintian's path; None (and why) only when it cannot be installed here."""
    path = shutil.which("lintian")
    if path:
        return path, None
    p = run(["apt-cache", "policy", "lintian"], check=False)
    if "Candidate:" in p.stdout and "(none)" not in p.stdout:
        raise AssertionError("lintian not found: scripts/install-deps test installs it")
    return None, f"lintian cannot be installed here: {p.stdout.strip() or p.stderr.strip()}"


@scenario(timeout=900, alone=True)
def deb_has_copyright_changelog_and_a_maintainer_and_lintian_finds_nothing(env):
    deb = built_deb()
    listing = run(["dpkg-deb", "-c", deb]).stdout
    for path in ("./usr/share/doc/corral/copyright", "./usr/share/doc/corral/changelog.Debian.gz"):
        expect(path in listing, f"the package has {path}:\n{listing}")
    info = run(["dpkg-deb", "-f", deb, "Maintainer", "Version"]).stdout
    expect("localhost" not in info and "@" in info, f"a real Maintainer: {info}")
    root = os.path.join(env.workdir, "root")
    run(["dpkg-deb", "-x", deb, root])
    copyright = read_text(os.path.join(root, "usr/share/doc/corral/copyright"))
    expect(copyright.startswith("Format: https://www.debian.org/doc/packaging-manuals/"
                                "copyright-format/1.0/"), "machine-readable (DEP-5)")
    changelog = run(["sh", "-c", "zcat " + os.path.join(
        root, "usr/share/doc/corral/changelog.Debian.gz")]).stdout
    version = re.search(r"Version: (\S+)", info).group(1)
    expect(changelog.startswith(f"corral ({version}) "),
           f"the changelog's last entry is this version ({version}):\n{changelog[:200]}")
    lintian, why = lintian_or_why_not()
    if lintian is None:
        print(f"NOTE: {why}; lintian's verdict not checked")
        return
    p = run([lintian, "--no-tag-display-limit", deb], check=False)
    tags = [l for l in (p.stdout + p.stderr).splitlines() if re.match(r"[EW]: ", l)]
    expect_eq(tags, [], "lintian's errors and warnings")


@scenario
def logrotate_fallback_signals_only_the_instance_of_its_pid_file(env):
    pid_file = os.path.join(env.workdir, "corral.pid")
    redis, origin = env.redis(), env.origin()
    mine = env.corral(redis, origin, extra={"server": {"pid_file": pid_file}})
    other = env.corral(redis, origin)
    wait_for(lambda: os.path.isfile(pid_file) and read_text(pid_file).strip() ==
             str(mine.proc.pid), what="the PID file names the instance")
    snippet = read_text(os.path.join(ROOT, "dist", "corral.logrotate"))
    script = re.search(r"postrotate\n(.*?)\n\s*endscript", snippet, re.S).group(1)
    expect("/run/corral/corral.pid" in script and "pkill" not in script,
           f"the fallback signals the PID file's process, not every corral:\n{script}")
    # No systemd here: systemctl fails, the fallback runs.
    fake = os.path.join(env.workdir, "bin")
    os.makedirs(fake)
    with open(os.path.join(fake, "systemctl"), "w") as f:
        f.write("#!/bin/sh\nexit 1\n")
    os.chmod(os.path.join(fake, "systemctl"), 0o755)
    run(["sh", "-c", script.replace("/run/corral/corral.pid", pid_file)],
        env={"PATH": fake + ":" + os.environ["PATH"]})
    wait_for(lambda: "logs reopened" in mine.log(), what="this instance reopens its logs")
    expect("logs reopened" not in other.log(), "the other corral was not signalled")
    mine.stop()
    expect(not os.path.exists(pid_file), "the PID file goes when it stops")


@scenario(timeout=600, alone=True)
def upgrade_without_systemd_says_the_old_binary_still_runs(env):
    control = os.path.join(env.workdir, "control")
    run(["dpkg-deb", "-e", built_deb(), control])
    pid_file = os.path.join(env.workdir, "corral.pid")
    with open(pid_file, "w") as f:
        f.write(f"{os.getpid()}\n")	# a live process stands in for corral
    text = read_text(os.path.join(control, "postinst"))
    expect("/run/corral/corral.pid" in text, "postinst reads the PID file")
    script = os.path.join(env.workdir, "postinst")
    with open(script, "w") as f:
        f.write(text.replace("/run/systemd/system", "/nonexistent/systemd")
                .replace("/run/corral/corral.pid", pid_file))
    out = run(["sh", script, "configure", "0.0.1-1"]).stdout
    expect(f"pid {os.getpid()}" in out and "restart" in out,
           f"an upgrade without systemd says the running corral is the old one:\n{out!r}")
    first = run(["sh", script, "configure"]).stdout
    expect("restart" not in first, f"a first install says nothing of it: {first!r}")
