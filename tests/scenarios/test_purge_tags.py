"""Surrogate keys and soft purge: entries are filed under the tags the
origin names (Surrogate-Key, Cache-Tag); POST /purge?tag=T reaches every
entry with that tag in the fleet. A soft purge (the default for tags, or
&soft=1) marks entries stale instead of deleting them, so a popular tag can
be purged under load without a stampede: every request is answered at once
and each entry is refreshed once."""

import threading
import time

from harness import HOST, PREFIX, SLOWNESS, Background, cache_key, entry_key, expect, expect_eq, paced, scenario, wait_for

ENTRIES = 100
REQUESTS = 500


def purge(corral, **params):
    """The number purged; the purge must succeed."""
    r = corral.purge(**params)
    expect_eq(r.status, 200, f"purge {params}: {r.text!r}")
    return r.json()["purged"]


@scenario
def soft_purge_of_a_popular_tag_causes_no_stampede(env):
    redis, origin = env.redis(), env.origin()
    origin.script("*", delay_ms=20, body="{path} v{n}",
                  headers={"Surrogate-Key": "all  item-{n}", "Cache-Tag": "catalog"})
    routes = {"/": {"ttl": "1h", "stale_while_revalidate": "1h"}}
    a, b = env.fleet(2, redis, origin, routes=routes)
    paths = [f"/tg/{i}" for i in range(ENTRIES)]
    for i, p in enumerate(paths):
        expect_eq((a, b)[i % 2].get(p, {"Host": HOST}).status, 200, f"filling {p}")

    barrier = threading.Barrier(REQUESTS + 1)
    results = [None] * REQUESTS

    def client(i):
        barrier.wait()
        results[i] = (a, b)[i % 2].get(paths[i % ENTRIES], {"Host": HOST})

    threads = [threading.Thread(target=client, args=(i,), daemon=True)
               for i in range(REQUESTS)]
    for t in threads:
        t.start()
    expect_eq(purge(a, tag="all"), ENTRIES, "entries purged (soft) under the tag")
    barrier.wait()	# the requests arrive while the refreshes start
    for t in threads:
        t.join(60)
    expect(all(r is not None for r in results), "every request answered")
    expect_eq(sorted({r.status for r in results}), [200], "statuses")
    waited = [r.cache_status.raw for r in results if not r.cache_status.hit]
    expect_eq(waited, [], "requests that were not served from the cache at once")
    expect(sum(1 for r in results if r.cache_status.stale) >= ENTRIES,
           "the purged entries were served stale")
    wait_for(lambda: all(origin.count(p) == 2 for p in paths), timeout=30,
             what="every entry refreshed once")
    expect_eq(max(origin.count(p) for p in paths), 2,
              "origin requests per entry: the fill and one refresh")
    r = a.get(paths[0], {"Host": HOST})
    expect(r.cache_status.hit and not r.cache_status.stale,
           f"fresh again after its refresh: {r.cache_status.raw!r}")


@scenario
def hard_tag_and_soft_url_purges(env):
    redis, origin = env.redis(), env.origin()
    origin.script("*", body="{path} v{n}", headers={"Cache-Tag": "red, blue"})
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}})
    for p in ("/c/1", "/c/2"):
        corral.get(p, {"Host": HOST})
    expect_eq(purge(corral, tag="blue", soft="0"), 2, "entries deleted under blue")
    expect_eq(redis.entry_keys(), [], "entries left after a hard purge")
    expect_eq(purge(corral, tag="blue"), 0, "a purged tag names nothing")
    expect_eq(purge(corral, tag="nothing"), 0, "an unknown tag")
    r = corral.get("/c/1", {"Host": HOST})
    expect_eq((r.text, r.cache_status.stored), ("/c/1 v2", True), "fetched again")

    expect_eq(purge(corral, url=f"http://{HOST}/c/1", soft="1"), 1, "a soft URL purge")
    expect(redis.exists(entry_key("/c/1")), "a soft purge keeps the entry")
    r = corral.get("/c/1", {"Host": HOST})
    expect_eq((r.text, r.cache_status.stale), ("/c/1 v2", True), "served stale after it")
    wait_for(lambda: origin.count("/c/1") == 3, what="its one refresh")
    expect_eq(purge(corral, url=f"http://{HOST}/c/1", soft="1"), 1, "softened again")
    expect_eq(purge(corral, url=f"http://{HOST}/c/1", soft="1"), 0,
              "an entry already stale is left as it is")


