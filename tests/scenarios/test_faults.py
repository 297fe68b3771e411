# SPDX-License-Identifier: MIT
"""Faults: a failing origin (the fleet-wide outage backoff, stale_if_error,
waiters of a failed fetch), a lock holder that dies, a client that leaves,
and Redis down, killed, restarted or too slow. Corral fails open: every
request is answered, within a stated bound, and the origin is not
stampeded while it is failing.

Every request here is answered within REQUEST_BOUND_S (times the harness's
SLOWNESS) unless a scenario says otherwise.
"""

import os
import signal
import time

from harness import (Background, RespClient, backoff_key, entry_key, expect,
                     expect_entry, expect_entry_pttl, expect_eq, expect_pttl, fails_key,
                     fleet_counters, free_port, get_request, lock_key,
                     paced, raw_exchange, scenario, send_and_leave,
                     slow, stale_fleet, stampede, wait_for, wait_until_stale)

PATH = "/users/1"
REQUEST_BOUND_S = 3.0		# no request waits longer than this for an answer
BACKOFF_FIRST_MS = 1000		# the first pause after a failed refresh


def expect_backoff_answer(r, status, what):
    """An error made by Corral while the key backs off: no origin contact."""
    expect_eq((r.status, r.cache_status.raw), (status, "corral; detail=error-backoff"),
              f"{what}: status and Cache-Status")


def expect_fetched(r, status, what, body=None):
    cs = r.cache_status
    expect_eq((r.status, cs.fwd, cs.fwd_status, cs.stored, cs.detail),
              (status, "miss", status, False, None),
              f"{what}: status, fwd, fwd-status, stored, detail ({cs.raw!r})")
    if body is not None:
        expect_eq(r.body, body, f"{what}: body")


def expect_bounded(results, what):
    slowest = max(r.elapsed for r in results)
    expect(slowest < slow(REQUEST_BOUND_S),
           f"{what}: slowest answer took {slowest:.2f} s (bound {slow(REQUEST_BOUND_S)} s)")


def redis_up(corral):
    return corral.stats()["redis"]["up"] is True


# -- a failing origin: the outage backoff -------------------------------------------

@scenario
def failing_refresh_of_stale_key_backs_off_fleet_wide(env):
    # 50 requests over about a second, through three instances, for a stale
    # key whose origin answers 503. Every one is a stale hit. The first
    # refresh fails and starts a backoff (1 s, then 2 s) that every
    # instance sees in Redis, so the origin gets at most a few refreshes,
    # not one per request or per instance. (Each instance asks for the
    # lock at most once per lock_poll while it serves its stale copy; the
    # asks after the failure are the backoff's skips.)
    clients = 50
    redis, origin, fleet = stale_fleet(env, 3, PATH)
    origin.script(PATH, status=503, body="down")

    results = paced(clients, 1.0, lambda i: fleet[i % 3].get(PATH))

    expect_eq(sorted({(r.status, r.text) for r in results}), [(200, "v1")],
              "statuses and bodies: every client gets the stale 200")
    not_stale = [r for r in results if not r.cache_status.stale]
    expect_eq(not_stale, [], "responses that are not stale hits (corral; hit; ttl=-N)")
    expect_bounded(results, "stale hits")
    refreshes = origin.count(PATH) - 1
    expect(1 <= refreshes <= 3,
           f"origin requests after the prime: expected 1 to 3, got {refreshes}")
    wait_for(lambda: fleet_counters(fleet)["upstream_errors"] == refreshes and
             not redis.exists(lock_key(PATH)), what="the failed refreshes to release the lock")
    expect_eq(redis.get(fails_key(PATH)), str(refreshes), "failures counted in Redis")
    c = fleet_counters(fleet)
    expect_eq(c["stale_hits"], clients, "stale_hits")
    expect(c["backoff_skips"] >= 2,
           f"backoff_skips: expected the refreshes asked for after the failure to "
           f"be skipped, got {c['backoff_skips']}")
    expect(sum(1 for f in fleet if f.counters()["backoff_skips"] > 0) >= 2,
           "the backoff is seen by more than one instance")
    expect_eq((c["stores"], c["errors"]), (1, 0), "stores (the prime only), errors")
    expect_entry(redis, PATH)


