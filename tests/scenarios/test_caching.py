# SPDX-License-Identifier: MIT
"""What one instance stores, for how long, and what it says about it:
per-route TTLs, Cache-Status and Age, HEAD from the GET entry, and the
requests and responses that must never be stored.
"""

from harness import (entry_key, expect, expect_entry, expect_entry_pttl, expect_eq,
                     expect_no_entries, scenario, wait_for, wait_until_stale)


def expect_fetched_not_stored(r, status, what):
    cs = r.cache_status
    expect_eq((r.status, cs.fwd, cs.fwd_status, cs.stored), (status, "miss", status, False),
              f"{what}: status, fwd, fwd-status, stored ({cs.raw!r})")


def lower_keys(d):
    return {k.lower(): v for k, v in d.items()}


@scenario
def per_route_ttls_apply(env):
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, routes={
        "/": {"ttl": "1s", "stale_while_revalidate": "60s"},
        "/reports/": {"ttl": "1h", "stale_while_revalidate": "10m"},
    })

    for path in ("/page", "/reports/x"):
        r = corral.get(path)
        expect_eq((r.status, r.cache_status.stored), (200, True), f"first GET {path}")
    expect_entry_pttl(redis, "/page", 1_000 + 60_000)
    expect_entry_pttl(redis, "/reports/x", 3_600_000 + 600_000)

    wait_until_stale(redis, "/page", swr_ms=60_000)
    page, report = corral.get("/page"), corral.get("/reports/x")
    expect(page.status == 200 and page.cache_status.stale and page.cache_status.ttl <= -1,
           f"/page (ttl 1s) is a stale hit: {page.cache_status.raw!r}")
    expect(report.status == 200 and report.cache_status.hit and
           3_500 < (report.cache_status.ttl or 0) <= 3_600,
           f"/reports/x (ttl 1h) is a fresh hit: {report.cache_status.raw!r}")

    wait_for(lambda: origin.count("/page") == 2, what="the stale hit's background refresh")
    expect_eq(origin.count("/reports/x"), 1, "origin requests for /reports/x")
    routes = corral.stats()["routes"]
    expect_eq(routes["/"]["stale_hits"], 1, "stale_hits of route /")
    expect_eq(routes["/reports/"]["hits"], 1, "hits of route /reports/")
    expect_eq(routes["/reports/"]["stale_hits"], 0, "stale_hits of route /reports/")


@scenario
def hit_has_cache_status_ttl_and_age(env):
    ttl_s = 30
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, routes={"/": {"ttl": f"{ttl_s}s"}})

    first = corral.get("/a")
    expect_eq((first.status, first.cache_status.fwd, first.cache_status.fwd_status,
               first.cache_status.stored), (200, "miss", 200, True),
              f"first GET ({first.cache_status.raw!r})")
    expect_entry(redis, "/a")

    def aged_hit():
        r = corral.get("/a")
        return r if r.cache_status.hit and int(r.headers.get("Age", "0")) >= 1 else None
    hit = wait_for(aged_hit, timeout=5, interval=0.1, what="a hit with Age >= 1")

    expect_eq(hit.body, first.body, "hit body")
    expect_eq(hit.headers.get("Content-Type"), "application/json", "stored Content-Type")
    expect_eq(hit.headers.get("X-Origin-Count"), "1", "stored origin header")
    age, ttl = int(hit.headers["Age"]), hit.cache_status.ttl
    expect(ttl is not None and 0 < ttl <= ttl_s, f"Cache-Status ttl: {hit.cache_status.raw!r}")
    expect(ttl_s - 1 <= ttl + age <= ttl_s + 1, f"ttl ({ttl}) + Age ({age}) is about {ttl_s}")
    expect_eq(origin.count("/a"), 1, "origin requests")
    c = corral.counters()
    expect_eq((c["misses"], c["stores"], c["upstream_fetches"]), (1, 1, 1),
              "misses, stores, upstream_fetches")
    expect_eq(c["hits"], c["requests"] - 1, "every request but the first is a hit")


