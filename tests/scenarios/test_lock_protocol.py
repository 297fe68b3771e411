# SPDX-License-Identifier: MIT
"""The refresh lock's protocol where only its details decide the outcome:
the token compare of release and renew, the generation that tells a
waiter someone else refreshed, a notification that overtakes the reply to
a lock attempt, and one lock attempt per process however many requests
want the key.

Each scenario is the one that fails when the detail it names is changed
(see tests/mutants.py).
"""

import time

from harness import (Background, backoff_key, entry_key, expect, expect_eq, is_token,
                     lock_key, scenario, slow, stale_fleet, stampede, wait_for)

PATH = "/lock/1"
FOREIGN = "f" * 32	# the token of "another fetch" that took the lock over


def take_over_lock(redis, px_ms=None):
    """Replaces the lock's token with FOREIGN, as a fetch elsewhere would
    after ours lost the lock; returns the token it replaced."""
    token = redis.get(lock_key(PATH))
    expect(is_token(token) and token != FOREIGN, f"lock value is a 32-hex token: {token!r}")
    if px_ms is None:
        redis.cmd("SET", lock_key(PATH), FOREIGN)
    else:
        redis.cmd("SET", lock_key(PATH), FOREIGN, "PX", px_ms)
    return token


def hold_cold_fetch(corral, redis, origin):
    """Starts a client whose cold fetch holds the lock and is held at the
    origin; returns the Background client."""
    client = Background(corral.get, PATH)
    wait_for(lambda: origin.held(PATH) == 1 and redis.exists(lock_key(PATH)),
             what="the cold fetch to hold the lock and reach the origin")
    return client


def holder_and_proxied(env, lock_poll_s):
    """Two instances and an origin that holds PATH: the first reaches Redis
    directly, the second through a RedisProxy, with a Redis timeout that
    outlasts any reply the proxy keeps back. Returns (redis, origin,
    proxy, first, second), both subscribed."""
    redis, origin = env.redis(), env.origin()
    origin.script(PATH, hold=True, body="v{n}")
    proxy = env.redis_proxy(redis)
    routes = {"/": {"lock_ttl": "30s", "lock_wait": "30s", "lock_poll": f"{lock_poll_s}s"}}
    first = env.corral(redis, origin, routes=routes)
    second = env.corral(proxy.address, origin, routes=routes, wait_redis=True,
                        extra={"redis": {"timeout": "30s"}})
    env.wait_subscribed(redis, 2)
    return redis, origin, proxy, first, second


def expect_woken_at_release(first, second, proxy, bound_s, notified, why):
    """first's fetch (released at the origin) stores v1; once it has (and,
    if notified, once its notification reached second's instance), the
    proxy lets go what it kept back: second must then get v1, collapsed,
    within bound_s (a poll-woken waiter would take lock_poll)."""
    a = first.result()
    expect_eq((a.status, a.text, a.cache_status.stored), (200, "v1", True), "the holder")
    if notified:
        wait_for(lambda: proxy.published() >= 1,
                 what="the filled notification to reach the second instance")
    released_at = time.time()
    proxy.release()
    b = second.result()
    waited = b.t_done - released_at
    expect_eq((b.status, b.text, b.cache_status.collapsed), (200, "v1", True),
              f"the second instance's client ({b.cache_status.raw})")
    expect(waited < bound_s,
           f"answered {waited:.2f} s after the proxy let go (bound {bound_s:.1f} s): {why}")


@scenario
def release_of_a_lost_lock_leaves_the_new_holders_lock(env):
    # The fetch's response is not storable, so it ends in a release, not a
    # store. Its lock was taken over meanwhile: the compare-and-delete must
    # find another token and leave that lock alone (a plain DEL would let a
    # third fetch in while the new holder still fetches).
    redis, origin = env.redis(), env.origin()
    origin.script(PATH, hold=True, body="v{n}", headers={"Cache-Control": "no-store"})
    corral = env.corral(redis, origin, routes={"/": {"lock_ttl": "30s"}})

    client = hold_cold_fetch(corral, redis, origin)
    take_over_lock(redis)
    origin.release(PATH)

    r = client.result()
    expect_eq((r.status, r.text, r.cache_status.stored), (200, "v1", False),
              f"the client gets the unstored response ({r.cache_status.raw})")
    expect_eq(redis.get(lock_key(PATH)), FOREIGN, "the new holder's lock after the release")
    expect(not redis.exists(entry_key(PATH)), "an entry was written for a no-store response")
    expect(not redis.exists(backoff_key(PATH)), "a backoff set by a fetch without the lock")
    c = corral.counters()
    expect_eq((c["lock_lost"], c["stores"]), (1, 0), "lock_lost, stores")


