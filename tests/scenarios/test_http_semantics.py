# SPDX-License-Identifier: MIT
"""HTTP caching semantics: early refresh (XFetch), freshness from the
origin's Cache-Control / Expires / Age, validators and 304s (to clients and
from the origin), Vary, invalidation by unsafe methods, admin purges, and
HEAD, Age, Date and Via.

The origin (tests/origin.py) is scripted per path: "etag" / "last_modified"
make it answer conditional requests with 304, "{h:X-Lang}" in a body echoes
a request header, "date": false drops its Date header, and
origin.path_stats(path)["requests"] lists the headers of every request it
got, so a scenario can check what Corral sent upstream.
"""

import math
import re
import struct
import time
from email.utils import formatdate
from urllib.parse import urlencode

from harness import (HOST, PREFIX, Background, RespClient, cache_key, corral_config,
                     entry_key, expect, expect_entry_pttl, expect_eq,
                     fleet_counters, free_port, lock_key, paced, scenario,
                     slow, wait_for, wait_until_stale)

LM = "Wed, 21 Oct 2015 07:28:00 GMT"		# a Last-Modified the origin sends
BEFORE_LM = "Wed, 21 Oct 2015 07:27:59 GMT"
AFTER_LM = "Thu, 22 Oct 2015 07:28:00 GMT"
PURGE_CHANNEL = PREFIX + "purge"
ENTRY_FRESH_AT = 32 + 4 + 1 + 8			# offsets in an encoded entry
ENTRY_FETCH_MS_AT = ENTRY_FRESH_AT + 8 + 8
NO_NEAR_CACHE = {"server": {"l1_max_bytes": "0", "l2_max_bytes": "0"}}


# -- helpers ------------------------------------------------------------------------

def lower_keys(d):
    return {k.lower(): v for k, v in d.items()}


def origin_requests(origin, path):
    """The headers of every request the origin got for path, names lower-cased."""
    return [lower_keys(h) for h in origin.path_stats(path).get("requests", [])]


def admin(corral, method, target):
    return corral.admin(method, target)


def purge(corral, **params):
    """POST /purge?url=... or ?prefix=...; returns the Response."""
    return corral.purge(**params)


def metric(corral, name, route):
    """One per-route sample of /metrics; a missing series is an error."""
    r = admin(corral, "GET", "/metrics")
    expect_eq(r.status, 200, "GET /metrics")
    prefix = f'{name}{{route="{route}"}} '
    for line in r.text.splitlines():
        if line.startswith(prefix):
            return float(line[len(prefix):])
    raise AssertionError(f"/metrics has no {prefix.strip()}")


def route_counters(corrals, route):
    """One route's counters, summed over instances."""
    return fleet_counters(corrals, route)


def variants_key(path):
    return f"{PREFIX}{{{cache_key(path)}}}:variants"


def variant_ids(redis, path):
    return sorted(redis.cmd("SMEMBERS", variants_key(path)))


def purges_received(corral):
    return corral.stats()["redis"]["purges_received"]


def subscribe(redis, channel=PURGE_CHANNEL):
    """A RESP connection subscribed to channel; read messages with next_message."""
    sub = RespClient(redis.host, redis.port, timeout=10)
    reply = sub.command("SUBSCRIBE", channel)
    expect_eq(reply[0], b"subscribe", "SUBSCRIBE reply")
    return sub


def next_message(sub):
    kind, channel, data = sub.read_reply()
    expect_eq(kind, b"message", "pub/sub reply kind")
    return channel.decode(), data.decode()


def expect_single(r, name, value, what):
    values = r.headers.get_all(name)
    expect_eq(values, [value], f"{what}: {name} headers")


def expect_stored(r, what):
    cs = r.cache_status
    expect(r.status == 200 and cs.fwd == "miss" and cs.stored,
           f"{what}: expected a miss that stored, got {r.status} {cs.raw!r}")


def expect_hit(r, what):
    cs = r.cache_status
    expect(r.status == 200 and cs.hit and (cs.ttl or 0) >= 0,
           f"{what}: expected a fresh hit, got {r.status} {cs.raw!r}")


def expect_stale_hit(r, what):
    cs = r.cache_status
    expect(r.status == 200 and cs.hit and (cs.ttl or 0) < 0,
           f"{what}: expected a stale hit (ttl=-N), got {r.status} {cs.raw!r}")


def concurrent(target, requests):
    """[(path, headers)], each sent from its own thread and connection, all
    started together; returns their Responses in order."""
    calls = [Background(target.get, path, headers) for path, headers in requests]
    return [c.result() for c in calls]


def entry_times(redis, path):
    """(fresh_until_ms, fetch_ms) read from path's encoded entry."""
    blob = redis.cmd_bytes("GET", entry_key(path))
    expect(blob is not None, f"no entry for {path}")
    fresh_until, = struct.unpack_from("<q", blob, ENTRY_FRESH_AT)
    fetch_ms, = struct.unpack_from("<I", blob, ENTRY_FETCH_MS_AT)
    return fresh_until, fetch_ms


# -- 1. early refresh (XFetch) --------------------------------------------------------

def fresh_left_ms(redis, path, swr_ms):
    """How long path's entry stays fresh: its PTTL was ttl + swr when stored."""
    return redis.pttl(entry_key(path)) - swr_ms


