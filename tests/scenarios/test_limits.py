"""Limits and what is stored: negative caching (ttl_404, ttl_status), the
largest entry stored (max_entry_bytes), one key for any query order
(sort_query), and requests refused on the public port: malformed,
smuggling-shaped or over [server] limits. A refused request never reaches
the origin, and its connection is closed cleanly once it is answered.
"""

from harness import (Background, corral_config, entry_key, expect, expect_entry,
                     expect_entry_pttl, expect_eq, expect_no_entries, free_port, get_request,
                     raw_exchange, scenario, stampede, wait_for)

SWR_MS = 60_000		# the harness's default stale_while_revalidate


def expect_stored(r, status, what):
    cs = r.cache_status
    expect_eq((r.status, cs.fwd, cs.fwd_status, cs.stored), (status, "miss", status, True),
              f"{what}: status, fwd, fwd-status, stored ({cs.raw!r})")


def expect_not_stored(r, status, what):
    cs = r.cache_status
    expect_eq((r.status, cs.fwd, cs.fwd_status, cs.stored), (status, "miss", status, False),
              f"{what}: status, fwd, fwd-status, stored ({cs.raw!r})")


def expect_hit(r, status, body, what):
    expect_eq((r.status, r.body, r.cache_status.hit), (status, body, True),
              f"{what}: status, body, hit ({r.cache_status.raw!r})")


# -- negative caching ---------------------------------------------------------------

@scenario
def not_found_is_stored_only_where_ttl_404_says(env):
    redis, origin = env.redis(), env.origin()
    origin.script("*", status=404, body="no {path} #{n}")
    corral = env.corral(redis, origin, routes={"/": {}, "/neg/": {"ttl_404": "30s"}})

    expect_stored(corral.get("/neg/x"), 404, "first /neg/x")
    expect_hit(corral.get("/neg/x"), 404, b"no /neg/x #1", "second /neg/x")
    expect_eq(origin.count("/neg/x"), 1, "origin requests for /neg/x")
    expect_entry_pttl(redis, "/neg/x", 30_000 + SWR_MS)

    for i in (1, 2):
        expect_not_stored(corral.get("/x"), 404, f"/x request {i} (no ttl_404)")
    expect_eq(origin.count("/x"), 2, "origin requests for /x")
    expect_eq(redis.entry_keys(), [entry_key("/neg/x")], "entries")
    routes = corral.stats()["routes"]
    expect_eq((routes["/neg/"]["stores"], routes["/"]["stores"]), (1, 0), "stores per route")


@scenario
def ttl_status_stores_each_listed_status_for_its_own_ttl(env):
    redis, origin = env.redis(), env.origin()
    statuses = {"/gone": 410, "/missing": 404, "/ok": 200, "/teapot": 418}
    for path, status in statuses.items():
        origin.script(path, status=status, body=f"{status} #{{n}}")
    corral = env.corral(redis, origin, routes={"/": {"ttl_status": "404:30s,410:5m,200:2s"}})

    for path in ("/gone", "/missing", "/ok"):
        status = statuses[path]
        expect_stored(corral.get(path), status, f"first {path}")
        expect_hit(corral.get(path), status, f"{status} #1".encode(), f"second {path}")
        expect_eq(origin.count(path), 1, f"origin requests for {path}")
    expect_entry_pttl(redis, "/gone", 5 * 60_000 + SWR_MS)
    expect_entry_pttl(redis, "/missing", 30_000 + SWR_MS)
    expect_entry_pttl(redis, "/ok", 2_000 + SWR_MS)	# 200:2s overrides ttl = 10s
    ttl = corral.get("/ok").cache_status.ttl
    expect(ttl is not None and 0 <= ttl <= 2, f"Cache-Status ttl of /ok: {ttl}")

    for i in (1, 2):
        expect_not_stored(corral.get("/teapot"), 418, f"/teapot request {i} (not listed)")
    expect_eq(origin.count("/teapot"), 2, "origin requests for /teapot")
    expect_eq(corral.counters()["stores"], 3, "stores")


