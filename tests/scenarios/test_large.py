# SPDX-License-Identifier: MIT
"""Large responses: no Nagle stall on keep-alive connections, and bodies
that flow to the requester and to every waiter of the same flight as they
arrive, with bounded memory."""

import gzip
import http.client
import os
import socket
import threading
import time

from harness import (Background, RawReply, expect, expect_eq, get_request, raw_exchange,
                     read_head, scenario, slow, stampede, wait_for, HOST)
from origin import sized_body

KIB = 1024


@scenario
def sequential_large_hits_on_one_connection_never_wait_for_a_delayed_ack(env):
    # Linux delays an ACK by 40 ms or more. Without TCP_NODELAY, a
    # response's last partial segment waits for the ACK of the segments
    # before it, which the client delays. The client's segments are made
    # Ethernet-sized (loopback's would hold a whole response).
    redis, origin = env.redis(), env.origin()
    origin.script("/big/1", size=100 * KIB)
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}})
    conn = http.client.HTTPConnection(corral.host, corral.port, timeout=10)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG, 1448)
    sock.settimeout(10)
    sock.connect((corral.host, corral.port))
    conn.sock = sock
    took = []
    for i in range(12):
        t0 = time.monotonic()
        conn.request("GET", "/big/1", headers={"Host": HOST})
        resp = conn.getresponse()
        body = resp.read()
        took.append((time.monotonic() - t0) * 1000)
        expect_eq((resp.status, len(body)), (200, 100 * KIB), f"request {i}")
    conn.close()
    hits = took[2:]	# the fill and the first lookup aside
    # The stall would hold every hit back; a busy machine may slow one or two.
    expect(sorted(hits)[-3] < 30, f"8 of 10 100 KiB hits well under the 40 ms delayed ACK: "
           f"{', '.join(f'{t:.1f}' for t in hits)} ms")


def timed_get(host, port, path, results, i, barrier=None, pace=None, started=None):
    """GET path on its own connection; results[i] = (status, body, time of
    the first body byte, time of the last), times by time.time(). pace:
    (bytes, seconds): read that many bytes at a time, resting between.
    started: an Event set once the first body byte is in."""
    conn = http.client.HTTPConnection(host, port, timeout=60)
    if barrier is not None:
        barrier.wait()
    conn.request("GET", path, headers={"Host": HOST})
    resp = conn.getresponse()
    parts, first = [], None
    while True:
        part = resp.read1(pace[0] if pace else 65536)
        if not part:
            break
        if first is None:
            first = time.time()
            if started is not None:
                started.set()
        parts.append(part)
        if pace:
            time.sleep(pace[1])	# a slow reader, on purpose
    results[i] = (resp.status, b"".join(parts), first, time.time(),
                  resp.getheader("Cache-Status"))
    conn.close()


@scenario
def waiters_get_the_body_as_it_arrives_and_it_is_stored(env):
    size, waiters = 2 * 1024 * KIB, 8
    redis, origin = env.redis(), env.origin()
    # Held until every waiter has joined, so that all of them get the head
    # with the lead (one that joins later is the next scenario's).
    origin.script("/s/big", size=size, pieces=20, interval_ms=75, hold=True)	# ~1.5 s
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h", "lock_poll": "5s"}})
    results = [None] * waiters
    barrier = threading.Barrier(waiters)
    threads = [threading.Thread(target=timed_get, args=(corral.host, corral.port, "/s/big",
                                                        results, i, barrier), daemon=True)
               for i in range(waiters)]
    for t in threads:
        t.start()
    wait_for(lambda: origin.held("/s/big") == 1 and
             corral.stats()["in_progress"]["requests"] == waiters,
             what="every waiter joined, the fetch held at the origin")
    origin.release("/s/big")
    for t in threads:
        t.join(60)
    expect_eq(origin.count("/s/big"), 1, "origin requests")
    done_at = origin.path_stats("/s/big")["done_at"][0]
    for i, r in enumerate(results):
        expect(r is not None, f"client {i} answered")
        status, body, first, last, cs = r
        expect_eq((status, len(body), body == sized_body(size)), (200, size, True),
                  f"client {i}: status, length, bytes")
        expect(first < done_at - 0.7,
               f"client {i} got its first byte {done_at - first:.2f} s before the origin "
               f"finished (streamed, not buffered whole): {cs}")
    statuses = sorted(r[4] for r in results)
    expect_eq(sum(1 for s in statuses if s.endswith("collapsed")), waiters - 1,
              f"collapsed waiters: {statuses}")
    # Stored once whole: the clients may have it all before the store ends.
    wait_for(lambda: corral.counters()["stores"] == 1, what="the whole body stored")
    r = corral.get("/s/big", {"Host": HOST})
    expect_eq((r.status, r.cache_status.hit, len(r.body)), (200, True, size),
              "the whole body was stored once complete")
    expect_eq(origin.count("/s/big"), 1, "origin requests, after the hit")


