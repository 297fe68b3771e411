# SPDX-License-Identifier: MIT
"""The fill path's probes: a fill message carries the moment Redis published
it, so the process it wakes times the message's trip (redis.fill_delay),
then the wake of the waiting flight (fill_wake: the message's receipt to
the answer handed to its first waiter) and the hand-out to all of them
(rush: first to last). Each must count exactly what happened, on a fleet
of two, with the entry in the message and with the entry named only."""

from harness import Background, expect, expect_eq, scenario, stampede, wait_for

WAITERS = 10
PLAUSIBLE_S = 5.0	# one message on one machine: far below this


def probes(corral):
    s = corral.stats()
    return {"fill_delay": s["redis"]["fill_delay"], "fill_wake": s["total"]["fill_wake"],
            "rush": s["total"]["rush"]}


def counts(p):
    return {k: v["count"] for k, v in p.items()}


def woken_elsewhere(env, path, **script):
    """Instance a fetches path (held by the origin) while WAITERS requests
    wait in b; the origin is released. b's probes before and after."""
    redis, origin = env.redis(), env.origin()
    # No re-check of the lock (lock_poll) while they wait: its GET would
    # be counted, and only the fill may wake them.
    a, b = env.fleet(2, redis, origin, routes={"/": {"lock_poll": "60s"}})
    origin.script(path, hold=True, **script)
    lead = Background(a.get, path)
    wait_for(lambda: origin.held(path) == 1, what="a to fetch under the lock")
    base = b.stats()["redis"]["commands"]
    waiters = Background(stampede, [b], WAITERS, path)
    # b: a GET (absent), the acquire (busy), then, once subscribed, a GET
    # of the lock (still held): the wait.
    wait_for(lambda: b.stats()["redis"]["commands"] - base == 3 and
             b.stats()["in_progress"]["requests"] == WAITERS,
             what=f"b's {WAITERS} requests to wait for the fill")
    before = probes(b)
    origin.release(path)
    expect(all(r.status == 200 for r in waiters.result()), "every waiter answered")
    expect_eq(lead.result().status, 200, "a's request")
    expect_eq(origin.count(path), 1, "origin requests")
    return a, b, before, probes(b)


def check_moved(before, after):
    moved = {k: after[k] - before[k] for k in after}
    expect_eq(moved, {"fill_delay": 1, "fill_wake": 1, "rush": 1},
              "b's probes: one message, one flight woken, one hand-out to all")


@scenario
def fill_probes_time_a_short_entrys_message_and_its_waiters_wake(env):
    a, b, before, after = woken_elsewhere(env, "/probe/short", body="v1")
    check_moved(counts(before), counts(after))
    for name in ("fill_delay", "fill_wake", "rush"):
        spent = after[name]["sum_s"] - before[name]["sum_s"]
        expect(0 <= spent < PLAUSIBLE_S, f"{name}: {spent} s for one observation")
    # The fetching instance heard nothing (it waited for nobody) and woke
    # no flight; its own flight had one request: no hand-out timed.
    expect_eq(counts(probes(a)), {"fill_delay": 0, "fill_wake": 0, "rush": 0},
              "a's probes")
    metrics = b.admin("GET", "/metrics").body.decode()
    for series in ("corral_redis_fill_delay_seconds_count 1",
                   'corral_fill_wake_seconds_count{route="/"} 1',
                   'corral_rush_seconds_count{route="/"} 1'):
        expect(series in metrics, f"/metrics has {series!r}")


@scenario
def fill_probes_time_a_long_entry_named_only_and_read_once(env):
    # Over 16 KiB: the message names the key; the wake includes b's read.
    _, _, before, after = woken_elsewhere(env, "/probe/long", size=20000)
    check_moved(counts(before), counts(after))