@scenario
def prefix_purge_takes_glob_characters_as_themselves(env):
    """A prefix is a prefix: '?', '*' and '[' in it (at its start, middle
    or end) match themselves, never another character, nor any run."""
    redis, origin = env.redis(), env.origin()
    origin.script("*", body="{path} v{n}")
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}})
    paths = ["/p?id=1", "/p?id=12", "/p/id=1", "/p-id=1", "/s*x", "/sx", "/sxy", "/ba", "/bx"]
    for p in paths:
        expect(corral.get(p, {"Host": HOST}).cache_status.stored, f"{p} stored")

    def left():
        return sorted(p for p in paths if redis.exists(entry_key(p)))
    for prefix, purged in (("*", 0), ("?" + HOST[1:] + "/", 0), (f"{HOST}/b[ax]", 0),
                           (f"{HOST}/b[", 0), (f"{HOST}/p?id=1", 2), (f"{HOST}/s*", 1)):
        expect_eq(purge(corral, prefix=prefix, soft="0"), purged, f"entries under {prefix!r}")
    expect_eq(left(), sorted(["/p/id=1", "/p-id=1", "/sx", "/sxy", "/ba", "/bx"]),
              "entries left: none whose key the prefix does not begin")


# -- purges at scale ---------------------------------------------------------------------------
#
# Large tags are built in Redis directly: one entry stored through Corral is
# copied under many keys by a script, and each copy joins the tag's set in
# whatever form Corral gave it (a set, or a sorted set by expiry).

FILL_LUA = """
local blob = redis.call('GET', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
local kind = KEYS[2] and redis.call('TYPE', KEYS[2])['ok']
local score = kind == 'zset' and redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')[2]
for i = 2, #ARGV do
  redis.call('SET', ARGV[1] .. '{' .. ARGV[i] .. '}:entry', blob, 'PX', ttl)
  if kind == 'set' then redis.call('SADD', KEYS[2], ARGV[i]) end
  if kind == 'zset' then redis.call('ZADD', KEYS[2], score, ARGV[i]) end
end
return #ARGV - 1
"""
FILL_CHUNK = 5000


def tag_keys(redis, tag):
    """The Redis keys that file entries under tag."""
    return redis.keys(f"{PREFIX}{{tag:{tag}}}:*")


def tag_members(redis, tag):
    """Every key tag's sets name, whatever their form."""
    members = set()
    for k in tag_keys(redis, tag):
        kind = redis.cmd("TYPE", k)
        if kind == "set":
            members |= set(redis.cmd("SMEMBERS", k))
        elif kind == "zset":
            members |= set(redis.cmd("ZRANGE", k, "0", "-1"))
    return members


def copy_entries(redis, corral, paths, tag=None):
    """Stores paths[0] through corral, then copies its entry to every other
    path (and files each under tag, as Corral filed the first)."""
    r = corral.get(paths[0], {"Host": HOST})
    expect(r.status == 200 and r.cache_status.stored, f"{paths[0]} stored: {r}")
    keys = [entry_key(paths[0])]
    if tag is not None:
        wait_for(lambda: len(tag_keys(redis, tag)) == 1, what=f"{paths[0]} filed under {tag}")
        keys.append(tag_keys(redis, tag)[0])
    for i in range(1, len(paths), FILL_CHUNK):
        chunk = [cache_key(p) for p in paths[i:i + FILL_CHUNK]]
        redis.cmd("EVAL", FILL_LUA, str(len(keys)), *keys, PREFIX, *chunk)


def reconnects(corral):
    s = corral.stats()["redis"]
    return s["connects"], s["disconnects"]


BIG_TAG = 50_000
DURING_MAX = 20		# entries stored while the purge of BIG_TAG runs


