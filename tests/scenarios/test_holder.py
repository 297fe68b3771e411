# SPDX-License-Identifier: MIT
"""Waiters stay with a live lock holder: a query slower than lock_wait used
to be fetched once per process. While the holder renews its lock, a waiter
anywhere in the fleet keeps waiting (its budget is lock_wait, by default as
long as the holder's fetch may take); past it, it gets stale or an error,
never a fetch of its own. A holder that dies is taken over by exactly one
waiter; a fetch that fails answers its waiters with its error.

Every instance here runs two workers unless a scenario says otherwise.
"""

import os
import signal

from harness import (Background, children, entry_key, expect, expect_eq, fills_that_woke,
                     fleet_counters, get_request, lock_key, raw_exchange, scenario, slow,
                     stampede, tcp_socket_owner, wait_for, wait_until_stale)

PATH = "/reports/1"
ORIGIN_MS = 5000		# a slow query: longer than lock_wait's old default (3 s)
TWO_WORKERS = {"server": {"workers": "2"}, "upstream": {"timeout": "6s"}}
# The shipped lock settings: the harness's own are left out.
SHIPPED_LOCK = {"lock_ttl": None, "lock_wait": None, "lock_poll": None}
WAIT_TIMEOUT = "corral; detail=lock-wait-timeout"


def two_workers_each(fleet):
    for c in fleet:
        wait_for(lambda c=c: len(children(c.proc.pid)) == 2, what=f"{c.name}'s two workers")


def worker_fetching_from(corral, port):
    """The pid of corral's worker with a connection to 127.0.0.1:port (the
    origin's); None if there is none."""
    return tcp_socket_owner(children(corral.proc.pid), remote_port=port, established=True)


def expect_all(results, status, body, what):
    expect_eq(sorted({(r.status, r.body) for r in results}), [(status, body)],
              f"statuses and bodies of {what}")


@scenario
def slow_query_over_two_instances_of_two_workers_is_fetched_once(env):
    # The origin takes 5 s, inside the upstream timeout (6 s) but longer
    # than lock_wait used to be: every waiter of the fleet stays with the
    # holder, which renews its lock, and is woken by its store.
    clients = 40
    # Woken by the store's fill notification (counted in fill_wake by the
    # instance that did not fetch), not by a lock_poll (500 ms), and so
    # answered soon after the origin even on a busy 2-core machine.
    wake_bound_s = slow(1.0)
    redis, origin = env.redis(), env.origin()
    origin.script(PATH, delay_ms=ORIGIN_MS, body="v{n}")
    fleet = env.fleet(2, redis, origin, routes={"/": SHIPPED_LOCK}, extra=TWO_WORKERS)
    two_workers_each(fleet)

    results = stampede(fleet, clients, PATH)

    expect_eq(origin.count(PATH), 1, "origin requests for the slow key")
    expect_all(results, 200, b"v1", "all clients")
    done_at = origin.path_stats(PATH)["done_at"][0]
    late_ms = (max(r.t_done for r in results) - done_at) * 1000
    expect(late_ms <= wake_bound_s * 1000,
           f"last client answered {late_ms:.0f} ms after the origin's response "
           f"(bound {wake_bound_s * 1000:.0f} ms)")
    c = fleet_counters(fleet)
    expect_eq((c["upstream_fetches"], c["stores"], c["lock_wait_timeouts"], c["errors"]),
              (1, 1, 0, 0), "upstream_fetches, stores, lock_wait_timeouts, errors")
    woken = list(fills_that_woke(fleet).values())
    expect(len(woken) == 1 and woken[0] >= 1,
           f"fills that woke the waiters of the instance that did not fetch: {woken}")


