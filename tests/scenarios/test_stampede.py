# SPDX-License-Identifier: MIT
"""Stampede protection across a fleet: one fetch per key, waiters woken by
Redis pub/sub, stale entries served while one refresh runs, and the refresh
lock's token fencing (renewal, lost locks). Waiting past lock_wait, a
holder that dies and a fetch that fails: test_holder.py.

Every instance of a fleet shares one Redis and one origin; clients send the
same Host header (harness.HOST) to all of them, so they share cache keys.
"""

from harness import (Background, entry_key, expect, expect_entry, expect_eq,
                     fills_that_woke, fleet_counters, is_token, lock_key, release_once_joined,
                     scenario, slow, stale_fleet, stampede, wait_for)

PATH = "/users/1"
CLIENTS = 200


def expect_all(results, status, body, what):
    expect_eq(sorted({r.status for r in results}), [status], f"statuses of {what}")
    expect_eq(sorted({r.body for r in results}), [body], f"bodies of {what}")


@scenario
def cold_miss_fleet_of_three_fetches_once(env):
    # Waiters must be woken by the "filled" PUBLISH: every instance that did
    # not fetch counts the fill that woke its waiters (fill_wake). Their
    # fallback poll is lock_poll = 5 s, so a poll-woken waiter would answer
    # about 4.5 s after the origin; an event-woken one within tens of ms
    # (store + publish + lookup + 200 writes, under ASan), and within
    # wake_bound_s on a 2-core machine that runs another scenario beside.
    wake_bound_s = slow(1.0)
    redis, origin = env.redis(), env.origin()
    origin.script(PATH, hold=True, body="v{n}")
    fleet = env.fleet(3, redis, origin, routes={"/": {"lock_poll": "5s", "lock_wait": "10s"}})

    # The fetch is held until every client is in: none arrives after it.
    clients = Background(stampede, fleet, CLIENTS, PATH)
    release_once_joined(origin, PATH, fleet, CLIENTS)
    results = clients.result()

    expect_eq(origin.count(PATH), 1, "origin requests for the cold key")
    expect_all(results, 200, b"v1", "all clients")
    done_at = origin.path_stats(PATH)["done_at"][0]
    early = [r for r in results if r.t_done < done_at - 0.05]
    expect_eq(early, [], "responses complete before the origin answered")
    late_ms = (max(r.t_done for r in results) - done_at) * 1000
    expect(late_ms <= wake_bound_s * 1000,
           f"last client answered {late_ms:.0f} ms after the origin's response "
           f"(bound {wake_bound_s * 1000:.0f} ms): waiters were not woken by the event")

    woken = fills_that_woke(fleet)
    expect_eq(sorted(woken.values()), [1, 1],
              f"fills that woke the waiters of the two instances that did not fetch ({woken})")

    stored = [r for r in results if r.cache_status.stored]
    collapsed = [r for r in results if r.cache_status.collapsed]
    expect_eq(len(stored), 1, "responses with Cache-Status '...; stored'")
    expect_eq(len(collapsed), CLIENTS - 1, "responses with Cache-Status '...; collapsed'")
    expect_eq((stored[0].cache_status.fwd, stored[0].cache_status.fwd_status), ("miss", 200),
              "the fetching request's fwd and fwd-status")
    expect(all(r.cache_status.fwd_status == 200 for r in collapsed),
           "collapsed responses carry fwd-status=200")

    c = fleet_counters(fleet)
    expect_eq(c["requests"], CLIENTS, "requests (sum over instances)")
    expect_eq(c["misses"], 1, "misses")
    expect_eq(c["collapsed"], CLIENTS - 1, "collapsed")
    expect_eq(c["waiters"], CLIENTS - 1, "waiters")
    expect_eq(c["upstream_fetches"], 1, "upstream_fetches")
    expect_eq(c["stores"], 1, "stores")
    expect_eq(c["locks_acquired"], 1, "locks_acquired")
    expect_eq(c["lock_wait_timeouts"], 0, "lock_wait_timeouts")
    expect_eq(c["hits"], 0, "hits")
    expect_eq(fleet_counters(fleet, "/")["misses"], 1, "misses of route /")

    expect_entry(redis, PATH)
    expect(not redis.exists(lock_key(PATH)), "the lock is deleted once the entry is stored")