@scenario
def a_request_that_joins_once_the_body_has_begun_gets_it_from_the_first_byte(env):
    size = 2 * 1024 * KIB
    redis, origin = env.redis(), env.origin()
    origin.script("/s/late", size=size, pieces=20, interval_ms=75)	# ~1.5 s
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}})
    results, started = [None, None], threading.Event()
    lead = threading.Thread(target=timed_get, daemon=True,
                            args=(corral.host, corral.port, "/s/late", results, 0),
                            kwargs={"started": started})
    lead.start()
    expect(started.wait(30), "the first client's body began")
    timed_get(corral.host, corral.port, "/s/late", results, 1)
    lead.join(60)
    expect_eq(origin.count("/s/late"), 1, "origin requests")
    done_at = origin.path_stats("/s/late")["done_at"][0]
    for i, r in enumerate(results):
        status, body, first, last, cs = r
        expect_eq((status, len(body), body == sized_body(size)), (200, size, True),
                  f"client {i}: status, length, bytes ({cs})")
    expect(results[1][2] < done_at - 0.5,
           f"the late client got its first byte {done_at - results[1][2]:.2f} s before "
           f"the origin finished: the body so far, then the rest as it came")
    expect(results[1][4].endswith("collapsed"), f"the late client's Cache-Status: {results[1][4]}")


@scenario
def a_body_cut_short_is_never_served_whole_nor_stored(env):
    size = 1024 * KIB
    redis, origin = env.redis(), env.origin()
    origin.script("/s/cut", size=size, cut_after=300 * KIB, pieces=4, interval_ms=50)
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}})
    for n in (1, 2):
        # A cut body is signalled at once, by closing: not left for the
        # client to time out on (10 s) as if more might come.
        r = raw_exchange(corral.host, corral.port,
                         f"GET /s/cut HTTP/1.1\r\nHost: {HOST}\r\n\r\n".encode(),
                         timeout=10)
        expect_eq(r.status, 200, f"request {n}: the head went out before the cut")
        expect(not r.complete and r.end in ("eof", "reset"),
               f"request {n}: the connection closed short of Content-Length "
               f"({len(r.body)} of {r.headers.get('content-length')} bytes, {r.end})")
    expect_eq(origin.count("/s/cut"), 2, "nothing stored: each request fetched")
    expect_eq(redis.entry_keys(), [], "entries")


@scenario
def a_long_body_streams_with_bounded_memory_to_a_slow_client(env):
    size = 64 * 1024 * KIB
    redis, origin = env.redis(), env.origin()
    origin.script("/s/huge", size=size, no_length=True)
    # No quarantine: freed memory is reused, so the peak RSS is what was
    # held at once, not everything ever allocated.
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}},
                        extra={"upstream": {"max_entry_bytes": "1m",
                                            "stream_window": "256k"}},
                        env={"ASAN_OPTIONS": "detect_leaks=1:quarantine_size_mb=0"})
    before = vm_kib(corral.proc.pid, "VmRSS")
    results = [None]
    timed_get(corral.host, corral.port, "/s/huge", results, 0,
              pace=(2 * 1024 * KIB, 0.05))	# ~40 MB/s: slower than the origin
    status, body, _, _, cs = results[0]
    expect_eq((status, len(body), body == sized_body(size)), (200, size, True),
              f"status, length, bytes ({cs})")
    grew = (vm_kib(corral.proc.pid, "VmHWM") - before) / 1024
    expect(grew < 32, f"corral's peak memory grew {grew:.0f} MiB for a 64 MiB body "
           "(a 256 KiB window, 1 MiB kept at most)")
    expect_eq(redis.entry_keys(), [], "not stored: over max_entry_bytes")