@scenario
def killed_lock_holder_worker_is_taken_over_once_in_the_fleet(env):
    # The worker holding the lock is killed mid-fetch. Its lock expires
    # (lock_ttl, 5 s) and exactly one waiter of the fleet takes it over; the
    # others, in both instances, wait for that one fetch and get it.
    waiting_b, waiting_a = 20, 10
    redis, origin = env.redis(), env.origin()
    origin.script(PATH, hold=True, body="v{n}")
    a, b = env.fleet(2, redis, origin, routes={"/": SHIPPED_LOCK},
                     extra=TWO_WORKERS)
    two_workers_each([a, b])

    orphan = Background(raw_exchange, a.host, a.port, get_request(PATH))
    wait_for(lambda: origin.held(PATH) == 1 and redis.exists(lock_key(PATH)),
             what="a worker of A to hold the lock and reach the origin")
    holder = wait_for(lambda: worker_fetching_from(a, origin.port),
                      what="the worker of A whose fetch is at the origin")
    in_b = Background(stampede, b, waiting_b, PATH)
    wait_for(lambda: b.stats()["in_progress"]["requests"] == waiting_b and
             b.counters()["lock_busy"] >= 1, what="B's clients to wait on A's lock")

    os.kill(holder, signal.SIGKILL)
    orphan.result()		# its connection ends with the worker
    wait_for(lambda: holder not in children(a.proc.pid), what="the killed worker to be gone")
    in_a = Background(stampede, a, waiting_a, PATH)
    wait_for(lambda: origin.count(PATH) >= 2, timeout=15,
             what="one waiter to take the dead holder's lock over")
    wait_for(lambda: a.stats()["in_progress"]["requests"] == waiting_a,
             what="A's new clients to wait too")
    expect_eq(origin.count(PATH), 2, "origin requests once the lock was taken over")
    origin.release(PATH)

    results = in_b.result() + in_a.result()
    expect_all(results, 200, b"v2", "every waiter")
    expect_eq(origin.count(PATH), 2, "origin requests: the dead holder's and one takeover")
    c = fleet_counters([a, b])
    expect_eq((c.get("lock_takeovers"), c["lock_wait_timeouts"], c["stores"]), (1, 0, 1),
              "lock_takeovers, lock_wait_timeouts, stores")
    expect_eq(redis.get(entry_key(PATH))[-2:], "v2", "the stored body")


@scenario
def failed_fetch_answers_its_waiters_across_the_fleet(env):
    # The fetch fails (a 503, then a timeout): every waiter of the fleet
    # gets its error, none fetches again. One failure starts no backoff
    # (error_backoff_after 2), so the next request asks the origin at once.
    clients = 20
    redis, origin = env.redis(), env.origin()
    origin.script("/fail/503", status=503, delay_ms=1000, body="down")
    origin.script("/fail/timeout", delay_ms=6000, body="late")
    fleet = env.fleet(2, redis, origin, routes={"/": SHIPPED_LOCK},
                      extra={"server": {"workers": "2"}, "upstream": {"timeout": "3s"}})
    two_workers_each(fleet)

    results = stampede(fleet, clients, "/fail/503")
    expect_eq(origin.count("/fail/503"), 1, "origin requests for the 503")
    expect_all(results, 503, b"down", "the 503's waiters")
    expect(not any(r.cache_status.stored for r in results), "a 503 stored")

    results = stampede(fleet, clients, "/fail/timeout")
    expect_eq(origin.count("/fail/timeout"), 1, "origin requests for the timeout")
    expect_eq(sorted({r.status for r in results}), [504], "statuses of the timeout's waiters")
    expect_eq(sorted({r.cache_status.detail for r in results}), ["upstream-error"],
              "Cache-Status details of the timeout's waiters")

    expect_eq(redis.keys("*:lock"), [], "locks left")
    expect_eq(redis.keys("*:backoff"), [], "backoffs after one failure per key")
    r = fleet[1].get("/fail/503")
    expect_eq((r.status, r.cache_status.fwd, r.cache_status.collapsed), (503, "miss", False),
              f"the next request fetches itself ({r.cache_status.raw})")
    expect_eq(origin.count("/fail/503"), 2, "origin requests for the 503 in all")
    expect_eq(fleet_counters(fleet)["upstream_fetches"], 3, "upstream_fetches")


def hold_fetch_in(corral, origin, path):
    """A client of corral whose fetch of path holds the lock at the origin."""
    client = Background(corral.get, path)
    wait_for(lambda: origin.held(path) == 1, what=f"the fetch of {path} to reach the origin")
    return client


def waiter_past_its_budget(corral, origin, path):
    """A client of corral that waits for the held fetch of path: it must be
    answered while that fetch is still held (it never fetches itself)."""
    before = origin.count(path)
    client = Background(corral.get, path)
    wait_for(lambda: client.done() or origin.held(path) > 1, timeout=10,
             what="the waiter to be answered past lock_wait")
    expect_eq(origin.count(path) - before, 0, "origin requests the waiter made")
    return client.result()