@scenario(timeout=180)
def hard_purge_of_a_50000_key_tag_deletes_them_all_without_reconnecting(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/big/*", body="{path} v{n}", headers={"Surrogate-Key": "big"})
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}})
    paths = [f"/big/{i}" for i in range(BIG_TAG)]
    copy_entries(redis, corral, paths, tag="big")
    expect_eq(len(tag_members(redis, "big")), BIG_TAG, "keys filed under the tag")
    sample = paths[1:BIG_TAG:BIG_TAG // 20]
    for p in sample:
        r = corral.get(p, {"Host": HOST})
        expect(r.cache_status.hit, f"{p}, a copy, served from the cache: {r.cache_status.raw!r}")
    before, heard = reconnects(corral), corral.stats()["redis"]["purges_received"]

    purging = Background(corral.admin, "POST", "/purge?tag=big&soft=0", timeout=120)
    snapshot = f"{PREFIX}{{tag:big}}:purging"
    wait_for(lambda: purging.done() or redis.exists(snapshot), what="the purge's snapshot")
    # Entries stored once the purge took its snapshot are not its to delete.
    during = []
    while not purging.done() and len(during) < DURING_MAX:
        path = f"/big/new/{len(during)}"
        expect(corral.get(path, {"Host": HOST}).cache_status.stored, f"{path} stored")
        during.append(path)
    r = purging.result()
    expect_eq(r.status, 200, f"hard purge of {BIG_TAG} keys: {r.text!r}")
    expect(len(during) > 0, "no store while the purge ran (it ended before the snapshot was seen)")
    expect_eq(r.json()["purged"], BIG_TAG, f"entries deleted ({len(during)} stored meanwhile)")
    expect_eq(reconnects(corral), before, "Redis (connects, disconnects) across the purge")
    expect_eq(sorted(redis.entry_keys()), sorted(entry_key(p) for p in during),
              "entries left in Redis: those stored while it ran")
    wait_for(lambda: tag_members(redis, "big") == {cache_key(p) for p in during},
             what="the tag to name the entries stored while it ran, and them only")
    wait_for(lambda: corral.stats()["redis"]["purges_received"] - heard >= BIG_TAG,
             timeout=60, what="every purge broadcast heard")
    for p in sample:
        r = corral.get(p, {"Host": HOST})
        expect(not r.cache_status.hit, f"{p} after the purge: {r.cache_status.raw!r}")
        expect_eq(origin.count(p), 1, f"origin fetches of {p}")


@scenario
def hard_tag_purge_that_fails_half_way_is_finished_by_a_retry(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/r/*", body="{path} v{n}", headers={"Cache-Tag": "r"})
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}})
    n = 2000
    paths = [f"/r/{i:04d}" for i in range(n)]
    copy_entries(redis, corral, paths, tag="r")
    # One key in the middle cannot be invalidated: its variants are not a set.
    bad = paths[n // 2]
    variants = f"{PREFIX}{{{cache_key(bad)}}}:variants"
    redis.cmd("SET", variants, "not a set")

    r = corral.purge(tag="r", soft="0")
    expect_eq(r.status, 503, f"a purge that met a failure: {r.text!r}")
    left = redis.entry_keys()
    expect(0 < len(left) < n, f"entries left after the failed purge: {len(left)} of {n}")
    members = tag_members(redis, "r")
    named = {entry_key(p) for p in paths if cache_key(p) in members}
    expect_eq(sorted(named ^ set(left)), [],
              "the tag names exactly the entries left: none the purge deleted")

    # Deleted entries fetched again, no longer tagged: not the tag's now.
    origin.script("/r/*", body="{path} v{n}")
    gone = [p for p in paths if entry_key(p) not in left]
    gone = gone[:3] + gone[-3:]	# the first deleted, and the last
    for p in gone:
        expect(corral.get(p, {"Host": HOST}).cache_status.stored, f"{p} stored again, untagged")
    redis.cmd("DEL", variants)
    r = corral.purge(tag="r", soft="0")
    expect_eq(r.status, 200, f"the retry: {r.text!r}")
    expect_eq(r.json()["purged"], len(left), "entries the retry deleted")
    expect_eq(redis.entry_keys(), sorted(entry_key(p) for p in gone),
              "entries left after the retry: those that no longer have the tag")
    expect_eq(tag_keys(redis, "r"), [], "the tag's keys left after the retry")


@scenario
def tag_sets_of_the_earlier_format_are_purged_too(env):
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}})
    paths = [f"/old/{i}" for i in range(1200)]	# more than two batches
    copy_entries(redis, corral, paths)
    plain = f"{PREFIX}{{tag:old}}:keys"	# a plain set, as earlier versions kept
    redis.cmd("SADD", plain, *[cache_key(p) for p in paths])
    redis.cmd("PEXPIRE", plain, "3600000")
    expect_eq(purge(corral, tag="old"), len(paths), "entries softened through the plain set")
    expect_eq(purge(corral, tag="old", soft="0"), len(paths),
              "entries deleted through the plain set")
    expect_eq(redis.entry_keys(), [], "entries left")
    expect_eq(tag_keys(redis, "old"), [], "the tag's sets left")


PRUNE_STORES, PRUNE_SECONDS = 120, 6	# new keys filed under one tag, 1 s ttl each
LIVE_WINDOW_S = 2.0	# an entry's 1 s, the grace after it ([redis] timeout), slack


def stored_within(times, end):
    """Stores made in the LIVE_WINDOW_S before end: the keys a pruned set
    may still hold then (and a few a store has not yet dropped)."""
    return sum(1 for t in times if end - LIVE_WINDOW_S < t <= end) + 5


@scenario
def tag_sets_drop_members_whose_entries_expired(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/exp/*", body="{path} v{n}", headers={"Cache-Tag": "short"})
    corral = env.corral(redis, origin,
                        routes={"/": {"ttl": "1s", "stale_while_revalidate": "0s"}})
    times = []

    def store(i):
        r = corral.get(f"/exp/{i}", {"Host": HOST})
        times.append(time.monotonic())
        return r.cache_status.stored

    # A new key every 50 ms, each gone after 1 s: about 20 live at a time.
    stored = paced(PRUNE_STORES, PRUNE_SECONDS, store)
    expect_eq(stored.count(True), PRUNE_STORES, "entries stored")
    last = cache_key(f"/exp/{PRUNE_STORES - 1}")
    wait_for(lambda: last in tag_members(redis, "short"), what="the last key filed")
    members, bound = len(tag_members(redis, "short")), stored_within(times, times[-1])
    peak = max(stored_within(times, t) for t in times)
    expect(peak < PRUNE_STORES // 2, f"stores spread over {PRUNE_SECONDS} s: "
           f"at most {peak} within {LIVE_WINDOW_S} s")
    expect(members <= bound, f"members of the tag after {PRUNE_STORES} keys stored under it, "
           f"each for 1 s: {members} (want at most {bound})")
    tags = corral.stats()["tags"]
    expect(members <= tags["largest_set"] <= peak, f"/stats tags (largest at most {peak}): {tags}")
    expect(tags["pruned"] >= PRUNE_STORES - bound, f"/stats tags.pruned: {tags}")
    metrics = corral.admin("GET", "/metrics").text
    expect(f"corral_tag_set_members_max {tags['largest_set']}\n" in metrics,
           "the largest tag set in /metrics")


PURGERS, PURGED_KEYS = 20, 20_000


@scenario(timeout=180)
def twenty_concurrent_prefix_purges_all_succeed_without_reconnecting(env):
    redis, origin = env.redis(), env.origin()
    # Requests wait for Redis no longer than this while purges run.
    extra = {"redis": {"timeout": f"{round(100 * SLOWNESS)}ms"}}
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}}, extra=extra)
    paths = [f"/cp/{i % PURGERS}/{i}" for i in range(PURGED_KEYS)]
    copy_entries(redis, corral, paths)
    expect_eq(len(redis.entry_keys()), PURGED_KEYS, "entries before the purges")
    before = reconnects(corral)
    # Half of them purge one part each, the other half everything at once.
    prefixes = [f"{HOST}/cp/{j}/" if j % 2 else f"{HOST}/cp/" for j in range(PURGERS)]
    barrier = threading.Barrier(PURGERS)
    results = [None] * PURGERS

    def purger(j):
        barrier.wait()
        results[j] = corral.admin("POST", f"/purge?prefix={prefixes[j]}", timeout=120)

    threads = [threading.Thread(target=purger, args=(j,), daemon=True)
               for j in range(PURGERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(150)
    expect_eq([r.status if r else None for r in results], [200] * PURGERS,
              "statuses of the concurrent purges")
    expect_eq(sum(r.json()["purged"] for r in results), PURGED_KEYS,
              "entries deleted, summed over the purges (each counted once)")
    expect_eq(reconnects(corral), before, "Redis (connects, disconnects) across the purges")
    expect_eq(len(redis.entry_keys()), 0, "entries left")


PURGES_MAX = 64	# purges one process runs at once (cache_purge.c)


@scenario
def purges_past_the_limit_are_refused_with_retry_after_and_the_others_finish(env):
    redis, origin = env.redis(), env.origin()
    proxy = env.redis_proxy(redis)
    # More admin connections than purges may run: the purge limit answers.
    corral = env.corral(proxy, origin, wait_redis=True,
                        extra={"server": {"admin_max_connections": str(PURGES_MAX + 8)}})
    proxy.hold_replies_after(b"SCAN")	# every purge stays at its first batch
    runs = [Background(corral.purge, prefix=f"{HOST}/lim/{j}/") for j in range(PURGES_MAX)]
    wait_for(lambda: corral.log().count("purge prefix") == PURGES_MAX,
             what=f"{PURGES_MAX} purges running")
    r = corral.purge(prefix=f"{HOST}/lim/more/")
    expect_eq((r.status, r.headers.get("Retry-After")), (503, "1"),
              f"one purge more: {r.text!r}")
    proxy.release()
    expect_eq([run.result().status for run in runs], [200] * PURGES_MAX,
              "the running purges, once Redis answers")
    expect_eq(corral.purge(prefix=f"{HOST}/lim/more/").status, 200, "the refused one again")