# -- max_entry_bytes ----------------------------------------------------------------

@scenario
def response_over_max_entry_bytes_reaches_every_waiter_but_is_not_stored(env):
    clients, size = 5, 5000
    body = b"x" * size
    redis, origin = env.redis(), env.origin()
    origin.script("/big", hold=True, body=body.decode())
    corral = env.corral(redis, origin, extra={"upstream": {"max_entry_bytes": "1k"}})

    waiting = Background(stampede, corral, clients, "/big")
    wait_for(lambda: origin.held("/big") == 1 and
             corral.stats()["in_progress"]["requests"] == clients,
             what="every client to wait on the one fetch")
    origin.release("/big")
    results = waiting.result()

    expect_eq(sorted({(r.status, r.body) for r in results}), [(200, body)],
              f"statuses and bodies ({size} bytes each)")
    expect_eq([r for r in results if r.cache_status.stored], [], "answers that say 'stored'")
    fetched = [r for r in results if not r.cache_status.collapsed]
    expect_eq(len(fetched), 1, f"the fetching client: {results}")
    expect_not_stored(fetched[0], 200, "the fetching client")
    expect_eq(origin.count("/big"), 1, "origin requests")
    expect_no_entries(redis, f"a {size}-byte response with max_entry_bytes = 1k")
    expect_eq(redis.keys("*:lock"), [], "locks left")
    expect_eq(corral.counters()["stores"], 0, "stores")

    expect_not_stored(corral.get("/big"), 200, "the next request fetches again")
    expect_eq(origin.count("/big"), 2, "origin requests")


# -- sort_query ---------------------------------------------------------------------

@scenario
def sort_query_gives_any_parameter_order_one_entry(env):
    redis, origin = env.redis(), env.origin()
    origin.script("*", body="{path} #{n}")
    corral = env.corral(redis, origin, routes={"/sorted/": {"sort_query": "on"},
                                               "/plain/": {}})

    first = corral.get("/sorted/q?b=1&a=2")
    expect_stored(first, 200, "/sorted/q?b=1&a=2")
    expect_hit(corral.get("/sorted/q?a=2&b=1"), 200, first.body, "/sorted/q?a=2&b=1")
    sorted_paths = {p: s["count"] for p, s in origin.stats()["paths"].items()
                    if p.startswith("/sorted/")}
    expect_eq(sorted_paths, {"/sorted/q?b=1&a=2": 1}, "origin requests under /sorted/")

    expect_stored(corral.get("/plain/q?b=1&a=2"), 200, "/plain/q?b=1&a=2")
    expect_stored(corral.get("/plain/q?a=2&b=1"), 200, "/plain/q?a=2&b=1 (its own entry)")
    expect_eq(origin.count("/plain/q?b=1&a=2") + origin.count("/plain/q?a=2&b=1"), 2,
              "origin requests under /plain/")
    expect_eq(len(redis.entry_keys()), 3, f"entries: {redis.entry_keys()}")
    expect_entry(redis, "/sorted/q?a=2&b=1")	# the key holds the sorted query


# -- refused requests ---------------------------------------------------------------

HOST_LINE = b"Host: app.test\r\n"
# ~2 KiB of headers, over max_header_bytes = 1k.
BIG_HEADERS = b"".join(b"X-Filler-%02d: %s\r\n" % (i, b"f" * 80) for i in range(22))