@scenario
def failing_cold_key_is_answered_from_the_backoff(env):
    # With error_backoff_after = 1: the first request gets the origin's
    # 503; for the next second every request for the key gets it again
    # from the backoff, without a fetch; then one request reaches the
    # origin again and the pause doubles.
    redis, origin = env.redis(), env.origin()
    origin.script(PATH, status=503, body="down")
    corral = env.corral(redis, origin, routes={"/": {"error_backoff_after": "1"}})

    first = corral.get(PATH)
    t_failed = time.monotonic()
    expect_fetched(first, 503, "the first request", body=b"down")
    expect_eq(redis.get(backoff_key(PATH)), "503", "the backoff records the failure")
    pttl = redis.pttl(backoff_key(PATH))
    expect(0 < pttl <= BACKOFF_FIRST_MS, f"first backoff PTTL: expected <= 1000, got {pttl}")

    during = [corral.get(PATH) for _ in range(3)]	# a few ms each: inside the 1 s
    for i, r in enumerate(during, start=1):
        expect_backoff_answer(r, 503, f"request {i} during the backoff")
    expect_eq(origin.count(PATH), 1, "origin requests during the backoff")
    c = corral.counters()
    expect_eq((c["backoff_skips"], c["errors"], c["upstream_fetches"]), (3, 3, 1),
              "backoff_skips, errors, upstream_fetches")

    def refetched():
        r = corral.get(PATH)
        return r if r.cache_status.fwd == "miss" else None
    again = wait_for(refetched, timeout=3, interval=0.05,
                     what="a request to reach the origin once the backoff expired")
    expect(time.monotonic() - t_failed >= BACKOFF_FIRST_MS / 1000 * 0.9,
           "the origin was asked again before the first backoff (1 s) ran out")
    expect_fetched(again, 503, "the request after the backoff")
    expect_eq(origin.count(PATH), 2, "origin requests")
    expect_eq(redis.get(fails_key(PATH)), "2", "failures counted in Redis")
    pttl = redis.pttl(backoff_key(PATH))
    expect(BACKOFF_FIRST_MS < pttl <= 2 * BACKOFF_FIRST_MS,
           f"second backoff PTTL: expected 1000 < PTTL <= 2000 (doubled), got {pttl}")


