"""Several worker processes behind one port, and the near cache each keeps:
the admin listener of any worker reports the sum; a stampede still costs
one fetch; a worker that dies is restarted; reload and stop reach them all;
fresh entries are served from memory, even while Redis is away, until a
purge or a newer entry replaces them; the workers of one instance share
what they read or fetched."""

import os
import signal
import urllib.request

from harness import (HOST, children, expect, expect_eq, scenario, stampede, wait_for)

PATH = "/users/1"
TWO = {"server": {"workers": "2"}}


def fresh_connection_get(corral, path):
    """A GET on a new connection, so the kernel may pick either worker."""
    req = urllib.request.Request(corral.url + path, headers={"Host": HOST})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status, r.headers.get("Cache-Status"), r.read()


@scenario
def two_workers_share_the_port_and_sum_their_figures(env):
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, extra=TWO)
    wait_for(lambda: len(children(corral.proc.pid)) == 2, what="two workers")

    for i in range(40):
        expect_eq(fresh_connection_get(corral, f"/w/{i % 4}")[0], 200, f"request {i}")
    # Whichever worker answers /stats, it reports both workers' figures.
    for _ in range(10):
        s = corral.stats()
        expect_eq(s["workers"], 2, "/stats workers")
        expect_eq(s["total"]["requests"], 40, "requests summed over the workers")
    expect_eq(origin.count(), 4, "origin requests: one per key for both workers")
    c = corral.counters()
    expect_eq(c["hits"] + c["misses"] + c["collapsed"], 40, "hits + misses + collapsed")


@scenario
def cold_stampede_across_two_instances_of_two_workers_fetches_once(env):
    redis, origin = env.redis(), env.origin()
    origin.script(PATH, delay_ms=300)
    fleet = env.fleet(2, redis, origin, extra=TWO)

    results = stampede(fleet, 100, PATH, headers={"Host": HOST})
    expect_eq(sorted({r.status for r in results}), [200], "statuses")
    expect_eq(len({r.body for r in results}), 1, "distinct bodies")
    expect_eq(origin.count(PATH), 1, "origin requests for four worker processes")


@scenario
def worker_that_dies_is_restarted(env):
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, extra=TWO)
    wait_for(lambda: len(children(corral.proc.pid)) == 2, what="two workers")
    before = children(corral.proc.pid)

    os.kill(before[0], signal.SIGKILL)
    wait_for(lambda: corral.log().count(" started, pid ") == 3 and
             len(set(children(corral.proc.pid)) - set(before)) == 1,
             timeout=10, what="the master to start a new worker")
    wait_for(lambda: corral.stats()["redis"]["up"], what="the new worker's Redis")
    for i in range(10):
        expect_eq(fresh_connection_get(corral, PATH)[0], 200, f"request {i} after")
    expect("died of signal 9" in corral.log(), "the master logged the death")
    # stop() (at the end of the scenario) requires a clean exit 0.


@scenario
def reload_and_stop_reach_every_worker(env):
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, extra=TWO)
    wait_for(lambda: len(children(corral.proc.pid)) == 2, what="two workers")

    with open(corral.config_path, "a") as f:
        f.write("\n[route /new/]\nttl = 2s\n")
    corral.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: corral.log().count("reload: ") >= 2 and
             corral.log().count("loaded, 2 routes") >= 2,
             what="both workers to load the new configuration")
    for _ in range(10):
        expect("/new/" in corral.stats()["routes"], "the new route, whichever worker answers")

    with open(corral.config_path, "a") as f:
        f.write("\n[route /bad/]\nttl = later\n")
    corral.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: "keeping the running configuration" in corral.log(),
             what="the master to refuse the bad configuration")
    expect_eq(len(children(corral.proc.pid)), 2, "workers after a refused reload")
    kids = children(corral.proc.pid)
    corral.stop()	# SIGTERM to the master; raises unless it exits 0
    expect(all(not os.path.exists(f"/proc/{k}") for k in kids), "every worker exited")


@scenario
def fresh_entries_are_served_from_memory_even_without_redis(env):
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}})

    expect(corral.get(PATH, {"Host": HOST}).cache_status.stored, "first request stored")
    r = corral.get(PATH, {"Host": HOST})
    expect(r.cache_status.hit, f"second request a hit: {r.cache_status.raw!r}")
    before = corral.stats()["redis"]["commands"]
    for i in range(20):
        expect(corral.get(PATH, {"Host": HOST}).cache_status.hit, f"hit {i}")
    c = corral.counters()
    expect(c["near_hits"] >= 20, f"near_hits {c['near_hits']}: from memory")
    expect(corral.stats()["redis"]["commands"] - before < 5,
           "memory hits sent (almost) no Redis commands")

    redis.kill()
    wait_for(lambda: not corral.stats()["redis"]["up"], what="corral to notice Redis died")
    r = corral.get(PATH, {"Host": HOST})
    expect_eq((r.status, r.cache_status.hit), (200, True),
              "a fresh entry served from memory while Redis is down")
    expect_eq(origin.count(PATH), 1, "origin requests")


