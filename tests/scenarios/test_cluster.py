# SPDX-License-Identifier: MIT
"""Corral on a real Redis Cluster (3 primaries, 3 replicas, short
cluster-node-timeout): one fetch per key for the whole fleet, whichever
primary owns the key, through a slot migration and through a failover."""

from harness import (PREFIX, Background, cache_key, children, entry_key, expect, expect_eq,
                     expect_fetches, http_request, lock_key, paced, scenario, slow, stampede,
                     wait_for)
from harness.cluster import (RedisCluster, expect_all_ok, key_slot, path_in_slot, path_slot,
                             paths_in_slots, redis_figures, start_cluster)

ROUTE = {"/": {"ttl": "3s", "stale_while_revalidate": "60s", "lock_poll": "5s"}}
STAMPEDE_ROUTE = {"/": dict(ROUTE["/"], ttl="8s")}


def cluster_fleet(env, cluster, origin, n=3, timeout="1s", routes=ROUTE):
    return [env.corral(cluster.address, origin, routes=routes,
                       extra=cluster.corral_extra(timeout), wait_redis=True)
            for _ in range(n)]


def stampedes(fleet, n, paths):
    """n concurrent requests on each path at once, spread over fleet."""
    runs = [Background(stampede, fleet, n, p) for p in paths]
    return {p: r.result() for p, r in zip(paths, runs)}


@scenario(timeout=180)
def cluster_cold_and_stale_stampedes_fetch_once_per_key_on_every_primary(env):
    # A ttl well past the time the 1200 clients of a slow machine take:
    # a request that comes after it is a stale hit, and its refresh a
    # second fetch.
    cluster, origin = start_cluster(env), env.origin(delay="300ms")
    fleet = cluster_fleet(env, cluster, origin, routes=STAMPEDE_ROUTE)
    by_range = paths_in_slots(RedisCluster.RANGES, 2)
    paths = [p for i in sorted(by_range) for p in by_range[i]]

    for path, results in stampedes(fleet, 200, paths).items():
        expect_all_ok(results, f"cold {path}")
        expect_eq([r for r in results if r.cache_status.stale], [],
                  f"cold {path}: stale hits (the stampede outlasted the ttl)")
        expect_fetches(origin, path, 1, fleet, f"origin fetches of cold {path}")
    holders = set()
    for path in paths:
        nodes = cluster.node_with_key(entry_key(path))
        expect_eq([n.name for n in nodes], [cluster.primary_of(path_slot(path)).name],
                  f"the primary holding {path}'s entry")
        holders.add(nodes[0].name)
    expect_eq(len(holders), 3, "primaries holding entries")

    # Stale: every key past its ttl, then 100 requests each at once.
    for path in paths:
        key = entry_key(path)
        node = cluster.primary_of(path_slot(path))
        wait_for(lambda: 0 < node.cmd("PTTL", key) < 60_000 - 1100, timeout=20,
                 what=f"{path} to go stale")
    for path, results in stampedes(fleet, 100, paths).items():
        expect_all_ok(results, f"stale {path}")
        expect(all(r.cache_status.hit for r in results), f"stale {path} answered from cache")
    for path in paths:
        node = cluster.primary_of(path_slot(path))
        wait_for(lambda: node.cmd("PTTL", entry_key(path)) > 60_000, timeout=slow(30),
                 what=f"the refresh of {path} to be stored")
        expect_fetches(origin, path, 2, fleet,
                       f"origin fetches of {path} after the stale stampede")
    figures = redis_figures(fleet[0])
    expect_eq(sorted((n["address"], n["up"], n["slots"]) for n in figures["nodes"]),
              sorted((n.address, True, hi - lo + 1)
                     for n, (lo, hi) in zip(cluster.nodes, RedisCluster.RANGES)),
              "nodes, states and slots in /stats")
    health = http_request(fleet[0].admin_host, fleet[0].admin_port, "/health").text.split()
    expect_eq(health[:3], ["ok", "redis=up", "mode=cluster"], "/health")
    expect_eq(sorted(health[3:]), sorted(f"{n.address}=up" for n in cluster.nodes[:3]),
              "/health nodes")