@scenario
def early_refresh_refreshes_a_hot_key_once_before_it_goes_stale(env):
    # XFetch makes a hit R ms before expiry refresh with probability
    # exp(-R / (beta * delta)), delta being how long the entry's fetch took
    # (here beta * delta is about 600 ms: delta read from the stored entry).
    # So the scenario does not depend on pacing or on the machine's load:
    # - far from expiry (R > 15 * beta * delta) a hit refreshes with
    #   probability < exp(-15): none of those hits may;
    # - it then sends nothing until R < 6 * beta * delta, and from there
    #   hits back to back: the chance that none of them refreshes before
    #   expiry is about exp(-beta * delta / T) for one hit every T ms,
    #   below exp(-10) for any T up to 60 ms.
    # A key with early_refresh off sees the same hits and goes stale.
    # The near cache is off, so that only XFetch is measured;
    # early_refresh_rolls_xfetch_once_per_hit_with_the_near_cache covers
    # the two together.
    ttl_ms, swr_ms, delay_ms, beta = 13_000, 60_000, 300, 2
    on, off = "/on/hot", "/off/hot"
    redis, origin = env.redis(), env.origin()
    for path in (on, off):
        origin.script(path, delay_ms=delay_ms, body="v{n}")
    routes = {"/on/": {"ttl": f"{ttl_ms}ms", "stale_while_revalidate": f"{swr_ms}ms",
                       "early_refresh": "on", "early_refresh_beta": str(beta)},
              "/off/": {"ttl": f"{ttl_ms}ms", "stale_while_revalidate": f"{swr_ms}ms"}}
    fleet = env.fleet(2, redis, origin, routes=routes, extra=NO_NEAR_CACHE)
    prime = fleet[0].get(on)
    expect_stored(prime, f"priming {on}")
    expect_stored(fleet[0].get(off), f"priming {off}")
    window_ms = beta * entry_times(redis, on)[1]	# beta * delta
    hits = 0

    def hit(path, what):
        nonlocal hits
        r = fleet[hits % 2].get(path)
        hits += 1
        expect(r.status == 200 and r.text == "v1" and r.cache_status.hit,
               f"{what} of {path}: {r.status} {r.text!r} {r.cache_status.raw!r}")
        return r

    far = 0
    while fresh_left_ms(redis, on, swr_ms) > 15 * window_ms and far < 20:
        for path in (on, off):
            expect(hit(path, "a hit far from expiry").cache_status.ttl >= 0, "fresh")
        far += 1
    expect(far >= 1, f"no hit far from expiry (beta * delta <= {window_ms:.0f} ms)")
    expect_eq(route_counters(fleet, "/on/")["early_refreshes"], 0,
              f"early refreshes after {far} hits more than {15 * window_ms:.0f} ms "
              "before expiry")

    wait_for(lambda: fresh_left_ms(redis, on, swr_ms) < 6 * window_ms, timeout=ttl_ms / 1000,
             what=f"{on} to be {6 * window_ms:.0f} ms from expiry")
    near = 0
    while route_counters(fleet, "/on/")["early_refreshes"] == 0:
        r = hit(on, "a hit close to expiry")
        expect(not r.cache_status.stale,
               f"{on} went stale after {near} hits close to expiry, none refreshed it early")
        hit(off, "a hit close to expiry")
        near += 1
    wait_for(lambda: origin.count(on) == 2 and
             all(c.stats()["in_progress"]["refreshes"] == 0 for c in fleet),
             what="the early refresh to end")
    r = fleet[1].get(on)
    expect(r.text == "v2" and r.cache_status.hit and r.cache_status.ttl * 1000 > ttl_ms - 3000,
           f"the entry the early refresh stored: {r.text!r} {r.cache_status.raw!r}")

    wait_until_stale(redis, off, swr_ms)
    r = fleet[0].get(off)
    expect_eq((r.text, r.cache_status.stale), ("v1", True), f"{off} without early refresh")
    wait_for(lambda: origin.count(off) == 2, what=f"the stale hit's refresh of {off}")

    c_on, c_off = route_counters(fleet, "/on/"), route_counters(fleet, "/off/")
    summary = f"{far} far and {near} near hits; on: {c_on}; off: {c_off}"
    expect_eq((c_on["early_refreshes"], c_on["stale_hits"], origin.count(on)), (1, 0, 2),
              f"early refresh on: early refreshes, stale hits, origin requests ({summary})")
    expect_eq((c_on["locks_acquired"], c_on["lock_busy"]), (2, 0),
              f"early refresh on: locks acquired (prime and refresh), lock busy ({summary})")
    expect_eq((c_off["early_refreshes"], c_off["stale_hits"]), (0, 1),
              f"early refresh off: early refreshes, stale hits ({summary})")
    expect_eq(sum(metric(c, "corral_early_refresh_total", "/on/") for c in fleet), 1,
              "corral_early_refresh_total{route=/on/}")
    expect_eq(sum(metric(c, "corral_early_refresh_total", "/off/") for c in fleet),
              0, "corral_early_refresh_total{route=/off/}")


@scenario
def early_refresh_goes_through_the_lock_one_fetch_per_fleet(env):
    # beta = 100 and a 100 ms origin: almost every hit is "due". Each of
    # three instances starts an early refresh, but the lock lets only one
    # reach the origin (held there); the others find it busy. Every client
    # keeps getting fresh hits meanwhile, and the refresh's answer replaces
    # the entry everywhere.
    path = "/users/early"
    redis, origin = env.redis(), env.origin()
    origin.script(path, delay_ms=100, body="v{n}")
    fleet = env.fleet(3, redis, origin, routes={"/": {
        "ttl": "5s", "early_refresh": "on", "early_refresh_beta": "100"}})
    expect_stored(fleet[0].get(path), "priming request")
    origin.script(path, delay_ms=0, hold=True, body="v{n}")

    responses = []

    def each_started_one():
        for c in fleet:
            responses.append(c.get(path))
        return all(c.counters()["early_refreshes"] >= 1 for c in fleet)
    wait_for(each_started_one, timeout=3, interval=0,
             what="every instance to start an early refresh")
    wait_for(lambda: origin.held(path) == 1, what="the refresh to reach the origin")

    for r in responses:
        expect_hit(r, "a request while the early refresh runs")
        expect_eq(r.text, "v1", "body while the early refresh runs")
    c = fleet_counters(fleet)
    expect_eq(origin.count(path), 2, "origin requests: the prime and one early refresh")
    expect_eq(c["locks_acquired"], 2, "locks acquired: the prime's and one refresh's")
    expect(c["lock_busy"] >= 2, f"the other instances found the lock busy: {c['lock_busy']}")
    expect_eq((c["stale_hits"], c["misses"]), (0, 1), "stale hits, misses")

    origin.release(path)
    wait_for(lambda: fleet_counters(fleet)["stores"] >= 2, what="the early refresh to store")
    # (Each hit may start yet another early refresh now: v2, v3, ...)
    for i, corral in enumerate(fleet):
        wait_for(lambda: corral.get(path).text != "v1",
                 what=f"instance {i} to serve the refreshed entry")