@scenario
def renewal_never_extends_a_lock_another_fetch_holds(env):
    # lock_ttl 600 ms: the fetch renews every 200 ms. Once the token is not
    # ours, a renewal must report the lock lost and leave the other
    # holder's expiry as it set it.
    foreign_px = 60_000
    redis, origin = env.redis(), env.origin()
    origin.script(PATH, hold=True, body="v{n}")
    corral = env.corral(redis, origin, routes={"/": {"lock_ttl": "600ms"}})

    client = hold_cold_fetch(corral, redis, origin)
    take_over_lock(redis, px_ms=foreign_px)
    wait_for(lambda: corral.counters()["lock_lost"] == 1, timeout=5,
             what="a renewal to find the lock taken over (lock_lost = 1)")
    pttl = redis.pttl(lock_key(PATH))
    expect(pttl > foreign_px - 10_000,
           f"PTTL of the other holder's lock: about {foreign_px} ms, got {pttl} "
           "(a renewal extended a lock it does not hold)")
    expect_eq(redis.get(lock_key(PATH)), FOREIGN, "the other holder's token")
    origin.release(PATH)

    r = client.result()
    expect_eq((r.status, r.text, r.cache_status.stored), (200, "v1", False),
              f"the fetch that lost its lock ({r.cache_status.raw})")
    expect(not redis.exists(entry_key(PATH)), "an entry was written without the lock")
    expect_eq(redis.get(lock_key(PATH)), FOREIGN, "the other holder's lock at the end")


@scenario
def waiter_sees_by_the_generation_that_another_instance_refreshed(env):
    # The entry has expired but is still in Redis (stale_if_error keeps it),
    # so both instances see its generation G1. One refreshes it (G2); the
    # other, woken, retries its lock attempt with G1 and must be told that
    # the entry changed: it takes the new entry instead of the lock, which
    # the store released. Every refresh writes a new generation (the
    # token), or G2 could not be told from G1. The body is longer than a
    # fill carries (16 KiB), so the waiter must read the entry itself.
    pad = "." * (20 * 1024)
    redis, origin = env.redis(), env.origin()
    origin.script(PATH, body="v{n}" + pad)
    route = {"ttl": "1s", "stale_while_revalidate": "0", "stale_if_error": "60s",
             "lock_ttl": "30s", "lock_wait": "10s", "lock_poll": "5s"}
    fleet = env.fleet(2, redis, origin, routes={"/": route})
    r = fleet[0].get(PATH)
    expect_eq((r.status, r.text == "v1" + pad, r.cache_status.stored), (200, True, True),
              f"priming request: {r.text[:2]!r}")
    g1 = redis.get(entry_key(PATH))[:32]
    wait_for(lambda: redis.pttl(entry_key(PATH)) < 60_000 - 100, timeout=5,
             what="the entry to expire (kept for stale_if_error)")

    origin.script(PATH, hold=True, body="v{n}" + pad)
    first = Background(fleet[0].get, PATH)
    wait_for(lambda: origin.held(PATH) == 1, what="the refresh to reach the origin")
    second = Background(fleet[1].get, PATH)
    wait_for(lambda: fleet[1].counters()["lock_busy"] == 1,
             what="the second instance to find the lock busy")
    origin.script(PATH, hold=False, body="v{n}" + pad)
    origin.release(PATH)

    a, b = first.result(), second.result()
    expect_eq((a.status, a.text == "v2" + pad, a.cache_status.stored), (200, True, True),
              f"the refresh: {a.text[:2]!r}")
    expect_eq((b.status, b.text == "v2" + pad, b.cache_status.collapsed), (200, True, True),
              f"the waiter gets the refreshed entry: {b.text[:2]!r} ({b.cache_status.raw})")
    expect(redis.get(entry_key(PATH))[:32] != g1, "the refresh wrote a new generation")
    expect_eq(origin.count(PATH), 2, "origin requests: the prime and one refresh")
    expect_eq(fleet[1].counters()["locks_acquired"], 0, "locks the waiter took")