@scenario
def head_is_served_from_the_get_entry(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/doc", body="a document of some length")
    corral = env.corral(redis, origin)

    get = corral.get("/doc")
    expect_eq((get.status, get.cache_status.stored), (200, True), "GET")
    head = corral.get("/doc", method="HEAD")
    expect_eq((head.status, head.body), (200, b""), "HEAD status and body")
    expect_eq(head.headers.get("Content-Length"), str(len(get.body)),
              "HEAD Content-Length equals the GET body's length")
    expect(head.cache_status.hit, f"HEAD is a hit: {head.cache_status.raw!r}")
    expect_eq(origin.path_stats("/doc")["methods"], {"GET": 1}, "origin requests by method")


@scenario
def post_is_proxied_and_never_cached(env):
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin)

    for body in (b"first body", b"a second, longer body"):
        r = corral.get("/items", method="POST", body=body,
                       headers={"Content-Type": "application/octet-stream"})
        expect_eq((r.status, r.cache_status.fwd), (200, "method"),
                  f"POST status and fwd ({r.cache_status.raw!r})")
        expect_eq(r.json()["method"], "POST", "the origin answered the POST")
    r = corral.get("/items", method="DELETE")
    expect_eq((r.status, r.cache_status.fwd), (200, "method"), "DELETE status and fwd")

    items = origin.path_stats("/items")
    expect_eq(items["methods"], {"POST": 2, "DELETE": 1}, "origin requests by method")
    expect_eq(items["bodies"], [10, 21, 0], "request body lengths the origin read")
    expect_no_entries(redis, "POST and DELETE")

    r = corral.get("/items")
    expect_eq((r.status, r.cache_status.stored), (200, True), "a later GET fetches and stores")
    expect_eq(origin.count("/items"), 4, "origin requests")
    expect_eq(corral.counters()["stores"], 1, "stores")