@scenario
def early_refresh_rolls_xfetch_once_per_hit_with_the_near_cache(env):
    # With the lock held elsewhere every "due" hit starts a refresh that
    # finds the lock busy, so early_refreshes counts exactly the hits whose
    # XFetch roll came up. Each hit's chance is p = exp(-(fresh_until - now)
    # / (fetch_ms * beta)), here about 1/2. An instance without the near
    # cache must match sum(p); one with it must too. If a hit served from
    # memory rolls once to leave the near cache and rolls again before
    # starting the refresh, the count drops to about sum(p^2): half the
    # configured beta. (200 hits: the two expectations are ~7 sd apart.)
    path, beta, hits = "/users/roll", 100, 200
    redis, origin = env.redis(), env.origin()
    origin.script(path, delay_ms=420, body="v{n}")
    # A ttl long enough for both measures' 400 hits on a busy machine.
    route = {"/": {"ttl": "30s", "early_refresh": "on", "early_refresh_beta": str(beta)}}
    near = env.corral(redis, origin, routes=route)
    plain = env.corral(redis, origin, routes=route, extra=NO_NEAR_CACHE)
    expect_stored(plain.get(path), "priming request")
    redis.cmd("SET", lock_key(path), "held-by-the-test", "PX", "60000")
    fresh_until, fetch_ms = entry_times(redis, path)
    expect(fetch_ms >= 100, f"the entry's fetch time: {fetch_ms} ms")

    def measure(corral):
        before = corral.counters()["early_refreshes"]
        probs = []

        def one(i):
            p = math.exp(-(fresh_until - time.time() * 1000) / (fetch_ms * beta))
            r = corral.get(path)
            expect_hit(r, f"{corral.name} hit {i}")
            probs.append(p)
        paced(hits, hits * 0.006, one)
        wait_for(lambda: corral.stats()["in_progress"]["refreshes"] == 0,
                 what="refresh attempts to end")
        got = corral.counters()["early_refreshes"] - before
        once, twice = sum(probs), sum(p * p for p in probs)
        sd = math.sqrt(sum(p * (1 - p) for p in probs))
        return got, once, twice, sd

    for corral, what in ((plain, "without the near cache"), (near, "with the near cache")):
        got, once, twice, sd = measure(corral)
        expect((once + twice) / 2 < got <= once + 4 * sd,
               f"{what}: {got} early refreshes in {hits} hits; one XFetch roll per hit "
               f"expects {once:.1f} (sd {sd:.1f}), two rolls {twice:.1f}")
    expect_eq(origin.count(path), 1, "origin requests: every refresh found the lock busy")


@scenario
def early_refresh_and_origin_cache_control_keys_are_checked(env):
    def check(route_lines):
        text = corral_config("127.0.0.1:1", "http://127.0.0.1:1", free_port(),
                             free_port(), routes={"/": route_lines})
        return env.run_corral("-t", "-c", env.config_file(text))

    for value in ("0.001", "1.0", "100"):
        p = check({"early_refresh": "on", "early_refresh_beta": value})
        expect(p.returncode == 0 and "configuration OK" in p.stdout + p.stderr,
               f"early_refresh_beta = {value} is accepted: {p.stdout}{p.stderr}")
    for key, value in (("early_refresh", "maybe"), ("origin_cache_control", "sometimes")):
        p = check({key: value})
        expect(p.returncode == 1 and key in p.stderr, f"{key} = {value} is refused")
    p = check({"ttl": "0", "origin_cache_control": "on", "early_refresh": "off"})
    expect(p.returncode == 0, f"ttl = 0 is accepted: {p.stderr}")
    # Just outside 0.001..100 too: not rounded into the range.
    for value in ("0", "-1", "x", "100.5", "0.0005", "100.0004"):
        p = check({"early_refresh_beta": value})
        expect(p.returncode == 1 and "early_refresh_beta" in p.stderr,
               f"early_refresh_beta = {value} is refused: {p.stdout}{p.stderr}")


# -- 2. freshness from the origin ---------------------------------------------------------

@scenario
def origin_freshness_from_s_maxage_max_age_expires_and_age(env):
    # The same responses under a route with origin_cache_control = on and
    # one with it off (the default: the route's ttl rules). Route ttl 10 s,
    # stale_while_revalidate 0, so Redis's PTTL shows the freshness itself.
    now = time.time()
    cases = {	# name: (headers, date, PTTL ms with it on, fresh seconds with it on)
        "none": ({}, None, 10_000, 10),
        "max-age": ({"Cache-Control": "max-age=30"}, None, 30_000, 30),
        "s-maxage": ({"Cache-Control": "max-age=30, s-maxage=40"}, None, 40_000, 40),
        "expires": ({"Expires": formatdate(now + 25, usegmt=True)},
                    formatdate(now, usegmt=True), 25_000, 25),
        "age": ({"Cache-Control": "max-age=30", "Age": "10"}, None, 20_000, 20),
        "swr": ({"Cache-Control": "max-age=30, stale-while-revalidate=15"}, None,
                45_000, 30),
        "sie": ({"Cache-Control": "max-age=30, stale-if-error=20"}, None, 50_000, 30),
    }
    redis, origin = env.redis(), env.origin()
    for name, (headers, date, _, _) in cases.items():
        for prefix in ("/occ/", "/route/"):
            origin.script(prefix + name, headers=headers, date=date)
    corral = env.corral(redis, origin, routes={
        "/occ/": {"ttl": "10s", "stale_while_revalidate": "0", "origin_cache_control": "on"},
        "/route/": {"ttl": "10s", "stale_while_revalidate": "0"}})

    for name, (_, _, pttl, fresh_s) in cases.items():	# each checked as soon as stored
        for prefix in ("/occ/", "/route/"):
            expect_stored(corral.get(prefix + name), prefix + name)
        expect_entry_pttl(redis, "/occ/" + name, pttl)
        expect_entry_pttl(redis, "/route/" + name, 10_000)
        on, off = corral.get("/occ/" + name), corral.get("/route/" + name)
        expect_hit(on, "/occ/" + name)
        expect(fresh_s - 2 <= on.cache_status.ttl <= fresh_s,
               f"/occ/{name}: Cache-Status ttl about {fresh_s}: {on.cache_status.raw!r}")
        expect(8 <= off.cache_status.ttl <= 10,
               f"/route/{name}: Cache-Status ttl about 10: {off.cache_status.raw!r}")
        if name == "age":
            age = on.headers.get_all("Age")
            expect(len(age) == 1 and 10 <= int(age[0]) <= 12,
                   f"one Age header: the origin's 10 s plus the time in the cache: {age}")
    expect_eq(origin.count(), 2 * len(cases), "origin requests: one per path")


@scenario
def origin_no_store_private_and_silent_origin_on_ttl_zero_route_are_not_stored(env):
    redis, origin = env.redis(), env.origin()
    cases = {"/z/silent": {}, "/z/etag-only": {},
             "/z/no-store": {"Cache-Control": "max-age=60, no-store"},
             "/z/private": {"Cache-Control": "private, max-age=60"},
             "/z/max-age": {"Cache-Control": "max-age=5"}}
    for path, headers in cases.items():
        origin.script(path, headers=headers, etag='"e"' if "etag" in path else None)
    corral = env.corral(redis, origin, routes={"/z/": {
        "ttl": "0", "stale_while_revalidate": "60s", "origin_cache_control": "on"}})

    for path in cases:
        for i in (1, 2):
            r = corral.get(path)
            expect_eq(r.status, 200, f"{path} request {i}")
    for path in ("/z/silent", "/z/etag-only", "/z/no-store", "/z/private"):
        expect_eq(origin.count(path), 2, f"origin requests for {path} (not stored)")
        expect(not redis.exists(entry_key(path)), f"no entry for {path}")
    expect_eq(origin.count("/z/max-age"), 1, "origin requests for /z/max-age (stored)")
    expect_entry_pttl(redis, "/z/max-age", 5_000 + 60_000)
    expect_eq(corral.counters()["stores"], 1, "stores")