# (what, request bytes, status, made by corral: counted as rejected; since
# proxy_frame.c reads every byte first, all of them are)
SMUGGLED_GET = b"GET /smuggled HTTP/1.1\r\n" + HOST_LINE + b"\r\n"
BAD_REQUESTS = [
    ("malformed request line", b"GET /bad-line HTTP/1.1 trailing-junk\r\n" + HOST_LINE + b"\r\n",
     400, True),
    ("not HTTP at all", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", 400, True),
    ("malformed header line", b"GET /bad-header HTTP/1.1\r\n" + HOST_LINE +
     b"this line has no colon\r\n\r\n", 400, True),
    ("headers over max_header_bytes", b"GET /big-headers HTTP/1.1\r\n" + HOST_LINE +
     BIG_HEADERS + b"\r\n", 431, True),
    ("duplicate Content-Length", b"POST /dup-length HTTP/1.1\r\n" + HOST_LINE +
     b"Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello", 400, True),
    ("Content-Length with chunked", b"POST /length-and-chunked HTTP/1.1\r\n" + HOST_LINE +
     b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
     400, True),
    ("body over max_body_bytes", b"POST /big-body HTTP/1.1\r\n" + HOST_LINE +
     b"Content-Length: 2048\r\n\r\n" + b"b" * 2048, 413, True),
    ("body one byte over max_body_bytes", b"POST /over-body HTTP/1.1\r\n" + HOST_LINE +
     b"Content-Length: 1025\r\n\r\n" + b"b" * 1025, 413, True),
    ("chunked body over max_body_bytes", b"POST /big-chunks HTTP/1.1\r\n" + HOST_LINE +
     b"Transfer-Encoding: chunked\r\n\r\n800\r\n" + b"c" * 2048 + b"\r\n0\r\n\r\n",
     413, True),
    ("obs-fold", b"GET /fold HTTP/1.1\r\n" + HOST_LINE + b"X-A: b\r\n c\r\n\r\n", 400, True),
    ("bad chunk size", b"POST /bad-chunk HTTP/1.1\r\n" + HOST_LINE +
     b"Transfer-Encoding: chunked\r\n\r\nz\r\nhello\r\n0\r\n\r\n", 400, True),
    ("empty chunk size", b"POST /empty-chunk HTTP/1.1\r\n" + HOST_LINE +
     b"Transfer-Encoding: chunked\r\n\r\n\r\n" + SMUGGLED_GET + b"0\r\n\r\n", 400, True),
]


@scenario
def bad_requests_are_refused_and_their_connections_closed(env):
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, extra={"server": {"max_header_bytes": "1k",
                                                         "max_body_bytes": "1k"}})

    for what, data, status, _ in BAD_REQUESTS:
        r = raw_exchange(corral.host, corral.port, data, timeout=10)
        expect_eq((r.status, r.complete), (status, True), f"{what}: status, whole response ({r})")
        expect_eq(r.end, "eof", f"{what}: how corral ended the connection")
        expect_eq(r.headers.get("connection", "").lower(), "close", f"{what}: Connection")
        ok = corral.get("/ok")
        expect_eq(ok.status, 200, f"a good request after {what}")

    big = raw_exchange(corral.host, corral.port, BAD_REQUESTS[3][1], timeout=10)
    expect_eq(big.cache_status.raw, "corral; detail=rejected", "Cache-Status of the 431")

    # A good request, then a bad one on the same connection.
    r = raw_exchange(corral.host, corral.port,
                     get_request("/ok") + b"POST /dup HTTP/1.1\r\n" + HOST_LINE +
                     b"Content-Length: 1\r\nContent-Length: 1\r\n\r\nx", timeout=10)
    expect(r.status == 200 and b"HTTP/1.1 400 " in r.body and r.end == "eof",
           f"pipelined good then bad request: {r}")

    # A body of exactly max_body_bytes is taken, and reaches the origin whole.
    r = corral.get("/at-limit", method="POST", body=b"a" * 1024)
    expect_eq(r.status, 200, "a POST of exactly max_body_bytes")
    expect_eq(origin.path_stats("/at-limit")["bodies"], [1024], "the body the origin read")

    paths = sorted(origin.stats()["paths"])
    expect_eq(paths, ["/at-limit", "/ok"], "paths the origin saw")
    c = corral.counters()
    made = sum(1 for *_, ours in BAD_REQUESTS if ours)
    expect_eq(c["rejected"], made + 2, "rejected: every refusal")
    expect_eq(c["upstream_fetches"], 2, "upstream_fetches (the first /ok, the POST; the rest hit)")
    others = [k for k in redis.entry_keys() if k != entry_key("/ok")]
    expect_eq(others, [], "entries other than /ok")