@scenario
def server_error_is_not_stored(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/flaky", status=503, body="down")
    # Without a backoff, so that the second request reaches the origin too.
    corral = env.corral(redis, origin, routes={"/": {"error_backoff": "0"}})

    for i in (1, 2):
        r = corral.get("/flaky")
        expect_fetched_not_stored(r, 503, f"request {i}")
        expect_eq(r.text, "down", "the origin's error body")
    expect_eq(origin.count("/flaky"), 2, "origin requests: the 503 was not cached")
    expect_no_entries(redis, "503 responses")
    expect_eq(redis.keys("*:lock"), [], "locks left after the fetches")
    c = corral.counters()
    expect_eq((c["stores"], c["upstream_fetches"]), (0, 2), "stores, upstream_fetches")


@scenario
def uncacheable_responses_are_not_stored(env):
    redis, origin = env.redis(), env.origin()
    cases = {"/cookie": {"Set-Cookie": "session=abc; HttpOnly"},
             "/no-store": {"Cache-Control": "no-store"},
             "/private": {"Cache-Control": "private, max-age=60"}}
    for path, headers in cases.items():
        origin.script(path, headers=headers)
    corral = env.corral(redis, origin)

    for path, headers in cases.items():
        for i in (1, 2):
            r = corral.get(path)
            if i == 1:
                expect_fetched_not_stored(r, 200, f"{path} request {i}")
            else:	# remembered as one user's: no lock (hit_for_miss)
                expect_eq((r.status, r.cache_status.fwd, r.cache_status.detail),
                          (200, "bypass", "hit-for-miss"), f"{path} request {i}")
            for name, value in headers.items():
                expect_eq(r.headers.get(name), value, f"{path}: {name} passed to the client")
        expect_eq(origin.count(path), 2, f"origin requests for {path}")
    expect_no_entries(redis, "Set-Cookie, no-store and private responses")
    expect_eq(corral.counters()["stores"], 0, "stores")


@scenario
def authorized_requests_bypass_unless_cache_authorized(env):
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, routes={"/": {}, "/shared/": {"cache_authorized": "on"}})
    auth = {"Authorization": "Bearer secret"}
    cookie = {"Cookie": "session=1"}

    expect(corral.get("/page").cache_status.stored, "an anonymous GET is stored")
    for headers in (auth, cookie):
        r = corral.get("/page", headers=headers)
        expect_eq((r.status, r.cache_status.fwd), (200, "bypass"),
                  f"{list(headers)[0]} request ({r.cache_status.raw!r})")
        sent = lower_keys(origin.path_stats("/page")["headers"])
        expect_eq(sent.get(list(headers)[0].lower()), list(headers.values())[0],
                  f"{list(headers)[0]} forwarded to the origin")
    expect_eq(origin.count("/page"), 3, "origin requests: bypass never uses the entry")
    for i in (1, 2):
        r = corral.get("/me", headers=auth)
        expect_eq(r.cache_status.fwd, "bypass", f"/me request {i}")
    expect_eq(origin.count("/me"), 2, "origin requests for /me")
    expect_eq(redis.entry_keys(), [entry_key("/page")], "entries: only the anonymous /page")

    # A response to a request with Authorization is shared only when it
    # says so (public, s-maxage or must-revalidate: RFC 9111 3.5).
    origin.script("/shared/doc", headers={"Cache-Control": "public"})
    first = corral.get("/shared/doc", headers=auth)
    expect(first.cache_status.stored, f"cache_authorized = on stores: {first.cache_status.raw!r}")
    for headers in (auth, cookie):
        r = corral.get("/shared/doc", headers=headers)
        expect(r.cache_status.hit, f"cache_authorized = on hits: {r.cache_status.raw!r}")
    expect_eq(origin.count("/shared/doc"), 1, "origin requests for /shared/doc")
    for i in (1, 2):
        r = corral.get("/shared/private-ish", headers=auth)
        expect(not r.cache_status.stored and not r.cache_status.hit,
               f"request {i} with Authorization, response not marked public: "
               f"{r.cache_status.raw!r}")
    expect_eq(r.cache_status.detail, "hit-for-miss",
              "the key remembered as per-user: the second went straight upstream")
    expect_eq(origin.count("/shared/private-ish"), 2,
              "origin requests: an authorized answer without public is not reused")
    expect_eq(corral.counters()["bypass"], 5, "bypass (one of them by hit-for-miss)")


@scenario
def hop_by_hop_response_headers_are_neither_stored_nor_served(env):
    # Connection, the headers it names and Keep-Alive describe the origin's
    # connection to Corral, not the response: they are dropped when the
    # entry is made, so no hit repeats them.
    redis, origin = env.redis(), env.origin()
    origin.script("/hop", body="v{n}", headers={
        "Connection": "X-Hop-Trace", "X-Hop-Trace": "t1", "Keep-Alive": "timeout=5",
        "X-End-To-End": "kept"})
    corral = env.corral(redis, origin)

    for what, r in (("the fetch", corral.get("/hop")), ("the hit", corral.get("/hop"))):
        expect_eq((r.status, r.text), (200, "v1"), what)
        expect_eq(r.headers.get("X-End-To-End"), "kept", f"an end-to-end header of {what}")
        for name in ("X-Hop-Trace", "Keep-Alive"):
            expect(name not in r.headers, f"{name} in {what}: {r.headers!r}")
        expect("x-hop-trace" not in (r.headers.get("Connection") or "").lower(),
               f"the origin's Connection in {what}: {r.headers!r}")
    expect(corral.get("/hop").cache_status.hit, "the entry is served from the cache")
    stored = expect_entry(redis, "/hop")
    for name in (b"X-Hop-Trace", b"Keep-Alive", b"Connection"):
        expect(name.lower() not in stored.lower(), f"{name.decode()} in the stored entry")
    expect(b"x-end-to-end" in stored.lower(), "the end-to-end header in the stored entry")