@scenario
def origin_no_cache_is_stored_only_to_revalidate_each_request(env):
    path, plain = "/nc/doc", "/nc/plain"
    redis, origin = env.redis(), env.origin()
    origin.script(path, headers={"Cache-Control": "no-cache"}, etag='"n1"', body="v{n}")
    origin.script(plain, headers={"Cache-Control": "no-cache"}, body="v{n}")
    corral = env.corral(redis, origin, routes={"/nc/": {
        "ttl": "10s", "stale_while_revalidate": "60s", "origin_cache_control": "on"}})

    first = corral.get(path)
    expect_stored(first, "first request")
    expect(redis.pttl(entry_key(path)) > 0, "the no-cache entry is kept, to be revalidated")
    for i in (2, 3):
        r = corral.get(path)
        expect_eq((r.status, r.text), (200, "v1"), f"request {i}: the stored body")
        expect(not r.cache_status.hit, f"request {i} is not a hit: {r.cache_status.raw!r}")
    sent = origin_requests(origin, path)
    expect_eq([h.get("if-none-match") for h in sent], [None, '"n1"', '"n1"'],
              "If-None-Match sent upstream")
    expect_eq(origin.path_stats(path)["statuses"], {"200": 1, "304": 2},
              "origin statuses: each later request revalidated")
    c = corral.counters()
    expect_eq((c["revalidated"], c["hits"], c["stale_hits"]), (2, 0, 0),
              "revalidated, hits, stale_hits")

    for i in (1, 2):
        expect_eq(corral.get(plain).text, f"v{i}", f"{plain} request {i}")
    expect_eq(origin.count(plain), 2, "no-cache without validators: never reused")
    expect(not redis.exists(entry_key(plain)), f"no entry for {plain}")


@scenario
def origin_must_revalidate_and_s_maxage_forbid_stale_unless_swr_or_sie_allow(env):
    redis, origin = env.redis(), env.origin()
    cases = {	# path: (Cache-Control, PTTL ms, served stale after expiry?)
        "/m/plain": ("max-age=1", 61_000, True),
        "/m/must": ("max-age=1, must-revalidate", 1_000, False),
        "/m/proxy": ("max-age=1, proxy-revalidate", 1_000, False),
        "/m/smax": ("s-maxage=1", 1_000, False),
        "/m/must-swr": ("max-age=1, must-revalidate, stale-while-revalidate=30",
                        31_000, True),
        "/m/must-err": ("max-age=1, must-revalidate", 1_000, False),
        "/m/must-sie": ("max-age=1, must-revalidate, stale-if-error=30", 31_000, False),
    }
    for path, (cc, _, _) in cases.items():
        origin.script(path, headers={"Cache-Control": cc}, body="v{n}")
    corral = env.corral(redis, origin, routes={"/m/": {
        "ttl": "10s", "stale_while_revalidate": "60s", "stale_if_error": "60s",
        "error_backoff": "0", "origin_cache_control": "on"}})

    for path, (_, pttl, _) in cases.items():
        # Each PTTL read at once: the strict entries live 1 s.
        t0 = time.monotonic()
        expect_stored(corral.get(path), path)
        expect_entry_pttl(redis, path, pttl, since=t0)
    wait_until_stale(redis, "/m/plain", swr_ms=60_000)
    for path in ("/m/must", "/m/proxy", "/m/smax", "/m/must-err"):
        wait_for(lambda: not redis.exists(entry_key(path)), what=f"{path} to expire")

    for path, (_, _, stale) in cases.items():
        if path in ("/m/must-err", "/m/must-sie"):
            continue
        r = corral.get(path)
        if stale:
            expect_stale_hit(r, path)
            expect_eq(r.text, "v1", f"{path}: the stale body")
        else:
            expect_stored(r, f"{path} after expiry (no stale serving)")
            expect_eq(r.text, "v2", f"{path}: fetched again")

    for path in ("/m/must-err", "/m/must-sie"):
        origin.script(path, status=503, body="down")
    err = corral.get("/m/must-err")
    expect_eq((err.status, err.text), (503, "down"),
              "must-revalidate without stale-if-error: the origin's 503")
    wait_until_stale(redis, "/m/must-sie", swr_ms=30_000)
    sie = corral.get("/m/must-sie")
    expect_eq((sie.status, sie.text, sie.cache_status.detail), (200, "v1", "stale-if-error"),
              f"must-revalidate with stale-if-error=30: stale served ({sie.cache_status.raw!r})")


# -- 3. validators ----------------------------------------------------------------------

@scenario
def conditional_requests_get_304_from_the_cache(env):
    path, cold, stale_path = "/c/doc", "/c/cold", "/s/doc"
    redis, origin = env.redis(), env.origin()
    for p in (path, cold, stale_path):
        origin.script(p, etag='"c1"', last_modified=LM, body="body-{n}")
    corral = env.corral(redis, origin, routes={
        "/c/": {"ttl": "60s"}, "/s/": {"ttl": "1s", "stale_while_revalidate": "60s"}})

    expect_stored(corral.get(path), "priming request")
    cases = [	# (method, request headers, expected status)
        ("GET", {"If-None-Match": '"c1"'}, 304),
        ("GET", {"If-None-Match": 'W/"c1"'}, 304),
        ("GET", {"If-None-Match": '"x", "c1"'}, 304),
        ("GET", {"If-None-Match": "*"}, 304),
        ("GET", {"If-None-Match": '"x"'}, 200),
        ("GET", {"If-Modified-Since": LM}, 304),
        ("GET", {"If-Modified-Since": AFTER_LM}, 304),
        ("GET", {"If-Modified-Since": BEFORE_LM}, 200),
        ("GET", {"If-None-Match": '"x"', "If-Modified-Since": LM}, 200),
        ("HEAD", {"If-None-Match": '"c1"'}, 304),
    ]
    for method, headers, status in cases:
        r = corral.get(path, headers=headers, method=method)
        what = f"{method} {headers}"
        expect_eq(r.status, status, f"{what}: status ({r.cache_status.raw!r})")
        expect(r.cache_status.hit and r.cache_status.ttl >= 0,
               f"{what}: answered from the fresh entry ({r.cache_status.raw!r})")
        if status == 304:
            expect_eq(r.body, b"", f"{what}: 304 body")
            expect_eq(r.headers.get("ETag"), '"c1"', f"{what}: 304 ETag")
        else:
            expect_eq(r.text, "body-1", f"{what}: body")
    c = corral.counters("/c/")
    expect_eq(c["not_modified"], sum(1 for *_, s in cases if s == 304), "not_modified")
    expect_eq(origin.count(path), 1, "origin requests: conditionals answered by the cache")

    # A conditional cold miss: the shared fetch carries no If-* upstream,
    # and the client still gets its 304 from what was stored.
    r = corral.get(cold, headers={"If-None-Match": '"c1"', "If-Modified-Since": LM})
    expect_eq((r.status, r.body), (304, b""), f"conditional cold miss ({r.cache_status.raw!r})")
    sent = origin_requests(origin, cold)
    expect_eq([(h.get("if-none-match"), h.get("if-modified-since")) for h in sent],
              [(None, None)], "conditional headers sent upstream on the shared fetch")
    expect_eq(corral.get(cold).text, "body-1", "the entry holds the body")

    # A stale entry answers a conditional request with 304 too.
    expect_stored(corral.get(stale_path), "priming the stale path")
    wait_until_stale(redis, stale_path, swr_ms=60_000)
    r = corral.get(stale_path, headers={"If-None-Match": '"c1"'})
    expect_eq((r.status, r.body), (304, b""), "conditional request on a stale entry")
    expect((r.cache_status.ttl or 0) < 0, f"served stale: {r.cache_status.raw!r}")
    s = corral.counters("/s/")
    expect_eq((s["stale_hits"], s["not_modified"]), (1, 1), "/s/ stale_hits, not_modified")