@scenario(timeout=180)
def cluster_slot_migrated_while_refresh_holds_lock_fetches_once(env):
    cluster, origin = start_cluster(env), env.origin()
    fleet = cluster_fleet(env, cluster, origin, timeout="2s")
    path = "/moving"
    slot = path_slot(path)
    source = cluster.primary_of(slot)
    target = next(n for n in cluster.nodes[:3] if n is not source)
    # Another key in the same slot, stored now: read through an ASK later.
    neighbour = path_in_slot(slot, avoid={path})
    expect(fleet[0].get(neighbour).cache_status.stored, f"{neighbour} stored")

    origin.script(path, hold=True)
    run = Background(stampede, fleet, 60, path)
    wait_for(lambda: origin.held(path) == 1, what="the refresh to hold the lock")
    expect(source.cmd("EXISTS", lock_key(path)) == 1, "the lock is on the source")

    cluster.migrate_slot(slot, source, target, finish=False)
    # The slot is MIGRATING: the neighbour's entry is on the target only.
    r = fleet[1].get(neighbour)
    expect(r.status == 200 and r.cache_status.hit, f"neighbour read through ASK: {r}")
    cluster.finish_migration(slot, source, target)
    origin.release(path)
    results = run.result()

    expect_all_ok(results, "requests during the migration")
    expect_fetches(origin, path, 1, fleet, "origin fetches across the migration")
    expect_eq([n.name for n in cluster.node_with_key(entry_key(path))], [target.name],
              "the node holding the entry")
    moved = sum(redis_figures(c)["moved"] for c in fleet)
    asked = sum(redis_figures(c)["ask"] for c in fleet)
    expect(moved >= 1, f"MOVED followed ({moved})")
    expect(asked >= 1, f"ASK followed ({asked})")

    # A migration completed while the instance was idle: the first MOVED
    # corrects its slot map, so 20 requests cost a redirect or two, not
    # one per command, and /stats names the new owner at once. (No near
    # cache: every request reads Redis.)
    lo, hi = next(r for n, r in zip(cluster.nodes, RedisCluster.RANGES) if n is source)
    t_lo, t_hi = next(r for n, r in zip(cluster.nodes, RedisCluster.RANGES) if n is target)
    later = next(p for p in (f"/m{i}" for i in range(100_000))
                 if lo <= path_slot(p) <= hi and path_slot(p) != slot)
    extra = dict(cluster.corral_extra("2s"), server={"l1_max_bytes": "0", "l2_max_bytes": "0"})
    lone = env.corral(cluster.address, origin, routes=ROUTE, extra=extra, wait_redis=True)
    expect(lone.get(later).cache_status.stored, f"{later} stored on the source")
    cluster.migrate_slot(path_slot(later), source, target)
    before = redis_figures(lone)["moved"]
    for i in range(20):
        r = lone.get(later)
        expect_eq((r.status, r.cache_status.hit), (200, True), f"request {i} after the migration")
    redirects = redis_figures(lone)["moved"] - before
    expect(1 <= redirects <= 2, f"MOVED redirects for 20 requests: {redirects}, want 1 or 2")

    def slots_of(node):
        return next(n["slots"] for n in redis_figures(lone)["nodes"]
                    if n["address"] == node.address)
    wait_for(lambda: (slots_of(source), slots_of(target)) == (hi - lo - 1, t_hi - t_lo + 3),
             timeout=5, what="/stats to count both migrated slots on the target")


