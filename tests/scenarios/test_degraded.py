# SPDX-License-Identifier: MIT
"""When Redis or the origin is down or slow: Corral degrades to a plain
proxy without Redis, answers 502/504 when the origin fails, and keeps
serving a stale entry while the origin is down."""

from harness import (expect, expect_entry, expect_eq, expect_no_entries, free_port,
                     scenario, wait_for, wait_until_stale)

PATH = "/users/1"


def expect_upstream_error(r, status, what):
    cs = r.cache_status
    expect_eq((r.status, cs.fwd, cs.detail, cs.stored), (status, "miss", "upstream-error", False),
              f"{what}: status, fwd, detail, stored ({cs.raw!r})")


@scenario
def redis_down_fetches_directly(env):
    origin = env.origin()
    nobody = f"127.0.0.1:{free_port()}"	# no Redis listens here
    corral = env.corral(nobody, origin, wait_redis=False)
    expect_eq(corral.stats()["redis"]["up"], False, "/stats redis.up")

    for n in (1, 2):
        r = corral.get(PATH)
        expect_eq((r.status, r.json()["n"]), (200, n), f"request {n} answered by the origin")
        expect(not r.cache_status.stored and not r.cache_status.hit,
               f"request {n} neither stored nor a hit: {r.cache_status.raw!r}")
        expect(r.elapsed < 2.0, f"request {n} took {r.elapsed:.1f} s: it waited for Redis "
               "or a lock instead of going to the origin")
    expect_eq(origin.count(PATH), 2, "origin requests")
    expect_eq(corral.counters()["upstream_fetches"], 2, "upstream_fetches")


@scenario
def upstream_down_gives_502(env):
    redis = env.redis()
    closed = f"http://127.0.0.1:{free_port()}"	# nothing listens: connection refused
    # Without a backoff, so that each request tries the upstream.
    corral = env.corral(redis, closed, routes={"/": {"error_backoff": "0"}})

    for i in (1, 2):
        expect_upstream_error(corral.get(PATH), 502, f"request {i}")
    expect_no_entries(redis, "failed fetches")
    expect_eq(redis.keys("*:lock"), [], "locks left after failed fetches")
    c = corral.counters()
    expect_eq((c["upstream_errors"], c["stores"]), (2, 0), "upstream_errors, stores")


@scenario
def upstream_timeout_gives_504(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/slow", delay_ms=3000)
    corral = env.corral(redis, origin, extra={"upstream": {"timeout": "1s"}})

    r = corral.get("/slow")
    expect_upstream_error(r, 504, "a fetch past [upstream] timeout")
    expect(r.elapsed < 2.5, f"the 504 took {r.elapsed:.1f} s with a 1 s upstream timeout")
    expect_no_entries(redis, "a timed-out fetch")
    expect_eq(corral.counters()["upstream_errors"], 1, "upstream_errors")


@scenario
def stale_entry_is_served_while_upstream_is_down(env):
    redis, origin = env.redis(), env.origin()
    origin.script(PATH, body="v{n}")
    corral = env.corral(redis, origin,
                        routes={"/": {"ttl": "1s", "stale_while_revalidate": "60s"}})
    prime = corral.get(PATH)
    expect_eq((prime.status, prime.text, prime.cache_status.stored), (200, "v1", True), "prime")

    origin.stop()
    wait_until_stale(redis, PATH, swr_ms=60_000)
    r = corral.get(PATH)
    expect_eq((r.status, r.text, r.cache_status.stale), (200, "v1", True),
              f"stale hit with the origin down ({r.cache_status.raw!r})")

    wait_for(lambda: corral.counters()["upstream_errors"] >= 1,
             what="the background refresh to fail")
    wait_for(lambda: not redis.keys("*:lock"), what="the failed refresh to release its lock")
    r = corral.get(PATH)
    expect_eq((r.status, r.text, r.cache_status.stale), (200, "v1", True),
              "still served stale after the failed refresh")
    expect_entry(redis, PATH)


@scenario
def hung_redis_connection_is_dropped_and_reopened(env):
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, extra={"redis": {"timeout": "100ms"}})
    # Redis keeps the connection but answers nothing for 3 s.
    redis.cmd("CLIENT", "PAUSE", "3000", "ALL")
    for i in range(6):
        r = corral.get(f"/hung/{i}")
        expect_eq(r.status, 200, f"request {i} while Redis hangs")
        expect(r.elapsed < 2.0, f"request {i} took {r.elapsed:.1f} s")
    wait_for(lambda: "commands in a row timed out; reconnecting" in corral.log(),
             what="corral to drop the hung connection")
    wait_for(lambda: corral.stats()["redis"]["up"], timeout=15,
             what="corral to reconnect once Redis answers again")
    wait_for(lambda: corral.get("/after").cache_status.stored, timeout=10,
             what="entries to be stored again")
    expect(corral.stats()["redis"]["disconnects"] >= 1, "the dropped connection counted")