@scenario
def stale_refresh_revalidates_with_if_none_match_and_304_keeps_the_body(env):
    path = "/r/doc"
    redis, origin = env.redis(), env.origin()
    origin.script(path, etag='"r1"', last_modified=LM, headers={"X-Rev": "1"}, body="v{n}")
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1s",
                                                     "stale_while_revalidate": "60s"}})

    first = corral.get(path)
    expect_stored(first, "first request")
    expect_eq((first.text, first.headers.get("X-Rev")), ("v1", "1"), "first body, X-Rev")
    # Unchanged (same ETag), but the origin now sends X-Rev: 2 with its 304.
    origin.script(path, etag='"r1"', last_modified=LM, headers={"X-Rev": "2"}, body="v{n}")
    wait_until_stale(redis, path, swr_ms=60_000)
    stale = corral.get(path)
    expect_stale_hit(stale, "request on the stale entry")
    expect_eq((stale.text, stale.headers.get("X-Rev")), ("v1", "1"), "stale body, X-Rev")

    wait_for(lambda: corral.counters()["revalidated"] == 1 and
             corral.counters()["stores"] == 2, what="the refresh to be revalidated and stored")
    after = corral.get(path)	# at once: fresh for 1 s
    sent = origin_requests(origin, path)
    expect_eq(len(sent), 2, "origin requests")
    expect_eq((sent[1].get("if-none-match"), sent[1].get("if-modified-since")), ('"r1"', LM),
              "the refresh's conditional headers")
    expect_eq(origin.path_stats(path)["statuses"], {"200": 1, "304": 1},
              "origin statuses: no body the second time")

    expect_hit(after, "request after the revalidation")
    expect_eq((after.text, after.headers.get("X-Rev"), after.headers.get("ETag")),
              ("v1", "2", '"r1"'), "the old body with the 304's headers")
    expect_single(after, "X-Rev", "2", "after the revalidation")
    expect_entry_pttl(redis, path, 1_000 + 60_000)	# new times
    expect_eq(origin.count(path), 2, "origin requests")


@scenario
def expired_entry_is_revalidated_with_if_modified_since(env):
    path = "/e/doc"
    redis, origin = env.redis(), env.origin()
    origin.script(path, last_modified=LM, headers={"X-Rev": "1"}, body="v{n}")
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1s",
                                                     "stale_while_revalidate": "0"}})

    expect_stored(corral.get(path), "first request")
    pttl = redis.pttl(entry_key(path))
    expect(pttl > 5_000, f"an entry with validators outlives its stale_until (PTTL {pttl})")
    origin.script(path, last_modified=LM, headers={"X-Rev": "2"}, body="v{n}")
    wait_for(lambda: redis.pttl(entry_key(path)) < pttl - 1_200,
             what="the entry to be past its stale_until")

    r = corral.get(path)
    following = corral.get(path)	# at once: fresh for 1 s
    expect_stored(r, "request on the expired entry (no stale serving)")
    expect_eq(r.cache_status.fwd_status, 304,
              "fwd-status: what the upstream said to the revalidation (RFC 9211)")
    expect_eq((r.text, r.headers.get("X-Rev")), ("v1", "2"), "the old body, the 304's header")
    sent = origin_requests(origin, path)
    expect_eq((sent[1].get("if-modified-since"), sent[1].get("if-none-match")), (LM, None),
              "the refresh's conditional headers")
    expect_eq(origin.path_stats(path)["statuses"], {"200": 1, "304": 1}, "origin statuses")
    c = corral.counters()
    expect_eq((c["revalidated"], c["stale_hits"], c["stores"]), (1, 0, 2),
              "revalidated, stale_hits, stores")
    expect_hit(following, "next request")


# -- 4. Vary ------------------------------------------------------------------------------

# Two values of X-Variant whose variant ids were equal when an id was the
# 64-bit FNV-1a hash of the names and values (found in a few minutes with
# Pollard's rho over 13-letter strings): 4566527ff37f8398 for both.
FNV_COLLISION = ("fete2uzfaqvdi", "5266yns52oihh")


@scenario
def values_computed_to_collide_never_share_a_variant(env):
    path = "/v/collide"
    redis, origin = env.redis(), env.origin()
    origin.script(path, headers={"Vary": "X-Variant"}, body="for={h:X-Variant} n={n}")
    a, b = env.fleet(2, redis, origin)
    victim, attacker = FNV_COLLISION
    expect_stored(a.get(path, headers={"X-Variant": attacker}), "the crafted value")
    r = b.get(path, headers={"X-Variant": victim})
    expect_eq(r.text, f"for={victim} n=2", f"the other value gets its own answer "
              f"({r.cache_status.raw!r})")
    expect_stored(r, "the other value")
    ids = variant_ids(redis, path)
    expect(len(ids) == 2 and all(re.fullmatch(r"[0-9a-f]{32}", i) for i in ids),
           f"two variants, each with a 128-bit id: {ids}")
    for who, value, n in (("a", victim, 2), ("b", attacker, 1)):
        r = (a if who == "a" else b).get(path, headers={"X-Variant": value})
        expect_eq((r.text, r.cache_status.hit), (f"for={value} n={n}", True),
                  f"{value} again, on {who}: its own variant")



