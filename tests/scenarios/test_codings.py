# SPDX-License-Identifier: MIT
"""Content codings: one compressed copy per key, served as each client asks.

The origin sends its body as identity, gzip, br or zstd ("body_b64" with a
Content-Encoding); Corral asks it for the codings it can decode, keeps a
coded body as it came and compresses an identity one with the route's
store_encoding. Every client gets bytes that decode to the origin's body,
in a coding its Accept-Encoding takes, with Content-Length, Content-Encoding,
Vary and ETag (weak when Corral made the body sent) to match; 406 only when
nothing, not even identity, is acceptable. The codings come from the same
libraries Corral uses (tests/harness/codings.py).
"""

import base64
import gzip
import json
import random
import socket
import zlib

from harness import (HOST, Background, entry_key, expect, expect_eq, raw_exchange,
                     read_head, release_once_joined, scenario, slow, wait_for,
                     wait_until_stale)
from origin import sized_body
from harness.codings import CODINGS, decode, encode

UPSTREAM_ACCEPT = "gzip, br, zstd"
ORIGIN_CODINGS = ("identity",) + CODINGS
BOMB_BYTES = 64 << 20		# zeros a bomb inflates to
BOMB_LIMIT = "1m"		# max_entry_bytes it meets
ETAG = '"v1"'
NO_NEAR_CACHE = {"server": {"l1_max_bytes": "0", "l2_max_bytes": "0"}}	# an entry per request

# Each client's Accept-Encoding and, for each stored coding, what it must
# get: a coding name (None: identity), or 406.
CLIENTS = [
    (None, {}),
    ("gzip", {}),
    ("br", {}),
    ("zstd", {}),
    ("*", {}),
    ("identity", {}),
    ("gzip;q=0.5, br;q=1, zstd;q=0.2", {}),
    ("br;q=0", {}),
    ("identity;q=0, gzip", {"br": 406, "zstd": 406}),
    ("br;q=0, identity;q=0", {"gzip": 406, "br": 406, "zstd": 406}),
    ("GZIP ;Q=0.9, *;q=0", {"br": 406, "zstd": 406}),
]


def json_body(n=120, tokens=False):
    """About 9 KiB of a JSON API's answer: compressible, above any threshold;
    with tokens, each row has 32 random hex digits, so that even coded the
    body is longer than a response Corral answers whole (it streams)."""
    rng = random.Random(n)
    rows = [{"id": i, "name": f"user{i % 37}", "email": f"user{i}@example.org",
             "active": i % 3 != 0, "score": (i * 7919) % 1000} for i in range(n)]
    if tokens:
        for row in rows:
            row["token"] = "%032x" % rng.getrandbits(128)
    return json.dumps({"data": rows, "page": 1}).encode()


def script_coded(origin, path, coding, body, **kw):
    """The origin answers path with body in coding (identity: as it is)."""
    headers = {"Content-Type": "application/json"}
    if coding != "identity":
        headers["Content-Encoding"] = coding
    headers.update(kw.pop("headers", {}))
    origin.script(path, body_b64=base64.b64encode(encode(coding, body)).decode(),
                  headers=headers, **kw)


def accepted(ae, coding):
    """Does Accept-Encoding ae take coding (a rough reading, enough for CLIENTS)?"""
    if ae is None:
        return coding == "identity"
    weights, star = {}, None
    for member in ae.split(","):
        parts = [p.strip() for p in member.split(";")]
        name, q = parts[0].lower(), 1.0
        for p in parts[1:]:
            if p.lower().startswith("q="):
                q = float(p[2:])
        if name == "*":
            star = q
        else:
            weights[name] = q
    q = weights.get(coding, star)
    if q is None:
        return coding == "identity"
    return q > 0


def vary_says_coding(r):
    return any("accept-encoding" in v.lower() for v in r.headers.get_all("Vary"))


