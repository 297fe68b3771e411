# SPDX-License-Identifier: MIT
"""What notifications cost a fleet: a store is heard only by the processes
that wait for its key; an invalidation or purge by every process. Measured
on a fleet of 12 processes (3 instances of 4 workers) on one Redis, and on
a cluster, where fills travel by sharded pub/sub through the key's node."""

import urllib.request

from harness import HOST, Background, expect, expect_eq, scenario, stampede, wait_for
from harness.cluster import (RedisCluster, path_slot, paths_in_slots, redis_figures,
                             start_cluster)

STORES = 20


def fleet_redis(fleet, name):
    return sum(redis_figures(c)[name] for c in fleet)


def purge(corral, path):
    req = urllib.request.Request(f"{corral.admin_url}/purge?url=http://{HOST}{path}",
                                 method="POST")
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.read().strip()


@scenario(timeout=180)
def stores_reach_only_waiters_and_purges_reach_all_twelve_processes(env):
    redis, origin = env.redis(), env.origin()
    fleet = [env.corral(redis, origin, extra={"server": {"workers": "4"}})
             for _ in range(3)]
    expect_eq(sum(c.stats()["workers"] for c in fleet), 12, "processes in the fleet")
    wait_for(lambda: redis.subscribers() == 12, what="12 purge subscriptions")

    # Stores nobody waits for: no message at all (one channel for all
    # stores would have delivered STORES x 12).
    for i in range(STORES):
        expect(fleet[i % 3].get(f"/quiet/{i}").cache_status.stored, f"store {i}")
    expect_eq(fleet_redis(fleet, "fills_received"), 0, "fill messages for unwatched stores")

    # A cold stampede: only the processes that waited hear the fill.
    origin.script("/hot", delay_ms=300)
    results = stampede(fleet, 120, "/hot")
    expect(all(r.status == 200 for r in results), "stampede answered")
    expect_eq(origin.count("/hot"), 1, "origin fetches of the stampede")
    fills = fleet_redis(fleet, "fills_received")
    expect(1 <= fills <= 11, f"fill messages for one contended store: {fills} (at most 11)")

    # A purge must reach every process: 12 messages.
    before = fleet_redis(fleet, "purges_received")
    expect_eq(purge(fleet[0], "/hot"), b'{"purged": 1}', "purge reply")
    wait_for(lambda: fleet_redis(fleet, "purges_received") - before == 12,
             what="the purge to reach all 12 processes")


@scenario(timeout=120)
def cluster_fills_stay_on_the_keys_node_and_prefix_purge_scans_every_primary(env):
    cluster, origin = start_cluster(env), env.origin()
    fleet = [env.corral(cluster.address, origin, extra=cluster.corral_extra(),
                        wait_redis=True) for _ in range(2)]
    path = "/shard"
    node = cluster.primary_of(path_slot(path))
    origin.script(path, hold=True)
    clients = Background(stampede, fleet, 20, path)
    wait_for(lambda: origin.held(path) == 1, what="the fetch to hold the lock")
    channel = f"corral:{{{HOST}{path}}}:filled"
    wait_for(lambda: node.cmd("PUBSUB", "SHARDNUMSUB", channel)[1] >= 1,
             what="a waiter to subscribe on the key's node")
    others = [n for n in cluster.nodes[:3] if n is not node and n.running()]
    expect(all(n.cmd("PUBSUB", "SHARDNUMSUB", channel)[1] == 0 for n in others),
           "no subscription on the other primaries")
    origin.release(path)
    expect(all(r.status == 200 for r in clients.result()), "every waiter answered")
    expect_eq(origin.count(path), 1, "origin fetches")
    wait_for(lambda: node.cmd("PUBSUB", "SHARDNUMSUB", channel)[1] == 0,
             what="the waiters to unsubscribe once filled")

    # One entry on each primary, then a purge by prefix: it scans them all,
    # and every process hears of every key (PUBLISH reaches every node).
    by_range = paths_in_slots(RedisCluster.RANGES, 1, prefix="/p")
    for paths in by_range.values():
        expect(fleet[1].get(paths[0]).cache_status.stored, f"{paths[0]} stored")
    before = [redis_figures(c)["purges_received"] for c in fleet]
    req = urllib.request.Request(f"{fleet[0].admin_url}/purge?prefix={HOST}/",
                                 method="POST")
    with urllib.request.urlopen(req, timeout=10) as r:
        expect_eq(r.read().strip(), b'{"purged": 4}', "prefix purge over 3 primaries")
    wait_for(lambda: [redis_figures(c)["purges_received"] - b
                      for c, b in zip(fleet, before)] == [4, 4],
             what="both instances to hear the 4 invalidations")
    expect(all(not n.cmd("KEYS", "*:entry") for n in cluster.nodes[:3] if n.running()),
           "no entry left on any primary")


def waiters_reads(env, path, **script):
    """Redis commands instance b sends after a fill wakes its ten waiters
    for path, which instance a fetches (held by the origin until they all
    wait), and what the waiters got."""
    redis, origin = env.redis(), env.origin()
    # No re-check of the lock (lock_poll) while they wait: its GET would
    # be counted, and only the fill may wake them.
    a, b = env.fleet(2, redis, origin, routes={"/": {"lock_poll": "60s"}})
    origin.script(path, hold=True, **script)
    lead = Background(a.get, path)
    wait_for(lambda: origin.held(path) == 1, what="a to fetch under the lock")
    base = b.stats()["redis"]["commands"]
    waiters = Background(stampede, [b], 10, path)
    # b: a GET (absent), the acquire (busy), then, once subscribed, a GET
    # of the lock (still held): the wait.
    wait_for(lambda: b.stats()["redis"]["commands"] - base == 3 and
             b.stats()["in_progress"]["requests"] == 10,
             what="b's ten requests to wait for the fill")
    before = b.stats()["redis"]["commands"]
    origin.release(path)
    results = waiters.result()
    expect_eq(lead.result().status, 200, "a's request")
    expect_eq(origin.count(path), 1, "origin requests")
    return b.stats()["redis"]["commands"] - before, results


@scenario
def a_fill_brings_a_short_entry_so_waiters_elsewhere_read_nothing(env):
    reads, results = waiters_reads(env, "/short", body="v1")
    expect_eq(sorted({(r.status, r.body) for r in results}), [(200, b"v1")], "answers")
    expect_eq(reads, 0, "Redis commands after the fill: it brought the entry")


@scenario
def a_fill_of_a_long_entry_names_the_key_and_waiters_read_it(env):
    # Not a compressible type: stored at its 20000 bytes, too long for
    # the fill to bring.
    reads, results = waiters_reads(env, "/long", size=20000,
                                   headers={"Content-Type": "application/octet-stream"})
    expect_eq(sorted({(r.status, len(r.body)) for r in results}), [(200, 20000)], "answers")
    expect_eq(reads, 1, "Redis commands after the fill: one read for all ten")