@scenario
def vary_stores_one_variant_per_header_value(env):
    path = "/v/doc"
    redis, origin = env.redis(), env.origin()
    origin.script(path, headers={"Vary": "X-Lang"}, body="lang={h:X-Lang} n={n}")
    a, b = env.fleet(2, redis, origin)

    expect_stored(a.get(path, headers={"X-Lang": "en"}), "en")
    expect_stored(a.get(path, headers={"X-Lang": "fr"}), "fr")
    expect_stored(a.get(path), "no X-Lang")

    # In Redis: a marker at the URL's entry key, a set of variant ids, and
    # one entry per variant next to the marker. Nothing else.
    ids = variant_ids(redis, path)
    expect_eq(len(ids), 3, f"members of {variants_key(path)}")
    expect_eq(redis.keys(), sorted([entry_key(path), variants_key(path)] +
                                   [f"{entry_key(path)}:{vid}" for vid in ids]),
              "keys in Redis")
    marker = redis.cmd_bytes("GET", entry_key(path))
    expect(marker is not None and b"lang=" not in marker,
           f"a marker, not a response, at {entry_key(path)}: {marker!r:.160}")
    bodies = []
    for vid in ids:
        blob = redis.cmd_bytes("GET", f"{entry_key(path)}:{vid}")
        expect(blob is not None, f"variant entry {entry_key(path)}:{vid}")
        bodies.append(blob[blob.rindex(b"lang="):].decode())
    expect_eq(sorted(bodies), ["lang= n=3", "lang=en n=1", "lang=fr n=2"],
              "the bodies of the variant entries")

    # Every instance finds its variant, the one that fetched them and one
    # that has never seen the URL.
    for corral, lang, body in ((a, "en", "lang=en n=1"), (a, "fr", "lang=fr n=2"),
                               (b, "fr", "lang=fr n=2"), (b, "en", "lang=en n=1"),
                               (b, None, "lang= n=3")):
        r = corral.get(path, headers={"X-Lang": lang} if lang else {})
        expect_hit(r, f"{corral.name} X-Lang {lang}")
        expect_eq(r.text, body, f"{corral.name} X-Lang {lang}: its variant's body")
        expect_eq(r.headers.get("Vary"), "X-Lang", "Vary passed on")

    langs = sorted(str(h.get("x-lang")) for h in origin_requests(origin, path))
    expect_eq(langs, ["None", "en", "fr"], "origin requests: one per variant")
    ca, cb = a.counters(), b.counters()
    expect_eq((ca["misses"], ca["stores"], ca["hits"]), (3, 3, 2), "instance a")
    expect_eq((cb["misses"], cb["hits"]), (0, 3), "instance b")


@scenario
def vary_accept_encoding_does_not_split_and_vary_star_is_not_stored(env):
    ae, mixed, star = "/v/ae", "/v/mixed", "/v/star"
    redis, origin = env.redis(), env.origin()
    origin.script(ae, headers={"Vary": "Accept-Encoding"}, body="ae n={n}")
    origin.script(mixed, headers={"Vary": "accept-encoding, X-Lang"},
                  body="lang={h:X-Lang} n={n}")
    origin.script(star, headers={"Vary": "*"}, body="star n={n}")
    corral = env.corral(redis, origin)

    for enc in ("gzip", "br", "identity", "gzip, deflate"):
        r = corral.get(ae, headers={"Accept-Encoding": enc})
        expect_eq(r.text, "ae n=1", f"Accept-Encoding: {enc}: the one entry")
    expect_eq(origin.count(ae), 1, "origin requests for a Vary: Accept-Encoding response")
    expect_eq([h.get("accept-encoding") for h in origin_requests(origin, ae)],
              ["gzip, br, zstd"], "Accept-Encoding sent upstream: what Corral decodes")
    expect_eq(variant_ids(redis, ae), [], "no variants of it")
    blob = redis.cmd_bytes("GET", entry_key(ae)) or b""
    expect(blob.endswith(b"ae n=1"), f"the response itself at {entry_key(ae)}: {blob!r:.160}")

    for enc, lang, body in (("gzip", "en", "lang=en n=1"), ("br", "en", "lang=en n=1"),
                            ("gzip", "fr", "lang=fr n=2"), (None, "fr", "lang=fr n=2")):
        headers = {"X-Lang": lang}
        if enc:
            headers["Accept-Encoding"] = enc
        expect_eq(corral.get(mixed, headers=headers).text, body, f"{mixed} {headers}")
    expect_eq(origin.count(mixed), 2, "Vary: Accept-Encoding, X-Lang splits on X-Lang only")

    for i in (1, 2):
        r = corral.get(star)
        expect_eq((r.text, r.cache_status.stored), (f"star n={i}", False), f"Vary: * request {i}")
    expect(not redis.exists(entry_key(star)) and variant_ids(redis, star) == [],
           "Vary: * is never stored")


@scenario
def cold_stampede_with_different_vary_values_each_gets_its_own_variant(env):
    # Thirty cold requests, ten per X-Lang value, join one flight on one
    # instance. The first fetch answers only its own variant; the others
    # are sent on to theirs: one origin request per variant.
    path, langs = "/v/hot", ("en", "fr", "de")
    redis, origin = env.redis(), env.origin()
    origin.script(path, headers={"Vary": "X-Lang"}, body="lang={h:X-Lang}", hold=True)
    corral = env.corral(redis, origin)

    order = [langs[i % 3] for i in range(30)]
    calls = Background(concurrent, corral, [(path, {"X-Lang": lang}) for lang in order])
    wait_for(lambda: origin.held(path) == 1 and
             corral.stats()["in_progress"]["requests"] == 30,
             what="all 30 requests to wait on the first fetch")
    origin.release(path)
    results = calls.result()

    for lang, r in zip(order, results):
        expect_eq((r.status, r.text), (200, f"lang={lang}"), f"X-Lang {lang}: its own body")
    sent = sorted(h.get("x-lang") for h in origin_requests(origin, path))
    expect_eq(sent, sorted(langs), "origin requests: one per variant")
    c = corral.counters()
    expect_eq((c["misses"], c["collapsed"], c["stores"]), (3, 27, 3),
              "misses, collapsed, stores")
    expect_eq(len(variant_ids(redis, path)), 3, "variants stored")


@scenario
def authorized_requests_stored_only_when_the_response_allows_sharing(env):
    redis, origin = env.redis(), env.origin()
    cases = {"public": ("public", True), "smax": ("s-maxage=60", True),
             "mustrev": ("must-revalidate", True), "maxage": ("max-age=60", False)}
    for prefix in ("/a/", "/ao/"):
        for name, (cc, _) in cases.items():
            origin.script(prefix + name, headers={"Cache-Control": cc}, body="n={n}")
    corral = env.corral(redis, origin, routes={
        "/a/": {"cache_authorized": "on"},
        "/ao/": {"cache_authorized": "on", "origin_cache_control": "on"}})
    auth = {"Authorization": "Bearer t"}

    for prefix in ("/a/", "/ao/"):
        for name, (cc, shared) in cases.items():
            path = prefix + name
            first, second = corral.get(path, headers=auth), corral.get(path, headers=auth)
            expect_eq(first.cache_status.stored, shared, f"{path} ({cc}) stored")
            expect_eq(second.text, "n=1" if shared else "n=2", f"{path} ({cc}) second body")
            expect_eq(origin.count(path), 1 if shared else 2, f"origin requests for {path}")
            expect_eq(lower_keys(origin.path_stats(path)["headers"]).get("authorization"),
                      "Bearer t", f"{path}: credentials sent upstream")