def expect_body(r, body, what):
    """r's bytes, as its Content-Encoding says, are body; its length is right."""
    coding = r.headers.get("Content-Encoding")
    expect_eq(r.headers.get("Content-Length"), str(len(r.body)), f"{what}: Content-Length")
    expect(decode(coding, r.body) == body, f"{what}: {coding or 'identity'} bytes "
           f"({len(r.body)}) do not decode to the origin's body")
    return coding or "identity"


@scenario
def every_origin_coding_reaches_every_client_as_the_origins_bytes(env):
    body = json_body()
    redis, origin = env.redis(), env.origin()
    paths = {c: f"/m/{c}" for c in ORIGIN_CODINGS}
    for c, p in paths.items():
        script_coded(origin, p, c, body, etag=ETAG)
    corral = env.corral(redis, origin)

    for origin_coding, path in paths.items():
        stored = "gzip" if origin_coding == "identity" else origin_coding
        for ae, special in CLIENTS:
            what = f"{path} Accept-Encoding: {ae}"
            r = corral.get(path, headers={} if ae is None else {"Accept-Encoding": ae})
            if special.get(stored) == 406:
                expect_eq(r.status, 406, f"{what}: nothing acceptable")
                continue
            expect_eq(r.status, 200, what)
            sent = expect_body(r, body, what)
            expect(accepted(ae, sent), f"{what}: sent {sent}, which it does not take")
            expect(sent in (stored, "identity"), f"{what}: sent {sent}, stored {stored}")
            if ae is not None and accepted(ae, stored):
                expect_eq(sent, stored, f"{what}: the stored coding, which it takes")
            expect(vary_says_coding(r), f"{what}: no Vary: Accept-Encoding "
                   f"({r.headers.get_all('Vary')})")
            made = sent != origin_coding	# Corral's making: weak
            expect_eq(r.headers.get("ETag"), "W/" + ETAG if made else ETAG, f"{what}: ETag")
        expect_eq(origin.count(path), 1, f"{path}: one origin fetch for every client")
        asked = origin.path_stats(path)["headers"]
        expect_eq({k.lower(): v for k, v in asked.items()}.get("accept-encoding"),
                  UPSTREAM_ACCEPT, f"{path}: Accept-Encoding sent upstream")
        blob = redis.cmd_bytes("GET", entry_key(path)) or b""
        expect(b"Content-Encoding" in blob and body not in blob,
               f"{path}: the entry holds the body {stored}-coded, not as identity")
    c = corral.counters()
    expect_eq(c["coding_encoded"], 1, "identity bodies compressed on store")
    expect(c["coding_decoded"] >= 3 * 4, f"answers decoded: {c['coding_decoded']}")
    expect_eq(c["coding_406"], 8, "406 answers")
    expect(c["coded_stored_bytes"] < c["coded_plain_bytes"] // 3,
           f"stored {c['coded_stored_bytes']} bytes for {c['coded_plain_bytes']} of identity")
    env.report(f"stored/identity: {c['coded_stored_bytes']}/{c['coded_plain_bytes']} bytes")