@scenario(timeout=180)
def cluster_primary_killed_during_stale_stampede_loses_no_request(env):
    cluster, origin = start_cluster(env), env.origin(delay="1s")
    fleet = cluster_fleet(env, cluster, origin, timeout="8s")	# above any failover
    path = "/failover"
    slot = path_slot(path)
    primary = cluster.primary_of(slot)
    replica = cluster.replica_of(primary)

    expect(fleet[0].get(path).cache_status.stored, "priming request")
    key = entry_key(path)
    wait_for(lambda: key in replica.cmd("CLUSTER", "GETKEYSINSLOT", str(slot), "100"),
             what="the entry on the replica")
    wait_for(lambda: 0 < primary.cmd("PTTL", key) < 60_000 - 1100, timeout=10,
             what=f"{path} to go stale")
    run = Background(stampede, fleet, 100, path)
    wait_for(lambda: origin.count(path) == 2, what="the refresh to start")
    primary.kill()

    answers = []

    def promoted():	# a request on every poll until then
        answers.append(fleet[len(answers) % 3].get(path))
        return replica.role() == "master"
    wait_for(promoted, timeout=30, what="the replica promoted")
    answers += [c.get(path) for c in fleet]
    expect_all_ok(run.result(), "the stale stampede")
    expect_all_ok(answers, "requests during the failover")
    expect(origin.count(path) - 1 <= 2,
           f"at most 2 origin fetches across the failover ({origin.count(path) - 1})")

    cold = path_in_slot(slot, prefix="/after", avoid={path})
    origin.script(cold, delay_ms=300)
    expect_all_ok(stampede(fleet, 100, cold), "cold stampede after the promotion")
    expect_fetches(origin, cold, 1, fleet, "origin fetches of a cold key after the promotion")
    expect_eq([n.name for n in cluster.node_with_key(entry_key(cold))], [replica.name],
              "the promoted replica holds the new entry")


@scenario(timeout=180)
def cluster_tag_purges_reach_every_primary_in_batches(env):
    cluster, origin = start_cluster(env), env.origin()
    origin.script("/t/*", body="{path} v{n}", headers={"Surrogate-Key": "spread"})
    # What is checked is that every batch reaches its primary, not how
    # soon: a loaded machine (six redis-servers beside a second suite) has
    # been seen to take over 1 s for a batch, and a purge whose batch times
    # out is answered 503 (retry it), which is another scenario's point.
    fleet = cluster_fleet(env, cluster, origin, n=2, timeout="10s",
                          routes={"/": {"ttl": "1h"}})
    owners = {rng: cluster.primary_of(rng[0]) for rng in RedisCluster.RANGES}

    def owner(key):
        return next(n for (lo, hi), n in owners.items() if lo <= key_slot(key) <= hi)

    # One entry stored and filed by corral; more than two purge batches of
    # copies, on all three primaries, filed under the tag the same way.
    paths = [f"/t/{i}" for i in range(1200)]
    expect(fleet[0].get(paths[0]).cache_status.stored, f"{paths[0]} stored")
    members = f"{PREFIX}{{tag:spread}}:members"
    tag_node = owner(members)
    wait_for(lambda: tag_node.cmd("ZCARD", members) == 1, what="the tag's sorted set")
    score = tag_node.cmd("ZRANGE", members, "0", "0", "WITHSCORES")[1]
    template = owner(entry_key(paths[0]))
    blob, ttl = template.cmd_bytes("GET", entry_key(paths[0])), template.cmd("PTTL", entry_key(paths[0]))
    for p in paths[1:]:
        owner(entry_key(p)).cmd("SET", entry_key(p), blob, "PX", str(ttl))
        tag_node.cmd("ZADD", members, score, cache_key(p))
    holders = {owner(entry_key(p)).name for p in paths}
    expect_eq(len(holders), 3, "primaries holding the tag's entries")

    r = fleet[1].purge(tag="spread")
    expect_eq((r.status, r.json()), (200, {"purged": len(paths)}), "a soft purge of the tag")
    expect(fleet[0].get(paths[7]).cache_status.stale, f"{paths[7]} stale after it")
    wait_for(lambda: tag_node.cmd("ZSCORE", members, cache_key(paths[7])) != score,
             what=f"{paths[7]} refreshed and filed again")
    r = fleet[1].purge(tag="spread", soft="0")
    expect_eq((r.status, r.json()), (200, {"purged": len(paths)}), "a hard purge of the tag")
    left = [p for p in paths if owner(entry_key(p)).cmd("EXISTS", entry_key(p))]
    expect_eq(left, [], "entries left on the primaries")
    expect_eq(tag_node.cmd("KEYS", f"{PREFIX}{{tag:spread}}:*"), [], "the tag's sets left")
    expect_eq(sum(redis_figures(c)["disconnects"] for c in fleet), 0, "Redis disconnects")