@scenario
def waiter_elsewhere_gets_the_failed_fetchs_error_at_once(env):
    # The fetch fails (a 503, not stored, no backoff): its release deletes
    # the lock, keeps the failure for the holder's waiters and publishes,
    # so the waiter in the other instance is answered with that 503 at
    # once, not at its fallback poll (lock_poll, 5 s), and fetches nothing.
    takeover_bound_s = slow(2.0)
    redis, origin = env.redis(), env.origin()
    origin.script(PATH, status=503, hold=True, body="down")
    fleet = env.fleet(2, redis, origin, routes={"/": {
        "error_backoff": "0", "lock_ttl": "30s", "lock_wait": "20s", "lock_poll": "5s"}})

    first = hold_cold_fetch(fleet[0], redis, origin)
    second = Background(fleet[1].get, PATH)
    wait_for(lambda: fleet[1].counters()["lock_busy"] == 1,
             what="the other instance to find the lock busy and wait")
    origin.script(PATH, status=503, hold=False, body="down")
    origin.release(PATH)

    a, b = first.result(), second.result()
    expect_eq((a.status, a.cache_status.fwd, a.cache_status.fwd_status, a.cache_status.stored),
              (503, "miss", 503, False), f"the failed fetch ({a.cache_status.raw})")
    expect_eq((b.status, b.text, b.cache_status.fwd_status, b.cache_status.collapsed),
              (503, "down", 503, True), f"the waiter ({b.cache_status.raw})")
    took = b.t_done - a.t_done
    expect(took < takeover_bound_s,
           f"the waiter answered {took:.2f} s after the failed fetch (bound "
           f"{takeover_bound_s:.1f} s, lock_poll 5 s): it was not woken by the release")
    expect_eq(origin.count(PATH), 1, "origin requests: the failed fetch only")
    expect_eq(fleet[1].counters()["locks_acquired"], 0, "locks the waiter took")


@scenario
def fill_that_overtakes_the_lock_reply_wakes_the_waiter_at_once(env):
    # The second instance reaches Redis through a proxy that keeps back the
    # reply to its lock attempt ("busy") until the holder has stored and
    # published. The fill comes first, before that instance subscribed to
    # the key's channel (it does on a busy reply): once subscribed it must
    # see that the lock it waited on is gone and try again at once, not
    # sleep until its fallback poll (lock_poll, 5 s).
    wake_bound_s = slow(2.0)
    redis, origin, proxy, holder, late = holder_and_proxied(env, lock_poll_s=5)
    first = hold_cold_fetch(holder, redis, origin)
    proxy.hold_replies_after(b"EVALSHA")
    second = Background(late.get, PATH)
    wait_for(lambda: proxy.held_bytes() > 0,
             what="Redis to answer the late instance's lock attempt (kept back)")
    origin.release(PATH)
    expect_woken_at_release(first, second, proxy, wake_bound_s, notified=False,
                            why="the fill that came before the lock reply was missed")
    expect_eq(origin.count(PATH), 1, "origin requests")
    c = late.counters()
    expect_eq((c["lock_busy"], c["locks_acquired"]), (1, 0), "the late instance's lock_busy, "
              "locks_acquired")


@scenario
def fill_missed_while_unsubscribed_wakes_the_waiter_on_resubscribing(env):
    # The waiting instance's subscription is cut, and its new SUBSCRIBE kept
    # back, while the holder stores and publishes: that notification never
    # reaches it. Subscribed again, it must assume it missed some and wake
    # its waiters, not leave them to the fallback poll (lock_poll, 10 s).
    wake_bound_s = slow(3.0)
    redis, origin, proxy, holder, waiter = holder_and_proxied(env, lock_poll_s=10)
    first = hold_cold_fetch(holder, redis, origin)
    second = Background(waiter.get, PATH)
    wait_for(lambda: waiter.counters()["lock_busy"] == 1,
             what="the second instance to find the lock busy and wait")
    proxy.cut_subscriptions()
    wait_for(lambda: proxy.held_subscriptions() >= 1,
             what="the second instance to try to subscribe again (kept back)")
    origin.release(PATH)
    expect_woken_at_release(first, second, proxy, wake_bound_s, notified=False,
                            why="its waiters were not woken on subscribing again")
    expect_eq(origin.count(PATH), 1, "origin requests")


@scenario
def stale_burst_makes_one_lock_attempt_per_process(env):
    # While this process refreshes a stale key, its other stale hits serve
    # the entry and start nothing: no second lock attempt, no lock_busy.
    stale_burst_one_lock_attempt(env, None)


@scenario
def stale_burst_without_near_caches_makes_one_lock_attempt_per_process(env):
    # The same when each stale hit reads the entry from Redis (no copy in
    # memory): its flight starts no refresh while one runs here.
    stale_burst_one_lock_attempt(env, {"server": {"l1_max_bytes": "0",
                                                  "l2_max_bytes": "0"}})