def vm_kib(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise AssertionError(f"no {field} for {pid}")


def body_files(corral):
    n = corral.stats()["near_cache"]
    return n["body_files"], n["body_file_bytes"]


ASKS = 8	# answers from a stored entry before its body gets a file
NO_SHARED = {"server": {"l2_max_bytes": "0"}}	# each worker keeps what it serves


@scenario
def a_large_body_goes_by_sendfile_from_its_eighth_answer_and_its_file_goes_with_it(env):
    """A body of 32 KiB or more gets a sealed file of its own the eighth
    time it is answered from its stored entry on a plain socket, and is
    sent from it whole from then on: a stored body (octet-stream, kept as
    it came) and the copy of a compressed one decoded for identity clients
    alike. One of 31 KiB never does, nor one of 32 KiB answered seven
    times. Purged, the entry lets its file go. Without the shared near
    cache (l2_max_bytes = 0) the worker keeps each entry from its first
    answer on, so that the answers counted are those of one copy."""
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}}, extra=NO_SHARED)
    binary = {"Content-Type": "application/octet-stream"}
    for path, size in (("/f/big", 256 * KIB), ("/f/edge", 32 * KIB), ("/f/small", 31 * KIB)):
        origin.script(path, size=size, headers=binary)
    origin.script("/f/text", size=128 * KIB)	# text/plain: stored gzip
    stored = 0

    def miss(path, size):
        """The miss, and its answers from the entry until a file is due."""
        nonlocal stored
        expect_eq(corral.get(path).body, sized_body(size), f"{path}: the miss")
        stored += 1
        wait_for(lambda: corral.counters()["stores"] == stored, what=f"{path} stored")
        # A miss streamed (over STREAM_MIN_BYTES, 64 KiB) is not answered
        # from its entry; one read whole is: hits until the seventh answer.
        answers = 0 if size > 64 * KIB else 1
        for i in range(ASKS - 1 - answers):
            r = corral.get(path)
            expect_eq((r.status, r.body == sized_body(size)), (200, True),
                      f"{path}: hit {i + 1}, whole and in order")

    miss("/f/big", 256 * KIB)
    expect_eq(body_files(corral), (0, 0), "seven answers: no file yet")
    for i in range(2):
        r = corral.get("/f/big")
        expect_eq((r.status, len(r.body), r.body == sized_body(256 * KIB)),
                  (200, 256 * KIB, True), f"from its file ({i + 1}): whole and in order")
        expect_eq(body_files(corral), (1, 256 * KIB), "its file, after the eighth answer")
    miss("/f/text", 128 * KIB)
    expect_eq(corral.get("/f/text").body, sized_body(128 * KIB), "text: identity")
    expect_eq(body_files(corral), (2, 384 * KIB), "the decoded copy's file")
    r = corral.get("/f/text", headers={"Accept-Encoding": "gzip"})
    expect_eq((r.headers.get("Content-Encoding"), gzip.decompress(r.body)),
              ("gzip", sized_body(128 * KIB)), "a gzip client gets the stored coding")
    miss("/f/small", 31 * KIB)
    for i in range(3):
        expect_eq(corral.get("/f/small").body, sized_body(31 * KIB), f"31 KiB, hit {i + 1}")
    expect_eq(body_files(corral)[0], 2, "31 KiB: never a file")
    miss("/f/edge", 32 * KIB)
    expect_eq(body_files(corral)[0], 2, "32 KiB answered seven times: no file yet")
    expect_eq(corral.get("/f/edge").body, sized_body(32 * KIB), "32 KiB, the eighth answer")
    expect_eq(body_files(corral), (3, 416 * KIB), "32 KiB answered eight times: its file")
    r = corral.get("/f/big", method="HEAD")
    expect_eq((r.status, r.body, r.headers.get("Content-Length")), (200, b"", str(256 * KIB)),
              "HEAD: the length, no body")
    expect_eq(origin.count("/f/big"), 1, "one origin fetch")
    expect_eq(corral.purge(url=f"http://{HOST}/f/big").status, 200, "the purge")
    wait_for(lambda: body_files(corral) == (2, 160 * KIB), timeout=10,
             what="the purged entry's file let go")
    expect_eq(corral.get("/f/big").body, sized_body(256 * KIB), "fetched again, whole")
    expect_eq(origin.count("/f/big"), 2, "the purge made it fetch again")