# -- a primary that dies for good ------------------------------------------------------

DEAD_NODE_TIMEOUT_MS = 2000	# the cluster's cluster-node-timeout in these scenarios
AFTER_OK_ROUNDS = 3		# cold stampedes at +0, +5, +10 s after cluster_state:ok
AFTER_OK_SPAN_S = 10
DEAD_NODE_LOG_LINES_MAX = 8	# per instance (two workers), from the kill on: lost,
				# unreachable (commands timed out), let go


def two_worker_fleet(env, cluster, origin, routes=ROUTE):
    """Three instances of two workers, with the default [redis] timeout."""
    extra = {"redis": {"mode": "cluster", "address": cluster.address},
             "server": {"workers": "2"}}
    fleet = [env.corral(cluster.address, origin, routes=routes, extra=extra,
                        wait_redis=True) for _ in range(3)]
    for c in fleet:
        wait_for(lambda: len(children(c.proc.pid)) == 2 and c.stats()["redis"]["up"],
                 timeout=20, what=f"{c.name}'s two workers up")
    return fleet


def cluster_ok_without(cluster, dead):
    """Every running node but dead says cluster_state:ok."""
    running = [n for n in cluster.nodes if n is not dead and n.running()]
    return all(n.fields("CLUSTER", "INFO").get("cluster_state") == "ok" for n in running)


@scenario(timeout=240)
def cluster_primary_killed_in_cold_stampede_fleet_fetches_once_per_key_after_ok(env):
    cluster = start_cluster(env, node_timeout_ms=DEAD_NODE_TIMEOUT_MS)
    origin = env.origin(delay="1s")
    fleet = two_worker_fleet(env, cluster, origin)
    victim = cluster.nodes[0]	# owns RedisCluster.RANGES[0]
    replica = cluster.replica_of(victim)
    by_range = paths_in_slots(RedisCluster.RANGES, 7, prefix="/cold")
    paths = by_range[0] + by_range[1] + by_range[2][:6]	# 20 keys, 7 on the victim

    run = Background(stampedes, fleet, 6, paths)
    wait_for(lambda: origin.count() >= len(paths), timeout=slow(30),
             what="the cold stampede's fetches in flight")
    victim.kill()
    for path, results in run.result().items():
        expect_all_ok(results, f"cold {path} across the kill")
    wait_for(lambda: replica.role() == "master" and cluster_ok_without(cluster, victim),
             timeout=30, what="the replica promoted and cluster_state:ok")

    def cold_round(i):
        fresh = paths_in_slots([RedisCluster.RANGES[0]], 4, prefix=f"/after{i}-")[0]
        for p in fresh:
            origin.script(p, delay_ms=300)
        got = stampedes(fleet, 6, fresh)
        for p in fresh:
            expect_all_ok(got[p], f"round {i}: {p}")
        return {p: origin.count(p) for p in fresh}

    rounds = paced(AFTER_OK_ROUNDS, AFTER_OK_SPAN_S, cold_round)
    expect(all(set(counts.values()) == {1} for counts in rounds),
           "origin fetches per cold key on the dead primary's slots at +0, +5, +10 s "
           f"after cluster_state:ok (want 1 each): {rounds}")
    for c in fleet:
        nodes = [n["address"] for n in redis_figures(c)["nodes"]]
        expect(victim.address not in nodes and replica.address in nodes,
               f"{c.name}: /stats nodes after the map refresh: {nodes}")
        lines = [l for l in c.log().splitlines() if victim.address in l]
        lost = next((i for i, l in enumerate(lines) if " lost " in l), len(lines))
        lines = lines[lost:]	# its start-up lines (connected, subscribed) aside
        expect(len(lines) <= DEAD_NODE_LOG_LINES_MAX,
               f"{c.name}: {len(lines)} log lines name the dead node "
               f"(at most {DEAD_NODE_LOG_LINES_MAX}), e.g. {lines[-1:]}")