@scenario
def waiter_past_lock_wait_is_answered_without_a_fetch_and_takes_the_entry_later(env):
    # lock_wait is the client's budget: past it the waiter gets 504, never
    # a fetch of its own. The entry stored a moment later is its
    # instance's next answer, a hit.
    redis, origin = env.redis(), env.origin()
    origin.script(PATH, hold=True, body="v{n}")
    a, b = env.fleet(2, redis, origin, routes={"/": {
        "lock_wait": "500ms", "lock_poll": "5s", "lock_ttl": "30s"}})

    first = hold_fetch_in(a, origin, PATH)
    r = waiter_past_its_budget(b, origin, PATH)
    expect_eq((r.status, r.cache_status.raw), (504, WAIT_TIMEOUT), "the waiter past lock_wait")
    expect(0.45 <= r.elapsed < slow(5), f"it waited about lock_wait: {r.elapsed:.2f} s")
    origin.release(PATH)
    h = first.result()
    expect_eq((h.status, h.text, h.cache_status.stored), (200, "v1", True), "the holder")

    r = b.get(PATH)
    expect_eq((r.status, r.text, r.cache_status.hit), (200, "v1", True),
              f"B's next request ({r.cache_status.raw})")
    expect_eq(origin.count(PATH), 1, "origin requests")
    c = b.counters()
    expect_eq((c["lock_wait_timeouts"], c["upstream_fetches"], c["errors"], c["waiters"]),
              (1, 0, 1, 1), "B's lock_wait_timeouts, upstream_fetches, errors, waiters")
    expect(c["lock_wait_ms"] >= 450, f"lock_wait_ms: expected about 500, got {c['lock_wait_ms']}")


@scenario
def waiter_of_a_holder_that_never_finishes_gives_up_after_the_default_budget(env):
    # lock_wait unset: the budget is the longest a fetch may take (upstream
    # timeout 1 s) + lock_ttl (1 s) + lock_poll (300 ms). A holder that
    # keeps its lock (here another fetch's token, for 30 s) answers every
    # poll the same: that must not start the budget again.
    redis, origin = env.redis(), env.origin()
    routes = {"/": {"lock_ttl": "1s", "lock_poll": "300ms", "lock_wait": None}}
    corral = env.corral(redis, origin, routes=routes, extra={"upstream": {"timeout": "1s"}})
    redis.cmd("SET", lock_key(PATH), "f" * 32, "PX", "30000")
    r = corral.get(PATH, timeout=20)
    expect_eq((r.status, r.cache_status.raw), (504, WAIT_TIMEOUT), "the waiter")
    expect(2.0 <= r.elapsed < slow(6), f"it waited about 2.3 s: {r.elapsed:.2f} s")
    expect_eq(origin.count(PATH), 0, "origin requests")


@scenario
def waiter_past_lock_wait_gets_the_stale_entry_stale_if_error_keeps(env):
    route = {"ttl": "1s", "stale_while_revalidate": "0", "stale_if_error": "60s",
             "lock_wait": "500ms", "lock_poll": "5s", "lock_ttl": "30s"}
    redis, origin = env.redis(), env.origin()
    origin.script(PATH, body="v{n}")
    a, b = env.fleet(2, redis, origin, routes={"/": route})
    expect_eq(a.get(PATH).status, 200, "priming request")
    wait_until_stale(redis, PATH, swr_ms=60_000)	# past ttl: kept for stale_if_error
    origin.script(PATH, hold=True, body="v{n}")

    first = hold_fetch_in(a, origin, PATH)
    r = waiter_past_its_budget(b, origin, PATH)
    expect_eq((r.status, r.text, r.cache_status.stale, r.cache_status.detail),
              (200, "v1", True, "stale-if-error"), f"the waiter past lock_wait ({r.cache_status.raw})")
    origin.release(PATH)
    expect_eq(first.result().text, "v2", "the holder's refresh")
    expect_eq(origin.count(PATH), 2, "origin requests: the prime and one refresh")
    expect_eq(b.counters()["lock_wait_timeouts"], 1, "B's lock_wait_timeouts")