@scenario
def body_files_stay_within_l1_max_bytes_and_the_rest_go_from_memory(env):
    """The files of a worker hold at most l1_max_bytes: with 1 MiB, twelve
    compressed entries the near cache keeps (each charged its few stored
    bytes) get files for their 128 KiB decoded copies only while these fit,
    eight of them; the other four are sent from memory, whole."""
    redis, origin = env.redis(), env.origin()
    origin.script("/t/*", size=128 * KIB)	# text/plain: stored gzip
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}},
                        extra={"server": {"l1_max_bytes": "1m"}})
    want = sized_body(128 * KIB)
    for k in range(12):
        path = f"/t/{k}"
        expect_eq(corral.get(path).body, want, f"{path}: the miss")
        wait_for(lambda: corral.counters()["stores"] == k + 1, what=f"{path} stored")
        for i in range(ASKS + 1):
            expect_eq(corral.get(path).body, want, f"{path}: hit {i + 1}")
    expect_eq(corral.stats()["near_cache"]["entries"], 12, "the near cache keeps all twelve")
    expect_eq(body_files(corral), (8, 1024 * KIB), "eight files, 1 MiB in all")
    for k in range(12):
        expect_eq(corral.get(f"/t/{k}").body, want, f"/t/{k}: whole, from a file or not")
    expect_eq(origin.count(), 12, "one origin fetch each")


@scenario
def large_near_cache_hits_go_out_whole_to_a_slow_reader(env):
    # A hit is written to the socket at once, and what the socket does not
    # take waits for it to drain. Every byte must arrive, in order, also
    # to a client that reads slowly and asks three times in a row, and
    # HEAD and a conditional request must not send the body at all.
    # Over the socket's largest send buffer (tcp_wmem, 4 MiB), so that a
    # reply from its file is taken in part and the rest queued as a piece
    # of the file, sent from where the socket stopped.
    size = 6 * 1024 * KIB
    want = sized_body(size)
    redis, origin = env.redis(), env.origin()
    origin.script("/m/1", size=size, etag='"v1"')
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}}, extra=NO_SHARED)
    for i in range(ASKS + 1):	# then its body is in its file
        r = corral.get("/m/1")
        expect_eq((r.status, len(r.body), r.body == want), (200, size, True),
                  f"hit {i}: status, length, bytes")
    # A slow reader: a small receive buffer, nothing read for a while.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(10)
    sock.connect((corral.host, corral.port))
    req = f"GET /m/1 HTTP/1.1\r\nHost: {HOST}\r\n\r\n".encode()
    last = f"GET /m/1 HTTP/1.1\r\nHost: {HOST}\r\nIf-None-Match: \"v1\"\r\n\r\n".encode()
    sock.sendall(req + req + last)	# three in a row on one connection
    time.sleep(0.3)	# the socket fills and stays full: the rest must wait
    stream = sock.makefile("rb")
    # Each reply framed by its own head: a byte sent twice or left out
    # would put body bytes where the next head must start.
    for what, status, length in (("the first", 200, size), ("the second", 200, size),
                                 ("the third, a 304", 304, 0)):
        line, fields = read_head(stream)
        expect(line.startswith(b"HTTP/1.1 %d " % status),
               f"{what} reply's status line: {line[:80]!r}")
        if status == 200:
            expect_eq(fields.get("content-length"), str(length), f"{what} reply's length")
            body = stream.read(length)
            expect_eq((len(body), body == want), (length, True), f"{what} reply's body")
    sock.close()
    expect_eq(body_files(corral), (1, size), "its body went from its file")
    r = corral.get("/m/1", method="HEAD")
    expect_eq((r.status, r.body, r.headers.get("Content-Length")), (200, b"", str(size)),
              "HEAD: the length, no body")
    r = corral.get("/m/1", headers={"If-None-Match": '"v1"'})
    expect_eq((r.status, r.body), (304, b""), "a match: 304 without the body")