def hold_failover(cluster, primary):
    """primary's replica will not take over on its own: the gap between
    primary's death and a promotion lasts until take_over()."""
    replica = cluster.replica_of(primary)
    replica.cmd("CONFIG", "SET", "cluster-replica-no-failover", "yes")
    return replica


def take_over(replica):
    replica.cmd("CLUSTER", "FAILOVER", "TAKEOVER")
    wait_for(lambda: replica.role() == "master", timeout=20, what="the replica promoted")


@scenario(timeout=240)
def cluster_stale_entry_on_dead_primary_is_read_from_its_replica_until_promotion(env):
    # The instance that stored the entry holds it in memory and serves it
    # stale from there; another one, which never read it, must read it
    # from the slot's replica.
    cluster, origin = start_cluster(env), env.origin()
    primer, corral = [env.corral(cluster.address, origin, routes=ROUTE,
                                 extra={"redis": {"mode": "cluster",
                                                  "address": cluster.address}},
                                 wait_redis=True) for _ in range(2)]
    path = "/gap"
    slot = path_slot(path)
    primary = cluster.primary_of(slot)
    replica = hold_failover(cluster, primary)
    key = entry_key(path)

    expect(primer.get(path).cache_status.stored, "priming request")
    wait_for(lambda: key in replica.cmd("CLUSTER", "GETKEYSINSLOT", str(slot), "100"),
             what="the entry on the replica")
    wait_for(lambda: 0 < primary.cmd("PTTL", key) < 60_000 - 1100, timeout=10,
             what=f"{path} to go stale")
    primary.kill()

    answers = [c.get(path) for c in (primer, corral, corral, corral)]
    expect(all(r.status == 200 and r.cache_status.hit for r in answers),
           f"the stale entry served while its primary is dead: "
           f"{[(r.status, r.cache_status.raw) for r in answers]}")
    expect_fetches(origin, path, 1, [primer, corral], "origin fetches while the primary is dead")
    figures = redis_figures(corral)
    expect(figures["replica_reads"] >= 1, f"replica_reads {figures['replica_reads']}")

    refreshes = figures["map_refreshes"]
    take_over(replica)
    wait_for(lambda: [n["address"] for n in redis_figures(corral)["nodes"]
                      if n["address"] in (primary.address, replica.address)] ==
             [replica.address], timeout=slow(30),
             what="/stats nodes: the replica in, the dead primary dropped")
    expect(redis_figures(corral)["map_refreshes"] > refreshes, "the map was read again")
    r = corral.get(path)
    expect(r.status == 200 and r.cache_status.hit, f"after the promotion: {r.cache_status.raw}")
    wait_for(lambda: replica.cmd("PTTL", key) > 60_000, timeout=slow(30),
             what="the refresh stored on the promoted replica")
    expect_fetches(origin, path, 2, [primer, corral],
                   "origin fetches: one refresh once the slot has a primary")


@scenario(timeout=240)
def cluster_cold_stampede_on_dead_primary_fetches_once_per_instance_until_promotion(env):
    cluster, origin = start_cluster(env), env.origin(delay="300ms")
    fleet = two_worker_fleet(env, cluster, origin)
    primary = cluster.nodes[0]	# owns RedisCluster.RANGES[0]
    hold_failover(cluster, primary)
    paths = paths_in_slots([RedisCluster.RANGES[0]], 5, prefix="/gapcold")[0]
    primary.kill()

    # 12 clients a key: each of the three instances has both workers asking.
    for path, results in stampedes(fleet, 12, paths).items():
        expect_all_ok(results, f"cold {path} while its primary is dead")
    counts = {p: origin.count(p) for p in paths}
    seen = [(redis_figures(c)["replica_reads"], c.counters()["sibling_fills"],
             c.counters()["lock_wait_timeouts"]) for c in fleet]
    expect(all(n <= len(fleet) for n in counts.values()),
           f"origin fetches per cold key while its primary is dead: at most one per "
           f"instance ({len(fleet)}), got {counts}; replica_reads, sibling_fills, "
           f"lock_wait_timeouts per instance: {seen}")
    fills = sum(c.counters()["sibling_fills"] for c in fleet)
    expect(fills >= 1, f"sibling_fills {fills}: no worker took its sibling's entry")
