# SPDX-License-Identifier: MIT
"""Redis at its memory limit. With noeviction, a full Redis refuses every
write: Corral says so in /health, /stats, /metrics and each answer's
Cache-Status (detail=redis-full), logs it once a second rather than once a
request, and stores again as soon as Redis has room. With volatile-lru,
the policy docs/operations.md recommends, Redis evicts old entries to make room,
and keeps what has no TTL (the maintenance modes) and what was just used
(a fetch's lock): a stampede still costs one fetch while entries are
evicted under it."""

import re
import time
import urllib.parse

from harness import (Background, RedisServer, entry_key, expect, expect_eq, lock_key, scenario,
                     stampede, wait_for)

BIG = 60_000		# bytes of a body with no room (stored whole: below 64 KiB)
ROOM = 60_000		# ... in a Redis with this much left: a lock has room
FILL = 50_000		# bytes of each body that fills Redis


# Bodies of a type not compressed on store: they take in Redis the room
# their length says.
STORED_AS_IS = {"Content-Type": "application/octet-stream"}


class LimitedRedis(RedisServer):
    """A redis-server with maxmemory (set lower by the scenario) and a
    policy."""

    policy = "noeviction"

    def argv(self, binary):
        return super().argv(binary) + ["--maxmemory", "64mb",
                                       "--maxmemory-policy", self.policy]


class EvictingRedis(LimitedRedis):
    policy = "volatile-lru"


def used_memory(redis):
    return int(re.search(r"used_memory:(\d+)", redis.cmd("INFO", "memory")).group(1))


def health(corral):
    return corral.admin("GET", "/health").text


def full_lines(corral):
    return corral.log().count("redis: full:")


@scenario
def a_full_redis_is_said_in_health_cache_status_and_the_log_once_a_second(env):
    redis = env.track(LimitedRedis(env.workdir, env.name("redis")))
    origin = env.origin()
    origin.script("/big", body="x" * BIG, headers=STORED_AS_IS)
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}})
    expect("redis=up" in health(corral), f"/health before: {health(corral)!r}")

    # Room for a lock, none for the entry. Redis's figure moves with the
    # buffers its connections allocate: two requests first allocate them.
    for path in ("/warm/1", "/warm/2"):
        expect(corral.get(path).cache_status.stored, f"{path} stored")
    locks = corral.counters()["locks_acquired"]
    redis.cmd("CONFIG", "SET", "maxmemory", str(used_memory(redis) + ROOM))
    r = corral.get("/big")
    cs = r.cache_status
    expect_eq((r.status, len(r.body)), (200, BIG), "the response, from the origin")
    expect_eq((cs.fwd, cs.detail, cs.stored), ("miss", "redis-full", False),
              f"Cache-Status says why it was not stored ({cs.raw!r})")
    expect(health(corral).startswith("ok redis=full"), f"/health: {health(corral)!r}")
    expect_eq(corral.counters()["locks_acquired"], locks + 1,
              "the lock had room: the store had none")
    s = corral.stats()["redis"]
    expect(s["full"] is True and s["oom"] >= 1, f"/stats redis: full and oom ({s['oom']})")
    metrics = corral.admin("GET", "/metrics").text
    expect(re.search(r"^corral_redis_full 1$", metrics, re.M) and
           re.search(r"^corral_redis_oom_total [1-9]", metrics, re.M),
           "corral_redis_full and corral_redis_oom_total in /metrics")

    # Past the limit: no lock either. Each request is fetched on its own
    # and says why; the log says it once a second, not once a request.
    redis.cmd("CONFIG", "SET", "maxmemory", "1")
    started = time.monotonic()
    for i in range(40):
        cs = corral.get(f"/k/{i}").cache_status
        expect_eq((cs.fwd, cs.detail, cs.stored), ("miss", "redis-full", False),
                  f"request {i} ({cs.raw!r})")
    took = time.monotonic() - started
    lines = full_lines(corral)
    expect(1 <= lines <= 2 + int(took), f"{lines} 'redis: full' lines for 41 refusals in "
           f"{took:.1f} s: at most one a second")
    expect(corral.stats()["redis"]["oom"] >= 41, "each refusal counted")

    # Room again: the next miss is stored, and the state clears at once.
    redis.cmd("CONFIG", "SET", "maxmemory", "0")
    r = corral.get("/after")
    expect(r.cache_status.stored, f"stored once Redis has room: {r.cache_status.raw!r}")
    expect(health(corral).startswith("ok redis=up"), f"/health after: {health(corral)!r}")
    expect_eq(corral.stats()["redis"]["full"], False, "/stats redis.full after")