@scenario
def waiter_counts_its_budget_again_for_a_new_holder(env):
    # lock_wait 0: a waiter waits as long as one holder's fetch may take
    # (timeout 2 s + lock_ttl 1 s + lock_poll 200 ms = 3.2 s, 16 re-checks),
    # counted again once another holder has taken the lock over. Holders
    # that never end (tokens set in Redis) keep it waiting past one budget;
    # once the lock is gone it takes it over and fetches.
    budget_checks = 16
    redis, origin = env.redis(), env.origin()
    origin.script(PATH, body="v{n}")
    corral = env.corral(redis, origin, routes={"/": {
        "lock_ttl": "1s", "lock_wait": None, "lock_poll": "200ms"}},
        extra={"upstream": {"timeout": "2s"}})
    busy = lambda: corral.counters()["lock_busy"]	# noqa: E731

    redis.cmd("SET", lock_key(PATH), "1" * 32)
    client = Background(corral.get, PATH)
    wait_for(lambda: busy() >= budget_checks // 2, what="the waiter to re-check the first holder")
    redis.cmd("SET", lock_key(PATH), "2" * 32)	# a second holder took it over
    wait_for(lambda: client.done() or busy() >= budget_checks + 2, timeout=15,
             what="the waiter to re-check past the first holder's budget")
    expect(not client.done(), f"the waiter gave up within its first holder's budget: "
           f"{client.result().cache_status.raw if client.done() else ''}")
    redis.cmd("DEL", lock_key(PATH))	# the second holder died, unreleased

    r = client.result()
    expect_eq((r.status, r.text, r.cache_status.stored), (200, "v1", True),
              f"the waiter's takeover ({r.cache_status.raw})")
    c = corral.counters()
    expect_eq((c["lock_takeovers"], c["lock_wait_timeouts"], origin.count(PATH)), (1, 0, 1),
              "lock_takeovers, lock_wait_timeouts, origin requests")


@scenario
def waiter_with_lock_wait_keeps_its_arrival_budget_across_new_holders(env):
    # lock_wait set (1 s, 10 re-checks of 100 ms) is the client's budget,
    # counted from its arrival: a new holder at every re-check (each a
    # takeover elsewhere) must not start it again. Past it: 504, no fetch.
    checks = 10
    redis, origin = env.redis(), env.origin()
    origin.script(PATH, body="v{n}")
    corral = env.corral(redis, origin, routes={"/": {
        "lock_ttl": "30s", "lock_wait": "1s", "lock_poll": "100ms"}})
    busy = lambda: corral.counters()["lock_busy"]	# noqa: E731

    redis.cmd("SET", lock_key(PATH), "0" * 32)
    client = Background(corral.get, PATH)
    holders = 0
    while not client.done() and holders < 3 * checks:
        seen = busy()
        wait_for(lambda: client.done() or busy() > seen, timeout=slow(10),
                 what="the waiter to re-check the lock")
        holders += 1
        redis.cmd("SET", lock_key(PATH), str(holders % 10) * 32)	# another holder
    expect(client.done(), f"the waiter still waits after {holders} holders, "
           f"{busy()} re-checks (lock_wait 1 s is {checks})")
    r = client.result()
    expect_eq((r.status, r.cache_status.raw), (504, WAIT_TIMEOUT), "the waiter")
    expect(0.9 <= r.elapsed < slow(3), f"it waited about lock_wait: {r.elapsed:.2f} s")
    expect_eq(origin.count(PATH), 0, "origin requests")


@scenario
def a_waiter_that_takes_a_released_lock_is_no_takeover(env):
    """A holder whose answer is not kept (a 404 with ttl_404 = 0) releases
    its lock alive: the waiters elsewhere then take it in turn, and none of
    that is a takeover (counted and logged only for a holder that died)."""
    redis, origin = env.redis(), env.origin()
    origin.script("/gone", hold=True, status=404, body="no")
    fleet = env.fleet(2, redis, origin, routes={"/": {"lock_poll": "5s"}})
    lead = Background(fleet[0].get, "/gone")
    wait_for(lambda: origin.held("/gone") == 1, what="the first fetch at the origin")
    waiters = Background(stampede, [fleet[1]], 5, "/gone")
    wait_for(lambda: fleet[1].counters()["lock_busy"] >= 1,
             what="the other instance waiting for the holder")
    origin.script("/gone", status=404, body="no")
    origin.release("/gone")
    expect_eq(lead.result().status, 404, "the holder's answer")
    expect_eq({r.status for r in waiters.result()}, {404}, "the waiters' answers")
    c = fleet_counters(fleet)
    expect(c["locks_acquired"] >= 2, f"the waiters took the released lock: {c['locks_acquired']}")
    expect_eq(c["lock_takeovers"], 0, "takeovers of a lock released alive")
    for f in fleet:
        expect("took over" not in f.log(), f"{f.name} logs no takeover")