# -- 5. invalidation and purge ---------------------------------------------------------------

@scenario
def successful_unsafe_methods_invalidate_the_entry_and_its_variants(env):
    path, other, var = "/doc", "/doc?x=1", "/var"
    redis, origin = env.redis(), env.origin()
    origin.script(path, body="v{n}")
    origin.script(var, headers={"Vary": "X-Lang"}, body="lang={h:X-Lang} n={n}")
    a, b = env.fleet(2, redis, origin)
    sub = subscribe(redis)

    expect_stored(a.get(other), "priming /doc?x=1")
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        a.get(path)
        expect_hit(b.get(path), f"before {method}: b has the entry")
        before_a, before_b = purges_received(a), purges_received(b)
        r = a.get(path, method=method, body=b"x")
        expect_eq((r.status, r.cache_status.fwd), (200, "method"), f"{method}")
        expect_eq(next_message(sub), (PURGE_CHANNEL, cache_key(path)),
                  f"{method}: the invalidation is broadcast")
        wait_for(lambda: purges_received(a) > before_a and purges_received(b) > before_b,
                 what=f"both instances to hear of the {method}'s invalidation")
        expect(not redis.exists(entry_key(path)), f"{method}: the entry is gone")
        n = origin.count(path) + 1	# the origin counts every method
        after = b.get(path)
        expect_stored(after, f"GET after {method} (b: no copy left in memory)")
        expect_eq(after.text, f"v{n}", f"GET after {method}: fetched again")
        expect_hit(a.get(path), f"a after {method}")
    expect_eq(a.counters()["invalidations"], 4, "invalidations")
    expect_hit(a.get(other), "a different query of the URL is untouched")

    # Unsuccessful: the entry stays.
    for status in (500, 404):
        origin.script(path, status=status, body="no")
        r = a.get(path, method="POST", body=b"x")
        expect_eq(r.status, status, f"POST answered {status}")
        origin.script(path, status=200, body="v{n}")
        expect_hit(a.get(path), f"GET after a POST answered {status}")
        expect_hit(b.get(path), f"GET on b after a POST answered {status}")
    expect_eq(a.counters()["invalidations"], 4, "invalidations after failed POSTs")

    # Every variant goes with the URL.
    for lang in ("en", "fr"):
        expect_stored(a.get(var, headers={"X-Lang": lang}), f"{var} {lang}")
    ids = variant_ids(redis, var)
    expect_eq(len(ids), 2, "variants before the DELETE")
    expect_eq(a.get(var, method="DELETE").status, 200, "DELETE")
    expect_eq(next_message(sub), (PURGE_CHANNEL, cache_key(var)), "DELETE broadcast")
    left = [k for k in [entry_key(var), variants_key(var)] +
            [f"{entry_key(var)}:{vid}" for vid in ids] if redis.exists(k)]
    expect_eq(left, [], "keys of the URL left after the DELETE")
    r = b.get(var, headers={"X-Lang": "fr"})
    expect_stored(r, f"{var} fr after the DELETE")
    sub.close()


@scenario
def get_right_after_a_successful_post_is_not_served_from_memory(env):
    # The instance that forwarded the POST knows at once that its URL's
    # entry is invalid: its own near-cache copy must not outlive the POST's
    # answer. Waiting for its own pub/sub broadcast is a race a quick GET
    # can win; CLIENT PAUSE holds Redis (the invalidation and its
    # broadcast with it) so that the GET always comes first.
    path, pause_s = "/post/doc", min(slow(1.5), 5.0)
    redis, origin = env.redis(), env.origin()
    origin.script(path, body="v{n}")
    corral = env.corral(redis, origin, extra={"redis": {"timeout": "250ms"}})
    expect_stored(corral.get(path), "first GET")
    expect_hit(corral.get(path), "second GET (the entry is in memory now)")

    pauser = RespClient(redis.host, redis.port)
    try:
        expect_eq(pauser.command("CLIENT", "PAUSE", str(int(pause_s * 1000))), b"OK",
                  "CLIENT PAUSE")
    finally:
        pauser.close()
    t_pause = time.monotonic()
    post = corral.get(path, method="POST", body=b"x")
    expect_eq((post.status, post.cache_status.fwd), (200, "method"), "POST")
    after = corral.get(path)
    expect(time.monotonic() - t_pause < pause_s,
           "the POST and the GET were answered during the pause")
    expect(not after.cache_status.hit and after.text != "v1",
           f"GET right after a successful POST: not the old entry from memory "
           f"({after.status} {after.text!r} {after.cache_status.raw!r})")

    wait_for(lambda: not redis.exists(entry_key(path)), timeout=pause_s + 3,
             what="the invalidation to reach Redis after the pause")
    expect_stored(corral.get(path), "GET after the pause")
    expect_eq(corral.counters()["invalidations"], 1, "invalidations")


@scenario
def unsafe_request_invalidates_the_entry_of_a_sort_query_route(env):
    # On a sort_query route, GET /list?b=2&a=1 is stored under the key of
    # ?a=1&b=2. A successful POST to the very same URL must drop it.
    redis, origin = env.redis(), env.origin()
    origin.script("/list", body="v{n}")
    corral = env.corral(redis, origin, routes={"/": {"sort_query": "on"}})
    sorted_key = entry_key("/list?a=1&b=2")

    expect_stored(corral.get("/list?b=2&a=1"), "first GET")
    expect(redis.exists(sorted_key), f"stored under the sorted key {sorted_key}")
    heard = purges_received(corral)
    expect_eq(corral.get("/list?b=2&a=1", method="POST", body=b"x").status, 200, "POST")
    wait_for(lambda: purges_received(corral) > heard, what="the invalidation to run")
    expect(not redis.exists(sorted_key),
           f"the POST to /list?b=2&a=1 dropped {sorted_key}; keys: {redis.entry_keys()}")
    expect_stored(corral.get("/list?a=1&b=2"), "GET after the POST")