@scenario
def a_streamed_answer_gets_its_access_log_line(env):
    # A streamed reply that ends whole is logged once its body is sent (the
    # request is read for the record before it is freed).
    size = 200 * KIB
    redis, origin = env.redis(), env.origin()
    origin.script("/s/logged", size=size, pieces=4, interval_ms=20)
    log = os.path.join(env.workdir, "access.log")
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}},
                        extra={"server": {"access_log": log}})
    r = corral.get("/s/logged", {"Host": HOST})
    expect_eq((r.status, len(r.body)), (200, size), "status, length")
    line = wait_for(lambda: [l for l in open(log).read().splitlines() if "/s/logged" in l],
                    what="the access-log line")[0]
    expect(f'" 200 {size} ' in line and " cache=miss " in line,
           f"the line names the status, the bytes sent and the outcome: {line}")


class ClosingSocket:
    """A client socket the Env closes when the scenario ends, before the
    instance stops: a stalled reader left open would hold its stop."""

    def __init__(self, sock):
        self.sock = sock

    def stop(self):
        self.sock.close()


def stalled_reader(corral, path):
    """A client that sends GET path and then reads nothing: a small receive
    buffer, so that what Corral queues for it stays queued."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(slow(30))
    sock.connect((corral.host, corral.port))
    sock.sendall(get_request(path))
    return sock


def read_all(sock):
    """Reads what sock has until the server closes it or its response is
    whole; a RawReply."""
    data, end = b"", "eof"
    while True:
        reply = RawReply(data, "open")
        if reply.complete:
            end = "open"
            break
        try:
            chunk = sock.recv(1 << 20)
        except ConnectionResetError:
            end = "reset"
            break
        if not chunk:
            break
        data += chunk
    sock.close()
    return RawReply(data, end)


def slow_reader_beside_fast_readers(env, max_entry_bytes):
    """A client that reads nothing leads a streamed fetch that 20 fast
    readers share; returns (corral, origin, the slow one's socket, size)
    once every fast reader has its whole body, at the origin's pace."""
    size, fast, path = 20 * 1024 * KIB, 20, "/s/wide"
    redis, origin = env.redis(), env.origin()
    origin.script(path, size=size, pieces=40, interval_ms=50, hold=True)	# ~2 s
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h", "lock_poll": "5s"}},
                        extra={"upstream": {"max_entry_bytes": max_entry_bytes}})
    sock = stalled_reader(corral, path)	# first: its fetch is the one that runs
    env.track(ClosingSocket(sock))	# however the scenario ends
    wait_for(lambda: origin.held(path) == 1, what="the slow client's fetch held")
    results = [None] * fast
    threads = [threading.Thread(target=timed_get, args=(corral.host, corral.port, path,
                                                        results, i), daemon=True)
               for i in range(fast)]
    for t in threads:
        t.start()
    wait_for(lambda: corral.stats()["in_progress"]["requests"] == fast + 1,
             what="every fast client joined the flight")
    origin.release(path)
    for t in threads:
        t.join(slow(60))
    want = sized_body(size)
    for i, r in enumerate(results):
        expect(r is not None, f"fast client {i} answered")
        status, body, first, last, cs = r
        expect_eq((status, len(body), body == want), (200, size, True),
                  f"fast client {i}: status, length, bytes ({cs})")
    # Held back, they would wait as long as the slow client reads nothing
    # (it has read nothing yet): set against that, not against how fast a
    # busy machine moves 400 MiB to 20 readers.
    done_at = origin.path_stats(path)["done_at"][0]
    for i, (_, _, _, last, _) in enumerate(results):
        expect(last < done_at + slow(30),
               f"fast client {i} had its body {last - done_at:.1f} s after the origin "
               "sent its last byte: the slow client held it back")
    expect_eq(origin.count(path), 1, "origin requests")
    return corral, origin, sock, size