@scenario
def purge_drops_the_memory_copy_in_every_instance(env):
    redis, origin = env.redis(), env.origin()
    origin.script(PATH, body="v{n}")
    a, b = env.fleet(2, redis, origin, routes={"/": {"ttl": "1h"}})

    expect_eq(a.get(PATH, {"Host": HOST}).text, "v1", "a fetches")
    expect_eq(b.get(PATH, {"Host": HOST}).text, "v1", "b reads Redis")
    expect(b.get(PATH, {"Host": HOST}).cache_status.hit, "b now hits from memory")

    purge = urllib.request.Request(
        a.admin_url + f"/purge?url=http://{HOST}{PATH}", method="POST")
    with urllib.request.urlopen(purge, timeout=10) as r:
        expect_eq(r.read().strip(), b'{"purged": 1}', "purge reply")
    wait_for(lambda: b.stats()["redis"]["purges_received"] >= 1,
             what="b to hear of the purge")
    r = b.get(PATH, {"Host": HOST})
    expect_eq((r.text, r.cache_status.stored), ("v2", True),
              "after the purge b fetches anew instead of serving its memory copy")
    expect_eq(a.get(PATH, {"Host": HOST}).text, "v2",
              "a dropped its memory copy too and reads the new entry")
    expect_eq(origin.count(PATH), 2, "origin requests")


@scenario
def a_loop_over_more_keys_than_the_near_cache_holds_still_hits_it(env):
    # About 40 entries fit in 64 KiB. A client cycles through 120 keys:
    # under LRU alone each key is pushed out just before its turn comes
    # again, and memory never answers. With admission the entries already
    # held stay, and the newcomers are refused and counted.
    redis, origin = env.redis(), env.origin()
    origin.script("/loop/*", size=1024)
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}},
                        extra={"server": {"l1_max_bytes": "64k", "l2_max_bytes": "0"}})
    keys = [f"/loop/{i}" for i in range(120)]
    for path in keys:
        expect_eq(corral.get(path).status, 200, f"{path} fetched")
    before = corral.counters()["near_hits"]
    for _ in range(3):
        for path in keys:
            r = corral.get(path)
            expect_eq((r.status, len(r.body)), (200, 1024), f"{path} from the cache")
    hits = corral.counters()["near_hits"] - before
    expect(hits >= 60, f"near_hits {hits} of 360 lookups: the entries held keep hitting")
    stats = corral.stats()["near_cache"]
    expect(stats["rejected"] > 0 and stats["bytes"] <= 64 * 1024,
           f"newcomers refused, the bound kept: {stats}")
    metrics = corral.admin("GET", "/metrics").text
    expect(f"corral_near_cache_rejected_total {stats['rejected']}" in metrics,
           "the refusals in /metrics")
    expect_eq(origin.count(), 120, "one origin request per key")


# Each worker's own near cache off: whatever memory answers is shared.
SHARED_ONLY = {"server": {"workers": "2", "l1_max_bytes": "0"}}


@scenario
def an_entry_one_worker_stored_answers_every_worker_from_shared_memory(env):
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}}, extra=SHARED_ONLY)
    wait_for(lambda: len(children(corral.proc.pid)) == 2, what="two workers")

    first = fresh_connection_get(corral, PATH)[1]
    expect("fwd=miss" in first, f"the first request fetches: {first!r}")
    before = corral.stats()
    for i in range(20):
        status, cache_status, _ = fresh_connection_get(corral, PATH)
        expect_eq((status, "hit" in cache_status), (200, True), f"request {i}")
    after = corral.stats()
    expect_eq(after["shared_cache"]["hits"] - before["shared_cache"]["hits"], 20,
              "every hit from the shared near cache, whichever worker took it")
    expect(after["redis"]["commands"] - before["redis"]["commands"] < 5,
           "no Redis round trip per hit")
    expect_eq((after["shared_cache"]["entries"], after["shared_cache"]["stores"]), (1, 1),
              "one copy for the instance")

    redis.kill()
    wait_for(lambda: not corral.stats()["redis"]["up"], what="both workers to notice Redis died")
    for i in range(10):
        status, cache_status, _ = fresh_connection_get(corral, PATH)
        expect_eq((status, "hit" in cache_status), (200, True), f"request {i} without Redis")
    expect_eq(origin.count(PATH), 1, "origin requests")
    metrics = corral.admin("GET", "/metrics").text
    for name in ("corral_shared_cache_hits_total", "corral_shared_cache_entries 1"):
        expect(name in metrics, f"{name} in /metrics")


@scenario
def purge_and_a_new_entry_reach_the_shared_near_cache(env):
    redis, origin = env.redis(), env.origin()
    origin.script(PATH, body="v{n}")
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}}, extra=SHARED_ONLY)
    wait_for(lambda: len(children(corral.proc.pid)) == 2, what="two workers")

    expect_eq(fresh_connection_get(corral, PATH)[2], b"v1", "fetched")
    expect_eq(fresh_connection_get(corral, PATH)[2], b"v1", "from memory")
    purge = urllib.request.Request(
        corral.admin_url + f"/purge?url=http://{HOST}{PATH}", method="POST")
    with urllib.request.urlopen(purge, timeout=10) as r:
        expect_eq(r.read().strip(), b'{"purged": 1}', "purge reply")
    expect_eq(corral.stats()["shared_cache"]["entries"], 0, "the shared copy went at once")
    for i in range(10):
        expect_eq(fresh_connection_get(corral, PATH)[2], b"v2", f"request {i} after the purge")
    expect_eq(origin.count(PATH), 2, "origin requests")