@scenario
def purge_by_url_and_by_prefix_drops_entries_everywhere(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/p/c", headers={"Vary": "X-Lang"}, body="lang={h:X-Lang}")
    a, b = env.fleet(2, redis, origin)
    sub = subscribe(redis)

    # Wrong uses.
    expect_eq(admin(a, "GET", "/purge?" + urlencode({"url": f"http://{HOST}/x"})).status,
              405, "GET /purge")
    expect_eq(admin(a, "POST", "/purge").status, 400, "POST /purge without parameters")
    expect_eq(purge(a, prefix="").status, 400, "POST /purge?prefix=")
    expect_eq(purge(a, url="not a url").status, 400, "POST /purge?url=not a url")

    # By URL: the entry, in Redis and in every instance's memory.
    for path in ("/u/1?q=1", "/u/2"):
        expect_stored(a.get(path), path)
        expect_hit(b.get(path), f"{path} on b")
    heard = purges_received(b)
    r = purge(a, url=f"http://{HOST}/u/1?q=1")
    expect_eq((r.status, r.json()), (200, {"purged": 1}), "purge by URL")
    expect_eq(next_message(sub), (PURGE_CHANNEL, cache_key("/u/1?q=1")), "broadcast")
    expect(not redis.exists(entry_key("/u/1?q=1")), "purged entry gone from Redis")
    wait_for(lambda: purges_received(b) > heard, what="b to hear of the purge")
    expect_stored(b.get("/u/1?q=1"), "b after the purge (no copy left in memory)")
    expect_hit(b.get("/u/2"), "another URL is untouched")
    r = purge(a, url=f"http://{HOST}/u/never")
    expect_eq((r.status, r.json()), (200, {"purged": 0}), "purge of a URL never stored")
    next_message(sub)

    # By prefix: every key under it, with its variants; nothing else.
    for path, headers in (("/p/a", {}), ("/p/b?x=1", {}), ("/p/c", {"X-Lang": "en"}),
                          ("/p/c", {"X-Lang": "fr"}), ("/px", {}), ("/q", {})):
        expect_stored(a.get(path, headers=headers), f"{path} {headers}")
    expect_eq(len(variant_ids(redis, "/p/c")), 2, "variants of /p/c")
    r = purge(a, prefix=f"{HOST}/p/")
    expect_eq((r.status, r.json()), (200, {"purged": 3}), "purge by prefix")
    heard = sorted(next_message(sub)[1] for _ in range(3))
    expect_eq(heard, sorted(cache_key(p) for p in ("/p/a", "/p/b?x=1", "/p/c")),
              "one broadcast per purged key")
    left = [p for p in ("/p/a", "/p/b?x=1", "/p/c", "/px", "/q") if redis.exists(entry_key(p))]
    expect_eq(left, ["/px", "/q"], "entries left after the prefix purge")
    expect_eq(variant_ids(redis, "/p/c"), [], "variants of /p/c after the purge")
    r = purge(a, prefix=f"http://{HOST.upper()}:80/px")
    expect_eq((r.status, r.json()), (200, {"purged": 1}), "purge by http://HOST:80/prefix")
    expect(redis.exists(entry_key("/q")), "/q is untouched")
    expect_eq(origin.count("/q"), 1, "origin requests for /q")
    sub.close()


# -- 6. HEAD, Age, Date, Via -------------------------------------------------------------------

@scenario
def head_cold_miss_fetches_with_get_and_stores(env):
    path = "/h/doc"
    redis, origin = env.redis(), env.origin()
    origin.script(path, body="a body of some length {n}")
    corral = env.corral(redis, origin)

    head = corral.get(path, method="HEAD")
    expect_stored(head, "HEAD cold miss")
    expect_eq(head.body, b"", "HEAD body")
    expect_eq(head.headers.get("Content-Length"), str(len("a body of some length 1")),
              "HEAD Content-Length: the GET body's")
    get = corral.get(path)
    expect_hit(get, "GET after the HEAD")
    expect_eq(get.text, "a body of some length 1", "GET body")
    expect_eq(origin.path_stats(path)["methods"], {"GET": 1}, "origin requests by method")


@scenario
def age_date_and_via_on_cached_and_passed_through_responses(env):
    aged, undated, plain = "/d/aged", "/d/undated", "/d/plain"
    origin_date = "Wed, 21 Oct 2015 07:28:00 GMT"
    redis, origin = env.redis(), env.origin()
    origin.script(aged, headers={"Age": "100", "Via": "1.0 edge"}, date=origin_date)
    origin.script(undated, date=False)
    corral = env.corral(redis, origin, routes={"/": {"ttl": "60s"}})

    miss = corral.get(aged)
    expect_stored(miss, aged)
    expect_single(miss, "Age", "100", "miss")
    expect_single(miss, "Date", origin_date, "miss")
    expect_single(miss, "Via", "1.0 edge, 1.1 corral", "miss")

    def aged_hit():
        r = corral.get(aged)
        return r if r.headers.get_all("Age") != ["100"] else None
    hit = wait_for(aged_hit, timeout=5, interval=0.1, what="a hit with more Age")
    expect_hit(hit, "hit")
    ages = hit.headers.get_all("Age")
    expect(len(ages) == 1 and 101 <= int(ages[0]) <= 103,
           f"one Age: the origin's plus the time in the cache: {ages}")
    expect_single(hit, "Date", origin_date, "hit")
    expect_single(hit, "Via", "1.0 edge, 1.1 corral", "hit")
    head = corral.get(aged, method="HEAD")
    expect_single(head, "Via", "1.0 edge, 1.1 corral", "HEAD hit")

    bypass = corral.get(aged, headers={"Authorization": "Bearer t"})
    expect_eq(bypass.cache_status.fwd, "bypass", "a request with Authorization")
    expect_single(bypass, "Age", "100", "passed through")
    expect_single(bypass, "Via", "1.0 edge, 1.1 corral", "passed through")
    post = corral.get(aged, method="POST", body=b"x")
    expect_single(post, "Via", "1.0 edge, 1.1 corral", "POST passed through")

    first = corral.get(undated)
    expect_stored(first, undated)
    stored_date = first.headers.get_all("Date")
    expect_eq(len(stored_date), 1, "one Date on the miss")

    def later_hit():
        r = corral.get(undated)
        return r if int(r.headers.get("Age", "0")) >= 1 else None
    later = wait_for(later_hit, timeout=5, interval=0.1, what="a hit a second later")
    expect_eq(later.headers.get_all("Date"), stored_date,
              "without an origin Date: the time it was stored, not now")
    expect_single(corral.get(plain), "Via", "1.1 corral", "no origin Via")


@scenario
def via_keeps_every_via_line_of_the_origin(env):
    path = "/d/two-hops"
    redis, origin = env.redis(), env.origin()
    origin.script(path, headers=[["Via", "1.0 a"], ["Via", "1.1 b"]])
    corral = env.corral(redis, origin)

    for what, r in (("miss", corral.get(path)), ("hit", corral.get(path))):
        expect_eq(", ".join(r.headers.get_all("Via")), "1.0 a, 1.1 b, 1.1 corral",
                  f"{what}: Via (both origin hops, then corral)")