@scenario
def stale_key_fleet_of_three_served_stale_then_refreshed_once(env):
    redis, origin, fleet = stale_fleet(env, 3, PATH)
    origin.script(PATH, body="v{n}", hold=True)	# the refresh blocks until released

    # All are answered at once from the stale entry; if any waited for the
    # held refresh, the stampede would time out.
    results = stampede(fleet, CLIENTS, PATH, timeout=slow(10))
    expect_all(results, 200, b"v1", "clients during the refresh")
    not_stale = [r for r in results if not r.cache_status.stale]
    expect_eq(not_stale, [], "responses without a stale hit (ttl=-N)")
    wait_for(lambda: origin.held(PATH) == 1, what="the one refresh to reach the origin")
    expect_eq(origin.count(PATH), 2, "origin requests while holding: prime + one refresh")
    expect_eq(fleet_counters(fleet)["stale_hits"], CLIENTS, "stale_hits")

    origin.release(PATH)
    def refreshed():
        r = fleet[1].get(PATH)
        return r if r.text != "v1" else None
    r = wait_for(refreshed, what="a response other than the stale v1")
    expect_eq((r.status, r.text), (200, "v2"), "the refreshed entry")
    expect_eq(origin.count(PATH), 2, "origin requests in total")
    c = fleet_counters(fleet)
    expect_eq(c["upstream_fetches"], 2, "upstream_fetches")
    expect_eq(c["stores"], 2, "stores")
    expect_eq(c["locks_acquired"], 2, "locks_acquired")
    expect_eq(c["lock_lost"], 0, "lock_lost")


@scenario
def slow_origin_lock_is_renewed(env):
    # The fetch (4 s) outlives the lock's PX (1 s) several times over; it
    # is renewed every third of it, so that a stall of a few hundred ms on
    # a busy machine does not let it expire. Waiters re-check every 100 ms;
    # had the lock expired, one would have taken it and fetched again.
    clients = 30
    redis, origin = env.redis(), env.origin()
    origin.script(PATH, delay_ms=4000, body="v{n}")
    fleet = env.fleet(3, redis, origin, routes={"/": {
        "lock_ttl": "1s", "lock_wait": "10s", "lock_poll": "100ms"}})

    results = stampede(fleet, clients, PATH)

    expect_eq(origin.count(PATH), 1, "origin requests")
    expect_all(results, 200, b"v1", "all clients")
    c = fleet_counters(fleet)
    expect(c["lock_renewals"] >= 3, f"lock_renewals: expected >= 3, got {c['lock_renewals']}")
    expect_eq(c["lock_lost"], 0, "lock_lost")
    expect_eq(c["misses"], 1, "misses")
    expect_eq(c["collapsed"], clients - 1, "collapsed")
    expect_eq(c["lock_wait_timeouts"], 0, "lock_wait_timeouts")
    expect_entry(redis, PATH)


@scenario
def replaced_lock_token_is_neither_deleted_nor_overwritten(env):
    foreign = "f" * 32
    redis, origin = env.redis(), env.origin()
    origin.script(PATH, hold=True, body="v{n}")
    # A long lock_ttl: no renewal falls inside the few ms this scenario
    # holds the fetch, so the store is what finds the token replaced.
    corral = env.corral(redis, origin, routes={"/": {"lock_ttl": "30s"}})

    client = Background(corral.get, PATH)
    wait_for(lambda: origin.held(PATH) == 1 and redis.exists(lock_key(PATH)),
             what="the cold fetch to hold the lock and reach the origin")
    token = redis.get(lock_key(PATH))
    expect(is_token(token) and token != foreign, f"lock value is a 32-hex token: {token!r}")
    redis.cmd("SET", lock_key(PATH), foreign)	# another fetch "took over" the key
    origin.release(PATH)

    r = client.result()
    expect_eq((r.status, r.text), (200, "v1"), "the client still gets the fetched response")
    cs = r.cache_status
    expect_eq((cs.fwd, cs.fwd_status, cs.stored), ("miss", 200, False),
              f"Cache-Status fwd, fwd-status, stored ({cs.raw})")
    expect_eq(redis.get(lock_key(PATH)), foreign, "the foreign lock token")
    expect(not redis.exists(entry_key(PATH)), "an entry was written without the lock")
    c = corral.counters()
    expect_eq(c["lock_lost"], 1, "lock_lost")
    expect_eq(c["stores"], 0, "stores")