@scenario
def error_backoff_answers_504_after_timeout_and_502_after_refused(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/slow", delay_ms=2000)
    timing_out = env.corral(redis, origin, extra={"upstream": {"timeout": "300ms"}},
                            routes={"/": {"error_backoff_after": "1"}})
    closed = f"http://127.0.0.1:{free_port()}"	# nothing listens: connection refused
    refused = env.corral(redis, closed, routes={"/": {"error_backoff_after": "1"}})

    for corral, path, status, failure in ((timing_out, "/slow", 504, "timeout"),
                                          (refused, "/down", 502, None)):
        first = corral.get(path)
        expect_eq((first.status, first.cache_status.detail), (status, "upstream-error"),
                  f"{path}: the failed fetch ({first.cache_status.raw!r})")
        if failure:
            expect_eq(redis.get(backoff_key(path)), failure, f"{path}: backoff value")
        else:
            expect(redis.exists(backoff_key(path)), f"{path}: no backoff after a refused connect")
        second = corral.get(path)
        expect_backoff_answer(second, status, f"{path}: the next request")
    expect_eq(origin.count("/slow"), 1, "origin requests for /slow")
    for corral in (timing_out, refused):
        c = corral.counters()
        expect_eq((c["upstream_fetches"], c["backoff_skips"], c["errors"]), (1, 1, 2),
                  f"{corral.name}: upstream_fetches, backoff_skips, errors")


@scenario
def error_backoff_is_capped_and_ended_by_a_store(env):
    cap_ms = 1800	# under the doubled 2 s, above the first 1 s
    redis, origin = env.redis(), env.origin()
    origin.script(PATH, status=503, body="down")
    corral = env.corral(redis, origin, routes={"/": {"error_backoff": f"{cap_ms}ms",
                                                     "error_backoff_after": "1"}})

    expect_fetched(corral.get(PATH), 503, "failure 1")
    pttl = redis.pttl(backoff_key(PATH))
    expect(0 < pttl <= BACKOFF_FIRST_MS, f"backoff after failure 1: PTTL {pttl}")
    wait_for(lambda: not redis.exists(backoff_key(PATH)), timeout=3,
             what="the first backoff to expire")
    t0 = time.monotonic()
    expect_fetched(corral.get(PATH), 503, "failure 2")
    # 2000 ms capped.
    expect_pttl(redis, backoff_key(PATH), cap_ms, since=t0, over_ms=0)
    expect_eq(redis.get(fails_key(PATH)), "2", "failures counted")

    origin.script(PATH, status=200, body="back")
    expect_backoff_answer(corral.get(PATH), 503, "a request while the origin is back "
                          "but the backoff runs")
    wait_for(lambda: not redis.exists(backoff_key(PATH)), timeout=3,
             what="the second backoff to expire")
    r = corral.get(PATH)
    expect_eq((r.status, r.text, r.cache_status.stored), (200, "back", True),
              f"the first request after the backoff ({r.cache_status.raw!r})")
    expect(not redis.exists(fails_key(PATH)) and not redis.exists(backoff_key(PATH)),
           f"the store clears the failure count and the backoff: {redis.keys()}")
    expect_eq(origin.count(PATH), 3, "origin requests")


# -- stale_if_error ------------------------------------------------------------------

@scenario
def stale_if_error_serves_an_expired_entry_when_the_origin_fails(env):
    # /sie/ keeps an entry 60 s past its ttl for errors only; /plain/ does
    # not. No stale_while_revalidate and no backoff: every request past the
    # ttl tries the origin.
    sie = {"ttl": "1s", "stale_while_revalidate": "0", "stale_if_error": "60s",
           "error_backoff": "0"}
    plain = {"ttl": "1s", "stale_while_revalidate": "0", "error_backoff": "0"}
    redis, origin = env.redis(), env.origin()
    origin.script("*", body="v{n}")
    corral = env.corral(redis, origin, routes={"/sie/": sie, "/plain/": plain})

    for path in ("/sie/a", "/plain/a"):
        r = corral.get(path)
        expect_eq((r.status, r.text, r.cache_status.stored), (200, "v1", True), f"prime {path}")
    expect_entry_pttl(redis, "/sie/a", 1_000 + 60_000)
    wait_until_stale(redis, "/sie/a", swr_ms=60_000)
    wait_for(lambda: not redis.exists(entry_key("/plain/a")), timeout=3,
             what="/plain/a's entry to expire with its ttl")

    origin.script("*", status=503, body="down")
    r = corral.get("/sie/a")
    cs = r.cache_status
    expect_eq((r.status, r.text), (200, "v1"), "the stale entry instead of the 503")
    expect_eq((cs.fwd, cs.fwd_status, cs.detail), ("stale", 503, "stale-if-error"),
              f"Cache-Status fwd, fwd-status, detail ({cs.raw!r})")
    expect(cs.ttl is not None and cs.ttl <= -1, f"Cache-Status ttl=-N: {cs.raw!r}")
    expect("Age" in r.headers, "a stale-if-error answer carries Age")
    expect_fetched(corral.get("/plain/a"), 503, "without stale_if_error", body=b"down")

    origin.stop()		# connection refused from now on
    r = corral.get("/sie/a")
    cs = r.cache_status
    expect_eq((r.status, r.text), (200, "v1"), "the stale entry instead of a 502")
    expect_eq((cs.fwd, cs.fwd_status, cs.detail), ("stale", None, "stale-if-error"),
              f"no fwd-status after a connect error ({cs.raw!r})")
    r = corral.get("/plain/a")
    expect_eq((r.status, r.cache_status.detail), (502, "upstream-error"),
              f"without stale_if_error, refused ({r.cache_status.raw!r})")

    routes = corral.stats()["routes"]
    expect_eq((routes["/sie/"]["stale_hits"], routes["/sie/"]["stale_if_error"]), (2, 2),
              "/sie/ stale_hits, stale_if_error")
    expect_eq((routes["/plain/"]["stale_hits"], routes["/plain/"]["stale_if_error"]), (0, 0),
              "/plain/ stale_hits, stale_if_error")
    expect_entry(redis, "/sie/a")
    expect_eq(redis.keys("*:lock"), [], "locks left")


@scenario
def stale_if_error_window_runs_from_the_end_of_freshness_not_of_staleness(env):
    # ttl 1 s, stale_while_revalidate 2 s, stale_if_error 4 s: served stale
    # to age 3 s, on errors to age 5 s (RFC 5861: both count from the end
    # of freshness), never after, though Redis keeps the entry for its ETag.
    ttl_ms, swr_ms, sie_ms, keep_ms = 1_000, 2_000, 4_000, 60_000
    route = {"ttl": "1s", "stale_while_revalidate": "2s", "stale_if_error": "4s",
             "error_backoff": "0"}
    redis, origin = env.redis(), env.origin()
    origin.script(PATH, body="v{n}", etag='"e1"')
    corral = env.corral(redis, origin, routes={"/": route})
    expect(corral.get(PATH).cache_status.stored, "primed")

    def age_ms():	# the entry is kept keep_ms from its store (validators)
        return keep_ms - redis.pttl(entry_key(PATH))

    origin.script(PATH, status=503, body="down", etag='"e1"')
    wait_for(lambda: age_ms() > ttl_ms + swr_ms + 200, timeout=10,
             what="the entry to leave stale_while_revalidate")
    r = corral.get(PATH)
    served_at = age_ms()
    expect(served_at < ttl_ms + sie_ms, f"too slow to test inside the window ({served_at} ms)")
    expect_eq((r.status, r.text, r.cache_status.detail), (200, "v1", "stale-if-error"),
              f"inside stale_if_error, past stale_while_revalidate (age {served_at} ms)")

    wait_for(lambda: age_ms() > ttl_ms + sie_ms + 200, timeout=10,
             what="stale_if_error to run out")
    r = corral.get(PATH)
    served_at = age_ms()
    expect(served_at < ttl_ms + swr_ms + sie_ms,
           f"too slow to test the closed window ({served_at} ms)")
    expect_eq((r.status, r.text), (503, "down"),
              f"past stale_if_error (age {served_at} ms): the origin's error, not the entry")
    expect_eq(origin.count(PATH), 3, "origin requests")


# -- waiters of a failed fetch ---------------------------------------------------------

def expect_one_fetch_and_its_waiters(results, status, body):
    """One client fetched (status, not stored); the others waited for that
    fetch and got its answer (collapsed)."""
    fetched = [r for r in results if not r.cache_status.collapsed]
    expect_eq(len(fetched), 1, f"clients answered by their own fetch: {results}")
    expect_fetched(fetched[0], status, "the fetching client", body=body)
    for r in results:
        if r is not fetched[0]:
            cs = r.cache_status
            expect_eq((r.status, r.body, cs.fwd, cs.fwd_status, cs.stored),
                      (status, body, "miss", status, False),
                      f"a waiting client: status, body, fwd, fwd-status, stored ({cs.raw!r})")


@scenario
def waiters_of_a_failed_fetch_get_its_error_without_a_backoff(env):
    # Without a backoff too, the waiters of a failed fetch get its answer
    # (the origin's 503) instead of each taking the lock over in turn; the
    # lock is released, so the next request fetches at once.
    clients, fetch_ms = 5, 1000	# long enough for all five to join it
    redis, origin = env.redis(), env.origin()
    origin.script(PATH, status=503, delay_ms=fetch_ms, body="down")
    corral = env.corral(redis, origin, routes={"/": {"error_backoff": "0"}})

    results = stampede(corral, clients, PATH)

    expect_one_fetch_and_its_waiters(results, 503, b"down")
    expect_eq(origin.count(PATH), 1, "origin requests")
    c = corral.counters()
    expect_eq((c["misses"], c["collapsed"], c["upstream_fetches"], c["locks_acquired"],
               c["stores"], c["backoff_skips"]), (1, clients - 1, 1, 1, 0, 0),
              "misses, collapsed, upstream_fetches, locks_acquired, stores, backoff_skips")
    expect_eq(redis.keys("*:backoff"), [], "backoff keys with error_backoff = 0")
    expect_eq(redis.keys("*:lock"), [], "locks left")

    r = corral.get(PATH)
    expect_fetched(r, 503, "the next request", body=b"down")
    expect(r.elapsed < slow(REQUEST_BOUND_S), f"the next request took {r.elapsed:.2f} s")
    expect_eq(origin.count(PATH), 2, "origin requests with the next one")


@scenario
def waiters_of_a_failed_fetch_get_its_error_then_the_backoff_answers(env):
    # error_backoff_after 1: the failure starts the backoff. Its waiters got
    # its 503; the next request gets the backoff's answer, from Redis.
    clients = 5
    redis, origin = env.redis(), env.origin()
    origin.script(PATH, status=503, delay_ms=1000, body="down")
    corral = env.corral(redis, origin, routes={"/": {"error_backoff_after": "1"}})

    results = stampede(corral, clients, PATH)

    expect_one_fetch_and_its_waiters(results, 503, b"down")
    r = corral.get(PATH)
    expect_backoff_answer(r, 503, "the next request")
    expect_eq(r.body, b"down", "the next request's body: the origin's own error")
    expect_eq(origin.count(PATH), 1, "origin requests")
    c = corral.counters()
    expect_eq((c["upstream_fetches"], c["errors"], c["misses"], c["collapsed"],
               c["backoff_skips"]), (1, 1, 1, clients - 1, 1),
              "upstream_fetches, errors, misses, collapsed, backoff_skips")


# -- a lock holder dies, a client leaves ------------------------------------------------

@scenario
def killed_lock_holder_is_taken_over_by_another_instance(env):
    clients = 5
    redis, origin = env.redis(), env.origin()
    origin.script(PATH, hold=True, body="v{n}")
    a, b = env.fleet(2, redis, origin, routes={"/": {
        "lock_ttl": "1s", "lock_wait": "5s", "lock_poll": "200ms"}})

    orphan = Background(raw_exchange, a.host, a.port, get_request(PATH))
    wait_for(lambda: origin.held(PATH) == 1 and redis.exists(lock_key(PATH)),
             what="instance A to hold the lock and reach the origin")
    # B's clients wait on A's lock before A dies, however long the kill
    # takes: the lock (1 s) may not run out before they find it held.
    waiters = Background(stampede, b, clients, PATH)
    wait_for(lambda: b.stats()["in_progress"]["requests"] == clients and
             b.counters()["lock_busy"] >= 1,
             what="B's clients to wait on A's lock")
    a.kill()
    orphan.result()		# its connection ends with A
    origin.release(PATH)	# B's fetch, once the lock has run out, is not held
    results = waiters.result()

    expect_eq(sorted({(r.status, r.body) for r in results}), [(200, b"v2")],
              "B's clients get B's own fetch")
    expect_eq(sum(r.cache_status.stored for r in results), 1, "stored answers")
    expect_eq(sum(r.cache_status.collapsed for r in results), clients - 1, "collapsed answers")
    expect_bounded(results, "B's clients")
    expect_eq(origin.count(PATH), 2, "origin requests: A's orphaned fetch and B's")
    c = b.counters()
    expect(c["lock_busy"] >= 1, f"B lock_busy: {c['lock_busy']}")
    expect_eq((c["locks_acquired"], c["lock_takeovers"], c["lock_wait_timeouts"], c["stores"]),
              (1, 1, 0, 1), "B locks_acquired, lock_takeovers, lock_wait_timeouts, stores")
    expect_eq(redis.get(entry_key(PATH))[-2:], "v2", "the stored body")


@scenario
def clients_that_leave_do_not_stop_the_refresh(env):
    redis, origin = env.redis(), env.origin()
    origin.script(PATH, hold=True, body="v{n}")
    corral = env.corral(redis, origin)

    def in_progress():
        return corral.stats()["in_progress"]["requests"]

    # A proxied POST whose client leaves while the origin holds it.
    origin.script("/items", hold=True, body="created")
    send_and_leave(corral.host, corral.port,
                   b"POST /items HTTP/1.1\r\nHost: app.test\r\nContent-Length: 2\r\n\r\nhi")
    wait_for(lambda: origin.held("/items") == 1, what="the POST to reach the origin")

    send_and_leave(corral.host, corral.port, get_request(PATH))	# the flight's lead
    wait_for(lambda: origin.held(PATH) == 1, what="the fetch to reach the origin")
    send_and_leave(corral.host, corral.port, get_request(PATH))	# a waiter
    # Their requests end as their clients leave; the POST that went, and
    # the fetch the flight sent, go on.
    wait_for(lambda: corral.counters()["client_gone"] == 2 and in_progress() == 1,
             what="the two GETs whose clients left to end")
    stays = Background(corral.get, PATH)
    wait_for(lambda: in_progress() == 2, what="corral to read the third request")
    origin.release(PATH)
    origin.release("/items")

    r = stays.result()
    expect_eq((r.status, r.text, r.cache_status.collapsed), (200, "v1", True),
              f"the client that stayed ({r.cache_status.raw!r})")
    expect_entry(redis, PATH)
    wait_for(lambda: in_progress() == 0, what="every request, gone or not, to finish")
    hit = corral.get(PATH)
    expect_eq((hit.status, hit.text, hit.cache_status.hit), (200, "v1", True), "the next request")
    expect_eq((origin.count(PATH), origin.count("/items")), (1, 1), "origin requests")
    c = corral.counters()
    expect_eq((c["requests"], c["stores"], c["misses"], c["collapsed"], c["hits"], c["bypass"],
               c["client_gone"], c["errors"]), (5, 1, 0, 1, 1, 1, 2, 0),
              "requests, stores, misses, collapsed, hits, bypass, client_gone, errors")
    # Env's stop() then checks that corral exits cleanly, without leaks.


# -- Redis faults ---------------------------------------------------------------------

@scenario
def redis_down_at_start_fails_open_then_reconnects(env):
    port = free_port()
    origin = env.origin()
    origin.script(PATH, body="v{n}")
    corral = env.corral(f"127.0.0.1:{port}", origin, wait_redis=False)
    expect_eq(corral.stats()["redis"]["up"], False, "/stats redis.up without Redis")

    for n in (1, 2):
        r = corral.get(PATH)
        cs = r.cache_status
        expect_eq((r.status, r.text, cs.fwd, cs.fwd_status, cs.detail),
                  (200, f"v{n}", "miss", 200, "cache-unavailable"),
                  f"request {n} without Redis ({cs.raw!r})")
        expect(r.elapsed < slow(REQUEST_BOUND_S), f"request {n} took {r.elapsed:.2f} s")

    redis = env.redis(port=port)
    wait_for(lambda: redis_up(corral) and redis.subscribers() == 1, timeout=10,
             what="corral to reconnect (backoff 100 ms doubling to 5 s) and subscribe")
    r = corral.get(PATH)
    expect_eq((r.status, r.text, r.cache_status.stored), (200, "v3", True),
              f"stored once Redis is up ({r.cache_status.raw!r})")
    r = corral.get(PATH)
    expect_eq((r.status, r.text, r.cache_status.hit), (200, "v3", True), "then a hit")
    expect_eq(origin.count(PATH), 3, "origin requests")
    stats = corral.stats()
    expect(stats["redis"]["connects"] >= 1, f"redis.connects: {stats['redis']}")
    expect_eq(stats["total"]["misses"], 3, "misses")


@scenario
def redis_killed_mid_run_degrades_then_recovers(env):
    burst = 10
    redis, origin = env.redis(), env.origin()
    origin.script("*", body="v{n}")
    fleet = env.fleet(2, redis, origin, routes={"/": {"lock_poll": "5s"}})
    expect(fleet[0].get("/before").cache_status.stored, "stored while Redis is up")

    redis.kill()
    r = fleet[0].get("/before")
    expect_eq((r.status, r.text, r.cache_status.hit), (200, "v1", True),
              "a fresh entry this process stored: still served from its memory")
    r = fleet[0].get("/gone")
    expect_eq((r.status, r.text, r.cache_status.detail), (200, "v1", "cache-unavailable"),
              "answered by the origin just after Redis died")
    expect(r.elapsed < slow(REQUEST_BOUND_S), f"the first request took {r.elapsed:.2f} s")
    wait_for(lambda: not redis_up(fleet[0]) and not redis_up(fleet[1]),
             what="both instances to see Redis down")

    # A burst on one instance still shares one fetch.
    origin.script("/burst", hold=True, body="v{n}")
    clients = Background(stampede, fleet[0], burst, "/burst")
    wait_for(lambda: origin.held("/burst") == 1 and
             fleet[0].stats()["in_progress"]["requests"] == burst,
             what="the burst to wait on one degraded fetch")
    origin.release("/burst")
    results = clients.result()
    expect_eq(sorted({(r.status, r.body) for r in results}), [(200, b"v1")],
              "statuses and bodies of the burst")
    expect_bounded(results, "the burst (held until released)")
    expect_eq(sum(r.cache_status.detail == "cache-unavailable" for r in results), 1,
              f"the degraded fetch's answer: {results[:3]}")
    expect_eq(origin.count("/burst"), 1, "origin requests for the burst")

    revived = env.redis(port=redis.port)
    wait_for(lambda: redis_up(fleet[0]) and redis_up(fleet[1]) and revived.subscribers() == 2,
             timeout=10, what="both instances to reconnect and resubscribe")
    origin.script("/after", delay_ms=300, body="v{n}")
    results = stampede(fleet, 20, "/after")
    expect_eq(sorted({(r.status, r.body) for r in results}), [(200, b"v1")],
              "a cold stampede after the restart")
    expect_eq(origin.count("/after"), 1, "origin requests for the cold stampede")
    expect_eq(sum(r.cache_status.stored for r in results), 1, "stored answers")
    for f in fleet:
        redis_stats = f.stats()["redis"]
        expect(redis_stats["disconnects"] >= 1 and redis_stats["connects"] >= 2,
               f"{f.name} redis counters: {redis_stats}")


@scenario
def slow_redis_past_its_timeout_is_bypassed(env):
    # CLIENT PAUSE holds every Redis reply for pause_s; [redis] timeout is
    # 250 ms, so each request gives up on Redis and is answered well before
    # the pause ends.
    pause_s = min(slow(4.0), 8.0)
    redis, origin = env.redis(), env.origin()
    origin.script("*", body="v{n}")
    corral = env.corral(redis, origin, extra={"redis": {"timeout": "250ms"}})
    expect(corral.get(PATH).cache_status.stored, "stored before the pause")

    pauser = RespClient(redis.host, redis.port)
    try:
        t_pause = time.monotonic()
        expect_eq(pauser.command("CLIENT", "PAUSE", str(int(pause_s * 1000))), b"OK",
                  "CLIENT PAUSE")
    finally:
        pauser.close()
    during = [corral.get(PATH), corral.get("/other"), corral.get("/third")]
    answered = time.monotonic() - t_pause
    expect(answered < pause_s - 1.5,
           f"requests answered {answered:.2f} s into a {pause_s} s Redis pause")
    r = during.pop(0)
    expect_eq((r.status, r.body, r.cache_status.hit), (200, b"v1", True),
              f"the fresh entry in memory during the pause ({r.cache_status.raw!r})")
    for r in during:
        cs = r.cache_status
        expect_eq((r.status, r.body, cs.detail), (200, b"v1", "cache-unavailable"),
                  f"a request during the pause ({cs.raw!r})")
    stats = corral.stats()
    expect(stats["redis"]["timeouts"] >= 2, f"redis.timeouts: {stats['redis']}")
    expect_eq(stats["redis"]["up"], True, "redis.up: the connection itself is fine")

    def hit():
        r = corral.get(PATH)
        return r if r.cache_status.hit else None
    r = wait_for(hit, timeout=pause_s + 3, interval=0.1, what="hits once the pause ends")
    expect_eq(r.text, "v1", "the entry stored before the pause")


@scenario
def redis_stall_past_lock_ttl_leaves_no_lock_behind(env):
    # Instance A's fetch holds the lock; the other processes (two instances
    # of two workers) wait and poll it. Redis stops (SIGSTOP) for longer than
    # the lock has left: the polls sent into the stall time out, and their
    # processes fetch without the lock. When Redis resumes it runs those
    # polls, and the first takes the now expired lock for lock_ttl with no
    # fetch behind it. Corral lets such a lock go when the late reply comes:
    # no lock is left, and the next request takes it and stores at once with
    # one origin fetch (not waiting out a stale lock, then fetching unstored).
    lock_ttl_s, clients = 4, 8
    redis, origin = env.redis(), env.origin()
    origin.script(PATH, hold=True, body="v{n}")
    fleet = env.fleet(2, redis, origin, extra={"server": {"workers": "2"}}, routes={"/": {
        "lock_ttl": f"{lock_ttl_s}s", "lock_wait": "10s", "lock_poll": "200ms"}})
    a, b = fleet

    holder = Background(a.get, PATH)
    wait_for(lambda: origin.held(PATH) == 1 and redis.exists(lock_key(PATH)),
             what="instance A to hold the lock and reach the origin")
    waiters = Background(stampede, fleet, clients, PATH)
    wait_for(lambda: sum(f.stats()["in_progress"]["requests"] for f in fleet) == clients + 1
             and b.counters()["lock_busy"] >= 1, what="the clients to wait on A's lock")

    left_ms = redis.pttl(lock_key(PATH))
    barrier = RespClient(redis.host, redis.port, timeout=lock_ttl_s + 30)
    os.kill(redis.proc.pid, signal.SIGSTOP)
    t_stop = time.monotonic()
    try:
        wait_for(lambda: origin.held(PATH) >= 2, timeout=slow(5),
                 what="a poll sent into the stall to time out and fetch without the lock")
        origin.release(PATH)
        results = waiters.result()
        expect_eq(sorted({r.status for r in results}), [200], "statuses during the stall")
        expect_eq(holder.result().status, 200, "the lock holder's answer")
        # Sent before Redis resumes, this PING is answered only once Redis has
        # run every command queued before its resume (the polls among them).
        ping = Background(barrier.command, "PING")
        wait_for(lambda: time.monotonic() - t_stop > left_ms / 1000 + 0.5,
                 timeout=lock_ttl_s + 5, what="Redis stopped past the lock's expiry")
    finally:
        os.kill(redis.proc.pid, signal.SIGCONT)
    t_resume = time.monotonic()
    expect_eq(ping.result(), b"PONG", "the PING queued in the stall")
    barrier.close()

    wait_for(lambda: not redis.exists(lock_key(PATH)), timeout=lock_ttl_s + 5,
             what="the lock to go")
    lingered = time.monotonic() - t_resume
    expect(lingered < lock_ttl_s / 2,
           f"a lock lingered {lingered:.2f} s after Redis resumed, with no fetch behind it "
           f"(lock_ttl {lock_ttl_s} s)")
    fetched = origin.count(PATH)
    r = b.get(PATH)
    cs = r.cache_status
    expect_eq((r.status, cs.stored), (200, True), f"the next request ({cs.raw!r})")
    expect(r.elapsed < slow(REQUEST_BOUND_S), f"the next request took {r.elapsed:.2f} s")
    expect_eq(origin.count(PATH), fetched + 1, "origin requests for the next request")
    expect_eq(redis.keys("*:lock"), [], "locks left")


# -- unreadable data in Redis ---------------------------------------------------------

@scenario
def unreadable_entry_in_redis_is_replaced_by_a_refresh(env):
    # An entry this process cannot decode is treated as an expired stub that
    # a refresh replaces (cache_store.c decode()). One whose first 32 bytes
    # are not a generation (here: a short string some other tool wrote)
    # must be replaced too, not retried for ever.
    redis, origin = env.redis(), env.origin()
    origin.script("*", body="v{n}")
    # log_level error: a corral that loops on the entry logs a line per try.
    corral = env.corral(redis, origin, extra={"server": {"log_level": "error"}})
    for path, junk in (("/junk/short", "not an entry"),
                       ("/junk/upper", "0123456789ABCDEF0123456789ABCDEF and more")):
        redis.cmd("SET", entry_key(path), junk, "PX", 60_000)
        commands_before = corral.stats()["redis"]["commands"]
        try:
            r = corral.get(path, timeout=slow(REQUEST_BOUND_S))
        except OSError as e:
            raise AssertionError(
                f"{path}: no answer within {slow(REQUEST_BOUND_S)} s ({e!r}); corral sent "
                f"{corral.stats()['redis']['commands'] - commands_before} Redis commands "
                "meanwhile: it loops on the unreadable entry") from None
        expect_eq((r.status, r.text, r.cache_status.stored), (200, "v1", True),
                  f"{path}: fetched and stored over the unreadable entry ({r.cache_status.raw!r})")
        commands = corral.stats()["redis"]["commands"] - commands_before
        expect(commands < 20, f"{path}: {commands} Redis commands for one request")
        hit = corral.get(path)
        expect_eq((hit.text, hit.cache_status.hit), ("v1", True), f"{path}: then a hit")


@scenario
def killed_subscription_is_restored_and_waiters_are_woken_again(env):
    # Only the pub/sub connections die (CLIENT KILL TYPE pubsub): each
    # instance subscribes again, and a cold stampede across the fleet is
    # still answered by the "filled" event, not by the 5 s fallback poll.
    redis, origin = env.redis(), env.origin()
    origin.script(PATH, delay_ms=300, body="v{n}")
    fleet = env.fleet(2, redis, origin, routes={"/": {"lock_poll": "5s", "lock_wait": "10s"}})
    expect_eq(redis.cmd("CLIENT", "KILL", "TYPE", "pubsub"), 2, "subscriptions killed")
    wait_for(lambda: redis.subscribers() == 2, timeout=10,
             what="both instances to subscribe again")

    results = stampede(fleet, 20, PATH)

    expect_eq(sorted({(r.status, r.body) for r in results}), [(200, b"v1")], "answers")
    expect_eq(origin.count(PATH), 1, "origin requests")
    done_at = origin.path_stats(PATH)["done_at"][0]
    late = max(r.t_done for r in results) - done_at
    expect(late < slow(1.0), f"last client answered {late:.2f} s after the origin: woken by "
           "the fallback poll, not by the notification")
    expect(sum(f.stats()["redis"]["fills_received"] for f in fleet) >= 1,
           "notifications received after resubscribing")


@scenario
def flushed_scripts_are_sent_again_as_eval(env):
    # SCRIPT FLUSH (or a Redis restart that kept the connection) makes
    # EVALSHA answer NOSCRIPT; the lock and store scripts are then sent
    # whole, once, and the request is served as if nothing happened.
    redis, origin = env.redis(), env.origin()
    origin.script("*", body="v{n}")
    corral = env.corral(redis, origin)
    expect(corral.get("/before").cache_status.stored, "stored before the flush")
    errors_before = corral.stats()["redis"]["errors"]

    expect_eq(redis.cmd("SCRIPT", "FLUSH"), "OK", "SCRIPT FLUSH")
    for path in ("/after1", "/after2"):
        r = corral.get(path)
        expect_eq((r.status, r.text, r.cache_status.stored), (200, "v1", True),
                  f"{path} after the flush ({r.cache_status.raw!r})")
        expect_entry(redis, path)
    expect_eq(corral.stats()["redis"]["errors"], errors_before, "redis.errors")