@scenario
def a_stalled_reader_is_detached_and_later_served_whole_from_the_kept_body(env):
    corral, origin, sock, size = slow_reader_beside_fast_readers(env, "32m")
    c = corral.counters()
    # A fast client held up for a moment on a loaded machine may be
    # detached too, and catch up: none is cut while the body is kept.
    expect(c["stream_detached"] >= 1 and c["stream_cut_slow"] == 0,
           f"the slow client detached, not cut, as the body is being kept: "
           f"stream_detached {c['stream_detached']}, stream_cut_slow {c['stream_cut_slow']}")
    r = read_all(sock)	# it reads at last: the rest from what was kept
    expect_eq((r.status, len(r.body), r.body == sized_body(size)), (200, size, True),
              f"the slow client: status, length, bytes ({r.end})")
    r = corral.get("/s/wide")
    expect_eq((r.status, r.cache_status.hit, len(r.body)), (200, True, size),
              "stored once whole")
    expect_eq(origin.count("/s/wide"), 1, "origin requests")


@scenario
def a_stalled_reader_of_a_body_too_long_to_keep_is_cut_alone(env):
    corral, origin, sock, size = slow_reader_beside_fast_readers(env, "1m")
    expect_eq(corral.counters()["stream_cut_slow"], 1, "the slow client cut")
    r = read_all(sock)
    expect(r.status == 200 and not r.complete and r.end in ("eof", "reset"),
           f"the slow client's connection closed short of the body "
           f"({len(r.body)} of {size} bytes, {r.end})")


@scenario
def late_joiners_of_a_body_too_long_to_keep_share_one_fetch(env):
    # Past max_entry_bytes the start of the body is no longer kept: those
    # that come then cannot be replayed it. They wait for the stream to
    # end and then share the next fetch, rather than each fetching.
    size, burst, path = 6 * 1024 * KIB, 50, "/s/passing"
    redis, origin = env.redis(), env.origin()
    origin.script(path, size=size, pieces=30, interval_ms=200)	# ~6 s
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}},
                        extra={"upstream": {"max_entry_bytes": "1m"}})
    first, past = [None], threading.Event()

    def lead():
        conn = http.client.HTTPConnection(corral.host, corral.port, timeout=slow(60))
        conn.request("GET", path, headers={"Host": HOST})
        resp = conn.getresponse()
        body = b""
        while True:
            part = resp.read1(65536)
            if not part:
                break
            body += part
            if len(body) > 2 * 1024 * KIB:
                past.set()	# the start is no longer kept
        first[0] = (resp.status, body)
        conn.close()

    lead_thread = threading.Thread(target=lead, daemon=True)
    lead_thread.start()
    expect(past.wait(slow(30)), "the first client's body passed 2 MiB")
    late = Background(stampede, corral, burst, path, timeout=slow(60))
    wait_for(lambda: corral.stats()["in_progress"]["requests"] == burst + 1,
             timeout=slow(30), what="the burst in progress beside the first client")
    expect(first[0] is None, "the first client's body still streams: the burst came mid-way")
    lead_thread.join(slow(60))
    want = sized_body(size)
    expect_eq((first[0][0], len(first[0][1]), first[0][1] == want), (200, size, True),
              "the first client: status, length, bytes")
    for i, r in enumerate(late.result(slow(90))):
        expect_eq((r.status, len(r.body), r.body == want), (200, size, True),
                  f"late client {i}: status, length, bytes ({r.cache_status.raw})")
    expect(origin.count(path) <= 2,
           f"origin fetches for the first client and a burst of {burst}: "
           f"{origin.count(path)}, want at most 2")