def stale_burst_one_lock_attempt(env, extra):
    hits = 20
    redis, origin, fleet = stale_fleet(env, 1, PATH, extra)
    corral = fleet[0]
    origin.script(PATH, hold=True, body="v{n}")

    for i in range(hits):
        r = corral.get(PATH)
        expect_eq((r.status, r.text, r.cache_status.stale), (200, "v1", True),
                  f"stale hit {i + 1} ({r.cache_status.raw})")
    wait_for(lambda: origin.held(PATH) == 1, what="the one refresh to reach the origin")
    c = corral.counters()
    expect_eq((c["stale_hits"], c["locks_acquired"], c["lock_busy"]), (hits, 2, 0),
              "stale_hits, locks_acquired (prime and one refresh), lock_busy")
    origin.release(PATH)
    wait_for(lambda: corral.counters()["stores"] == 2, what="the refresh to be stored")
    expect_eq(origin.count(PATH), 2, "origin requests")


@scenario
def cold_burst_in_one_process_is_one_flight(env):
    # Concurrent requests of one process for one key share one flight: one
    # lookup, one lock attempt; the others wait in the process, not in Redis.
    clients = 30
    redis, origin = env.redis(), env.origin()
    origin.script(PATH, hold=True, body="v{n}")
    corral = env.corral(redis, origin, routes={"/": {"lock_ttl": "30s", "lock_poll": "5s"}})

    burst = Background(stampede, corral, clients, PATH)
    wait_for(lambda: origin.held(PATH) == 1 and
             corral.stats()["in_progress"]["requests"] == clients,
             what=f"{clients} requests in progress and the fetch at the origin")
    c = corral.counters()
    expect_eq((c["locks_acquired"], c["lock_busy"]), (1, 0), "locks_acquired, lock_busy")
    origin.release(PATH)

    results = burst.result()
    expect_eq(sorted({(r.status, r.body) for r in results}), [(200, b"v1")], "all clients")
    expect_eq(sum(r.cache_status.stored for r in results), 1, "stored responses")
    expect_eq(origin.count(PATH), 1, "origin requests")
    c = corral.counters()
    expect_eq((c["locks_acquired"], c["lock_busy"], c["collapsed"]), (1, 0, clients - 1),
              "locks_acquired, lock_busy, collapsed")


@scenario
def private_answer_of_a_shared_fetch_goes_to_its_requester_only(env):
    # Requests that waited in the flight for a fetch whose answer is one
    # user's (Cache-Control: private) do not get it: each fetches its own.
    clients = 5
    redis, origin = env.redis(), env.origin()
    origin.script(PATH, hold=True, body="v{n}", headers={"Cache-Control": "private"})
    corral = env.corral(redis, origin, routes={"/": {"lock_ttl": "30s"}})

    burst = Background(stampede, corral, clients, PATH)
    wait_for(lambda: origin.held(PATH) == 1 and
             corral.stats()["in_progress"]["requests"] == clients,
             what=f"{clients} requests waiting for the one fetch")
    origin.script(PATH, hold=False, body="v{n}", headers={"Cache-Control": "private"})
    origin.release(PATH)

    results = burst.result()
    expect_eq(sorted(r.body for r in results), [f"v{i}".encode() for i in range(1, clients + 1)],
              "bodies: each client its own fetch's")
    expect_eq(sum(r.cache_status.stored for r in results), 0, "stored responses")
    expect_eq(origin.count(PATH), clients, "origin requests")


@scenario
def per_user_answer_long_enough_to_stream_goes_to_its_requester_only(env):
    # As above, with bodies past the streaming threshold (64 KiB): a
    # per-user answer (Set-Cookie, or Cache-Control: private) is never
    # streamed to the flight's waiters; each gets its own fetch's answer.
    clients, pad = 5, "x" * (70 * 1024)
    per_user = {"/lock/cookie": {"Set-Cookie": "sid=1"},
                "/lock/private": {"Cache-Control": "private"}}
    redis, origin = env.redis(), env.origin()
    for path, headers in per_user.items():
        origin.script(path, hold=True, body="v{n}-" + pad, headers=headers)
    corral = env.corral(redis, origin, routes={"/": {"lock_ttl": "30s"}})

    bursts = {p: Background(stampede, corral, clients, p) for p in per_user}
    wait_for(lambda: all(origin.held(p) == 1 for p in per_user) and
             corral.stats()["in_progress"]["requests"] == 2 * clients,
             what=f"{clients} requests on each path waiting for its one fetch")
    for path, headers in per_user.items():
        origin.script(path, hold=False, body="v{n}-" + pad, headers=headers)
        origin.release(path)
    for path, burst in bursts.items():
        results = burst.result()
        expect_eq(sorted(r.body.split(b"-")[0] for r in results),
                  [f"v{i}".encode() for i in range(1, clients + 1)],
                  f"{path}: each client its own fetch's answer")
        expect(all(len(r.body) > 64 * 1024 for r in results), f"{path}: whole bodies")
        expect_eq(origin.count(path), clients, f"{path}: origin requests")
    expect_eq(redis.entry_keys(), [], "entries stored")