@scenario
def short_or_incompressible_bodies_are_stored_as_they_came(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/s/short", body='{"ok":true}', headers={"Content-Type": "application/json"})
    origin.script("/s/png", size=20000, headers={"Content-Type": "image/png"})
    origin.script("/s/events", size=20000, headers={"Content-Type": "text/event-stream"})
    origin.script("/s/no-transform", body=json_body().decode(), headers={
        "Content-Type": "application/json", "Cache-Control": "public, no-transform"})
    origin.script("/z/json", body=json_body().decode(),
                  headers={"Content-Type": "application/json"})
    corral = env.corral(redis, origin, routes={
        "/z/": {"store_encoding": "zstd"}, "/": {}})
    for path in ("/s/short", "/s/png", "/s/events", "/s/no-transform"):
        corral.get(path, headers={"Accept-Encoding": "gzip"})
        r = corral.get(path, headers={"Accept-Encoding": "gzip, br, zstd"})
        expect_eq((r.status, r.headers.get("Content-Encoding")), (200, None), path)
        expect(not vary_says_coding(r), f"{path}: one body for all, no Vary")
    # A coding Corral does not know is stored and sent as it came, never
    # decoded (nor compressed again).
    deflated = zlib.compress(json_body())
    origin.script("/s/deflate", body_b64=base64.b64encode(deflated).decode(), headers={
        "Content-Type": "application/json", "Content-Encoding": "deflate"})
    for ae in ("deflate", None, "gzip"):
        r = corral.get("/s/deflate", headers={"Accept-Encoding": ae} if ae else {})
        expect_eq((r.status, r.headers.get("Content-Encoding"), r.body),
                  (200, "deflate", deflated), f"/s/deflate, Accept-Encoding: {ae}")
    expect_eq(origin.count("/s/deflate"), 1, "/s/deflate stored")
    corral.get("/z/json")
    r = corral.get("/z/json", headers={"Accept-Encoding": "zstd, gzip"})
    expect_eq(r.headers.get("Content-Encoding"), "zstd", "store_encoding = zstd")
    expect_body(r, json_body(), "/z/json zstd")
    expect_eq(corral.counters()["coding_encoded"], 1, "only the JSON body compressed")


@scenario
def compress_types_and_compress_min_bytes_are_each_routes_own(env):
    """A route's compress_types replaces the list (its JSON is kept as it
    came, its NDJSON compressed) and its compress_min_bytes lowers the bar
    (a 120-byte body compressed there, not under the default's 256)."""
    small = b'{"id":1,"name":"a"}\n' * 6
    redis, origin = env.redis(), env.origin()
    for prefix in ("/n/", "/d/"):
        origin.script(prefix + "json", body=json_body().decode(),
                      headers={"Content-Type": "application/json"})
        origin.script(prefix + "ndjson", body=json_body().decode(),
                      headers={"Content-Type": "application/x-ndjson"})
        origin.script(prefix + "small", body=small.decode(),
                      headers={"Content-Type": "application/x-ndjson"})
    corral = env.corral(redis, origin, routes={
        "/n/": {"compress_types": "application/x-ndjson, text/csv",
                "compress_min_bytes": "64"},
        "/d/": {"compress_types": "application/x-ndjson"}, "/": {}})
    want = {"/n/json": None, "/n/ndjson": "gzip", "/n/small": "gzip",
            "/d/json": None, "/d/ndjson": "gzip", "/d/small": None}
    for path, coding in want.items():
        corral.get(path)
        r = corral.get(path, headers={"Accept-Encoding": "gzip"})
        expect_eq((r.status, r.headers.get("Content-Encoding")), (200, coding), path)
        expect_body(r, small if path.endswith("small") else json_body(), path)
        expect_eq(origin.count(path), 1, f"{path} stored")
    expect_eq(corral.counters()["coding_encoded"], 3, "what each route's keys compress")


@scenario
def if_none_match_and_head_work_across_codings(env):
    body = json_body()
    redis, origin = env.redis(), env.origin()
    script_coded(origin, "/c/br", "br", body, etag=ETAG)
    corral = env.corral(redis, origin)
    ident = corral.get("/c/br")
    expect_eq(ident.headers.get("ETag"), "W/" + ETAG, "decoded: weak ETag")
    coded = corral.get("/c/br", headers={"Accept-Encoding": "br"})
    expect_eq(coded.headers.get("ETag"), ETAG, "as the origin sent it: its ETag")
    for tag in (ETAG, "W/" + ETAG):
        for ae in (None, "br", "gzip"):
            headers = {"If-None-Match": tag}
            if ae:
                headers["Accept-Encoding"] = ae
            r = corral.get("/c/br", headers=headers)
            expect_eq(r.status, 304, f"If-None-Match: {tag}, Accept-Encoding: {ae}")
            expect(vary_says_coding(r), f"304 {tag} {ae}: Vary")
    r = corral.get("/c/br", headers={"If-None-Match": '"v2"'})
    expect_eq(r.status, 200, "another ETag")
    head = corral.get("/c/br", method="HEAD")
    expect_eq((head.status, head.body, head.headers.get("Content-Encoding")),
              (200, b"", None), "HEAD, identity")
    expect_eq(head.headers.get("Content-Length"), str(len(body)), "HEAD: identity's length")
    head = corral.get("/c/br", method="HEAD", headers={"Accept-Encoding": "br"})
    expect_eq(head.headers.get("Content-Encoding"), "br", "HEAD, br")
    expect_eq(head.headers.get("Content-Length"), str(len(coded.body)), "HEAD: br's length")
    expect_eq(origin.count("/c/br"), 1, "one origin fetch")


@scenario
def waiters_of_a_cold_miss_with_mixed_codings_share_one_fetch(env):
    body = json_body(4000, tokens=True)	# coded, still past STREAM_MIN_BYTES:
    expect(len(encode("gzip", body)) > 96 << 10, "a body that streams coded")
    redis, origin = env.redis(), env.origin()
    for c in ("gzip", "identity"):
        script_coded(origin, f"/w/{c}", c, body, hold=True)
    corral = env.corral(redis, origin)
    for c in ("gzip", "identity"):
        path = f"/w/{c}"
        wanted = [{}, {"Accept-Encoding": "gzip"}, {"Accept-Encoding": "br"},
                  {"Accept-Encoding": "zstd, gzip;q=0.1"}, {"Accept-Encoding": "*"},
                  {"Accept-Encoding": "identity"}]
        clients = [Background(corral.get, path, headers=h) for h in wanted]
        release_once_joined(origin, path, [corral], len(clients))
        for i, b in enumerate(clients):
            r = b.result()
            expect_eq(r.status, 200, f"{path} client {i}")
            sent = expect_body(r, body, f"{path} client {i}")
            ae = wanted[i].get("Accept-Encoding")
            expect(accepted(ae, sent) if ae else sent == "identity",
                   f"{path} client {i} ({ae}): sent {sent}")
        expect_eq(origin.count(path), 1, f"{path}: one origin fetch for six codings")


@scenario
def corrupt_cut_and_bomb_bodies_are_not_stored(env):
    body = json_body()
    redis, origin = env.redis(), env.origin()
    z = bytearray(gzip.compress(body, mtime=0))
    z[len(z) // 2] ^= 0xff
    origin.script("/b/corrupt", body_b64=base64.b64encode(bytes(z)).decode(),
                  headers={"Content-Encoding": "gzip", "Content-Type": "application/json"})
    cut = encode("zstd", body)[:-20]
    origin.script("/b/cut", body_b64=base64.b64encode(cut).decode(),
                  headers={"Content-Encoding": "zstd", "Content-Type": "application/json"})
    bomb = gzip.compress(bytes(BOMB_BYTES), compresslevel=9, mtime=0)
    origin.script("/b/bomb", body_b64=base64.b64encode(bomb).decode(),
                  headers={"Content-Encoding": "gzip", "Content-Type": "application/json"})
    corral = env.corral(redis, origin, extra={"upstream": {"max_entry_bytes": BOMB_LIMIT}})
    for path in ("/b/corrupt", "/b/cut", "/b/bomb"):
        for ae in ("gzip, zstd", None):
            r = corral.get(path, headers={"Accept-Encoding": ae} if ae else {})
            expect_eq(r.status, 502, f"{path} ({ae}): the origin's body does not decode")
            expect_eq(r.cache_status.detail, "upstream-error", f"{path} ({ae}): Cache-Status")
        expect(not redis.exists(entry_key(path)), f"{path}: not stored")
    expect_eq(corral.counters()["coding_refused"], 6, "coded bodies refused")
    expect("does not decode whole" in corral.log(), "the log says why")


@scenario
def purge_drops_a_key_for_every_coding(env):
    body = json_body()
    redis, origin = env.redis(), env.origin()
    script_coded(origin, "/p/doc", "identity", body)
    corral = env.corral(redis, origin, extra=NO_NEAR_CACHE)
    for ae in ("gzip", None, "br"):
        expect_body(corral.get("/p/doc", headers={"Accept-Encoding": ae} if ae else {}),
                    body, f"before the purge, {ae}")
    expect_eq(origin.count("/p/doc"), 1, "one entry for all codings")
    expect_eq(corral.purge(url=f"http://{HOST}/p/doc").status, 200, "purge")
    for ae in ("br", "gzip", None):
        expect_body(corral.get("/p/doc", headers={"Accept-Encoding": ae} if ae else {}),
                    body, f"after the purge, {ae}")
    expect_eq(origin.count("/p/doc"), 2, "after the purge: one fetch again, for all codings")


def slow_identity_client(corral, path):
    """A client that asks path for identity and reads none of it."""
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.connect((corral.host, corral.port))
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: {HOST}\r\n\r\n".encode())
    return s


def decoded(corral):
    p = corral.stats()["in_progress"]
    return p["decoded_kept_bytes"], p["decoded_bytes"]


def one_more_slow_client(corral, path, answered, held):
    """A slow identity client of path, once it is answered (the answers
    decoded come to answered) and the decoded bodies held are held."""
    s = slow_identity_client(corral, path)
    wait_for(lambda: corral.counters()["coding_decoded"] == answered and
             decoded(corral) == held,
             what=f"slow client {answered} answered, decoded bodies held {held}")
    return s


def decoding(corral):
    return corral.stats()["in_progress"]["decoding"]


def prime_big(env, size, path, extra=None):
    """A JSON body of size bytes, stored as gzip; the corral."""
    redis, origin = env.redis(), env.origin()
    origin.script(path, size=size)	# JSON by default: stored as gzip
    corral = env.corral(redis, origin, extra=dict(
        {"upstream": {"max_entry_bytes": "16m"}}, **(extra or {})))
    corral.get(path)	# streamed to it as it came, then stored
    wait_for(lambda: corral.counters()["stores"] == 1, what="the body stored")
    r = corral.get(path, headers={"Accept-Encoding": "gzip"})
    expect_eq((r.status, r.headers.get("Content-Encoding")), (200, "gzip"), "the stored copy")
    return corral


@scenario
def identity_clients_of_a_hot_entry_share_one_decoded_copy(env):
    size, path = 8 << 20, "/q/hot"
    corral = prime_big(env, size, path)
    slow = [slow_identity_client(corral, path) for _ in range(8)]
    wait_for(lambda: corral.counters()["coding_decoded"] == 8,
             what="the eight slow clients answered")
    expect_eq(decoded(corral), (size, 0), "one decoded copy, kept with the entry, for all")
    for s in slow:
        s.close()
    r = corral.get(path)
    expect_eq((r.status, len(r.body), r.headers.get("Content-Encoding")), (200, size, None),
              "a client that reads it")


@scenario
def decoded_bodies_held_for_slow_clients_are_bounded(env):
    # With no near cache each request has an entry of its own. Its decoded
    # copy is kept with it while the kept copies hold under 64 MiB (four
    # of 16 MiB); past that the body is decoded as its client takes it,
    # which holds a decoder and a window, never the body (at most 8 at once
    # a worker, half its decoders); past those, a copy for one client each,
    # under 64 MiB more (four); past all of it a client that takes only
    # identity gets 503, while one that takes gzip still gets the entry.
    size, path = 16 << 20, "/q/big"
    corral = prime_big(env, size, path, NO_NEAR_CACHE)
    slow = [one_more_slow_client(corral, path, n,
                                 (min(n, 4) * size, max(n - 12, 0) * size))
            for n in range(1, 4 + 8 + 4 + 1)]
    r = corral.get(path)
    expect_eq(r.status, 503, "a client that takes identity only, past every bound")
    r = corral.get(path, headers={"Accept-Encoding": "gzip"})
    expect_eq((r.status, r.headers.get("Content-Encoding")), (200, "gzip"),
              "a gzip client: the stored copy")
    for s in slow:
        s.close()
    wait_for(lambda: decoded(corral) == (0, 0), what="the slow clients' bodies let go")
    r = corral.get(path)
    expect_eq((r.status, len(r.body), r.body == sized_body(size)), (200, size, True),
              "identity again once they are gone")


@scenario
def a_body_decoded_as_its_client_takes_it_arrives_whole_with_its_length(env):
    # Past the kept copies' 64 MiB (four of 16 MiB), identity clients get
    # the body decoded as they take it: whole, with its Content-Length,
    # to HTTP/1.1 and HTTP/1.0 clients alike, to a slow reader as to a
    # fast one, and never held whole for them (decoded_bytes stays 0).
    # The decoders come back: forty more such answers in a row, past the
    # 8 a worker may decode so at once, are all whole.
    size, path = 16 << 20, "/q/streamed"
    corral = prime_big(env, size, path, NO_NEAR_CACHE)
    want = sized_body(size)
    # One at a time: each its own entry, and its copy kept.
    kept = [one_more_slow_client(corral, path, n, (n * size, 0)) for n in range(1, 5)]
    reader = one_more_slow_client(corral, path, 5, (4 * size, 0))	# none held for it
    expect_eq(decoding(corral), 1, "its body decoded as it takes it: under way")
    reader.settimeout(30)
    stream = reader.makefile("rb")
    line, fields = read_head(stream)
    expect(line.startswith(b"HTTP/1.1 200 "), f"its status line: {line!r}")
    expect_eq((fields.get("content-length"), fields.get("content-encoding"),
               fields.get("transfer-encoding")), (str(size), None, None),
              "its length said, identity, not chunked")
    body = stream.read(size)
    expect_eq((len(body), body == want), (size, True), "the slow reader's body, whole")
    wait_for(lambda: decoding(corral) == 0, what="its decoding done once all was taken")
    reader.close()
    gone = slow_identity_client(corral, path)
    wait_for(lambda: decoding(corral) == 1, what="another slow client's decoding under way")
    gone.close()	# unread: the socket breaks under the writer
    wait_for(lambda: decoding(corral) == 0, what="its decoding let go with its connection")
    for i in range(40):
        r = corral.get(path)
        expect_eq((r.status, r.headers.get("Content-Length"), r.body == want),
                  (200, str(size), True), f"answer {i + 1} decoded as it went")
    raw = raw_exchange(corral.host, corral.port,
                       f"GET {path} HTTP/1.0\r\nHost: {HOST}\r\n\r\n".encode(), timeout=slow(30))
    expect(raw.end == "eof" and raw.data.startswith(b"HTTP/1.0 200 ") and
           raw.data.endswith(b"\r\n\r\n" + want) and
           b"Content-Length: %d" % size in raw.data,
           f"an HTTP/1.0 client's whole answer, then the close: {raw}")
    expect_eq(decoded(corral), (4 * size, 0), "still only the kept copies held")
    for s in kept:
        s.close()


@scenario
def two_workers_share_one_fetch_of_a_coded_body_across_codings(env):
    # A sibling worker takes the stream as it came (gzip) for its own
    # clients: each of them gets it or the entry decoded, from one fetch.
    body = json_body(4000, tokens=True)
    redis, origin = env.redis(), env.origin()
    script_coded(origin, "/two/doc", "gzip", body, hold=True)
    corral = env.corral(redis, origin, extra={"server": {"workers": "2"}})
    wanted = [{}, {"Accept-Encoding": "gzip"}, {"Accept-Encoding": "br"},
              {"Accept-Encoding": "gzip, br"}] * 3
    clients = [Background(corral.get, "/two/doc", headers=h) for h in wanted]
    release_once_joined(origin, "/two/doc", [corral], len(clients))
    for i, b in enumerate(clients):
        r = b.result()
        expect_eq(r.status, 200, f"client {i} ({wanted[i]})")
        sent = expect_body(r, body, f"client {i} ({wanted[i]})")
        expect_eq(sent, "gzip" if "gzip" in wanted[i].get("Accept-Encoding", "") else
                  "identity", f"client {i}: the coding")
    expect_eq(origin.count("/two/doc"), 1, "one origin fetch for both workers' clients")


@scenario
def a_revalidated_entry_keeps_its_coding_and_its_etag(env):
    # The refresh of a stale coded entry sends the origin's own ETag; the
    # origin's 304 keeps the stored gzip body, served as before to both
    # kinds of client.
    body, path = json_body(), "/r/doc"
    redis, origin = env.redis(), env.origin()
    script_coded(origin, path, "gzip", body, etag=ETAG)
    corral = env.corral(redis, origin, routes={"/": {"ttl": "3s",
                                                     "stale_while_revalidate": "60s"}},
                        extra=NO_NEAR_CACHE)
    expect_body(corral.get(path, headers={"Accept-Encoding": "gzip"}), body, "the miss")
    wait_until_stale(redis, path, 60_000)
    corral.get(path)	# stale: starts the refresh
    wait_for(lambda: corral.counters()["revalidated"] == 1, what="the refresh's 304")
    sent = [h.get("If-None-Match") for h in origin.path_stats(path)["requests"]]
    expect_eq(sent, [None, ETAG], "If-None-Match sent upstream: the origin's own ETag")
    for ae, coding, etag in ((None, "identity", "W/" + ETAG), ("gzip", "gzip", ETAG)):
        r = corral.get(path, headers={"Accept-Encoding": ae} if ae else {})
        expect(r.cache_status.hit and r.cache_status.ttl >= 0, f"{ae}: a fresh hit: {r}")
        expect_eq((expect_body(r, body, f"after the 304, {ae}"), r.headers.get("ETag")),
                  (coding, etag), f"after the 304, {ae}")


@scenario
def a_streamed_identity_answer_of_a_body_stored_compressed_says_vary(env):
    # The lead of a cold miss gets the origin's identity body as it comes;
    # the entry is then stored gzip, and later answers vary with
    # Accept-Encoding: the first must say so too, or a cache downstream
    # keeps its copy for every client. A body never compressed (its type,
    # or shorter than compress_min_bytes) says nothing.
    redis, origin = env.redis(), env.origin()
    big = json_body(n=1500, tokens=True)	# past 64 KiB: streamed
    # In pieces: the lead's answer streams as it comes.
    script_coded(origin, "/v/json", "identity", big, pieces=4, interval_ms=100)
    origin.script("/v/bin", size=len(big), pieces=4, interval_ms=100,
                  headers={"Content-Type": "application/octet-stream"})
    origin.script("/v/short", body='{"ok":true}', headers={"Content-Type": "application/json"})
    corral = env.corral(redis, origin, routes={"/": {}})
    r = corral.get("/v/json")
    expect_eq((r.status, r.headers.get("Content-Encoding")), (200, None), "the lead: identity")
    expect_body(r, big, "the lead")
    expect(vary_says_coding(r), f"the lead's answer says Vary: {r.headers.get_all('Vary')}")
    # Until its store ends a request may still join the live identity
    # stream (identity is acceptable to every client): then it is a hit.
    wait_for(lambda: corral.get("/v/json", headers={"Accept-Encoding": "gzip"})
             .headers.get("Content-Encoding") == "gzip", what="/v/json stored gzip")
    r = corral.get("/v/json", headers={"Accept-Encoding": "gzip"})
    expect(vary_says_coding(r), "a hit's coded answer says Vary")
    expect_eq(origin.count("/v/json"), 1, "one fetch")
    for path in ("/v/bin", "/v/short"):
        r = corral.get(path)
        expect_eq(r.status, 200, path)
        expect(not vary_says_coding(r), f"{path}: never compressed, no Vary: "
               f"{r.headers.get_all('Vary')}")