# -- bounds of the keys that decide what is stored --------------------------------------

def config_line(text, key):
    """The 1-based line of text where key is set."""
    for number, line in enumerate(text.splitlines(), start=1):
        if line.split("=")[0].strip() == key:
            return number
    raise AssertionError(f"{key} is not set in the config")


@scenario
def ttl_status_durations_are_range_checked_like_ttl(env):
    # ttl accepts 1ms..8760h. A ttl_status duration is a ttl too, but it was
    # taken unchecked: 200:2562047788015h passed `corral -t`, and the first
    # 200 then overflowed fresh_until = now + ttl (signed overflow: corral
    # under UBSan dies on it; a release build silently stores nothing).
    text = corral_config(f"127.0.0.1:{free_port()}", "http://127.0.0.1:9", free_port(),
                         free_port(), routes={"/": {"ttl_status": "200:2562047788015h"}})
    path = env.config_file(text, "huge-ttl-status.conf")
    p = env.run_corral("-t", "-c", path)
    line = config_line(text, "ttl_status")
    expect_eq(p.returncode, 1, f"exit status of corral -t with ttl_status = 200:2562047788015h "
              f"(stdout {p.stdout!r}, stderr {p.stderr!r})")
    expect(f"{path}:{line}:" in p.stderr, f"the error names {path}:{line}: {p.stderr!r}")


@scenario
def ttl_status_zero_does_not_store_for_the_route_ttl(env):
    # "200:0" means what ttl_404 = 0 means (docs/operations.md: "STATUS:0
    # means not stored"). It was taken as "not listed", so a 200 was stored for the
    # route's ttl: the opposite of what it says.
    routes = {"/": {"ttl_status": "200:0"}}
    text = corral_config(f"127.0.0.1:{free_port()}", "http://127.0.0.1:9", free_port(),
                         free_port(), routes=routes)
    p = env.run_corral("-t", "-c", env.config_file(text, "zero-ttl-status.conf"))
    expect_eq(p.returncode, 0, f"corral -t accepts ttl_status = 200:0: {p.stderr!r}")
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, routes=routes)
    r = corral.get("/page")
    expect_eq((r.status, r.cache_status.stored), (200, False),
              f"a 200 with ttl_status = 200:0 ({r.cache_status.raw!r})")
    expect_no_entries(redis, "a 200 with ttl_status = 200:0")


@scenario
def sort_query_sorts_parameters_after_normalising_them(env):
    # Without sort_query, /q?%62=1&a=2 and /q?b=1&a=2 are one key (%62 is
    # "b", and percent-encoding is normalised). With sort_query, any order
    # of the same parameters must be one key too; the parameters were sorted
    # as sent, before normalising, so "%62=1" sorted before "a=2".
    redis, origin = env.redis(), env.origin()
    origin.script("*", body="{path} #{n}")
    corral = env.corral(redis, origin, routes={"/": {}, "/sorted/": {"sort_query": "on"}})

    first = corral.get("/q?%62=1&a=2")
    expect_stored(first, 200, "/q?%62=1&a=2")
    expect_hit(corral.get("/q?b=1&a=2"), 200, first.body, "/q?b=1&a=2 without sort_query")

    first = corral.get("/sorted/q?%62=1&a=2")
    expect_stored(first, 200, "/sorted/q?%62=1&a=2")
    expect_hit(corral.get("/sorted/q?a=2&b=1"), 200, first.body,
               "/sorted/q?a=2&b=1: the same parameters in another order")