@scenario(timeout=180)
def volatile_lru_evicts_entries_but_keeps_the_maintenance_modes_and_a_fetchs_lock(env):
    redis = env.track(EvictingRedis(env.workdir, env.name("redis")))
    origin = env.origin()
    origin.script("/fill/*", body="f" * FILL, headers=STORED_AS_IS)
    origin.script("/cold", hold=True)
    # A 3 s lock is renewed every second: Redis sees it used that often.
    routes = {"/": {"ttl": "1h", "lock_ttl": "3s"}, "/m/": {"ttl": "1h"}}
    a, b = env.fleet(2, redis, origin, routes=routes)
    r = a.admin("POST", "/maintenance?" + urllib.parse.urlencode({"route": "/m/",
                                                                  "mode": "avoid"}))
    expect_eq(r.status, 200, f"maintenance on /m/: {r.text!r}")
    maint = redis.keys("*maintenance*")
    expect_eq(len(maint), 1, f"the maintenance modes' key: {maint}")
    # Two megabytes of room, and ten of entries: Redis must evict.
    redis.cmd("CONFIG", "SET", "maxmemory", str(used_memory(redis) + 2_000_000))
    for i in range(100):
        cs = a.get(f"/fill/{i}").cache_status
        expect(cs.stored, f"/fill/{i} stored: Redis made room ({cs.raw!r})")
    evicted = int(re.search(r"evicted_keys:(\d+)", redis.cmd("INFO", "stats")).group(1))
    expect(evicted >= 50, f"Redis evicted entries: {evicted}")
    # Redis's LRU clock counts whole seconds: the entries age past the
    # lock's renewal period before the stampede.
    wait_for(lambda: int(redis.cmd("OBJECT", "IDLETIME", entry_key("/fill/99"))) >= 3,
             what="the last entry stored to be 3 s idle in Redis's LRU clock")

    # A cold stampede over both instances while stores go on evicting the
    # entries least recently used (half of those Redis has room for): the
    # lock, renewed every second, is never one of them.
    clients = Background(stampede, [a, b], 20, "/cold")
    wait_for(lambda: origin.held("/cold") == 1 and redis.exists(lock_key("/cold")) and
             sum(c.stats()["in_progress"]["requests"] for c in (a, b)) == 20,
             what="the 20 clients to wait for the one fetch of /cold")
    for i in range(100, 120):
        expect(a.get(f"/fill/{i}").cache_status.stored, f"/fill/{i} stored")
    expect(redis.exists(lock_key("/cold")), "the fetch's lock survived the evictions")
    origin.release("/cold")
    expect_eq(sorted({r.status for r in clients.result()}), [200], "the stampede's answers")
    expect_eq(origin.count("/cold"), 1, "origin fetches for the stampede")

    # What volatile-lru relies on: every key Corral writes has a TTL, but
    # the maintenance modes, which must outlive any entry.
    lasting = sorted(k for k in redis.keys("*") if redis.pttl(k) == -1)	# -2: gone since
    expect_eq(lasting, maint, "keys with no TTL (volatile-lru never evicts them)")
    for c in (a, b):
        s = c.stats()
        expect_eq((s["redis"]["oom"], s["redis"]["full"]), (0, False),
                  f"{c.name}: no write refused")
        expect_eq([m["route"] for m in s["maintenance"]], ["/m/"],
                  f"{c.name}: the maintenance mode (no TTL) was never evicted")
