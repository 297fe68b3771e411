# SPDX-License-Identifier: MIT
"""Several worker processes behind one port, and the near cache each keeps:
the admin listener of any worker reports the sum; a stampede still costs
one fetch; a worker that dies is restarted, with the configuration the
instance runs (a reload's changes to restart-only keys wait for a restart,
and /stats says so); reload and stop reach them all;
fresh entries are served from memory, even while Redis is away, until a
purge or a newer entry replaces them; stale ones too while their refresh
runs; the workers of one instance share what they read or fetched."""

import http.client
import json
import os
import re
import signal
import socket
import time
import urllib.request

from harness import (HOST, MARK_ENV, children, corral_config, entry_key, expect, expect_eq,
                     free_port, marked, scenario, stale_fleet, stampede, tcp_socket_owner,
                     wait_for, wait_until_stale)
from harness.procs import alive

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
def an_instance_killed_or_failing_to_start_leaves_none_of_its_workers(env):
    """The harness's own promise: an instance it kills, or one that never
    sees Redis up during its start, goes with every worker (a master
    killed alone leaves workers serving for good)."""
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, extra=TWO)
    workers = wait_for(lambda: len(children(corral.proc.pid)) == 2 and
                       children(corral.proc.pid), what="two workers")
    corral.kill()
    wait_for(lambda: not any(alive(w) for w in workers), timeout=10,
             what="the killed instance's workers gone")

    nothing = f"127.0.0.1:{free_port()}"	# no Redis ever answers there
    extra = {"server": {"workers": "2"}, "redis": {"timeout": "1s"}}
    mine = os.environ.get(MARK_ENV)
    try:
        env.corral(nothing, origin, extra=extra, wait_redis=True)
    except AssertionError as e:
        expect("report redis up" in str(e), f"the start-up's failure: {e}")
    else:
        raise AssertionError("an instance without Redis reported Redis up")
    # Gone, not left for good: a loaded machine may take a moment to reap.
    def left():
        return [cmd for cmd in marked(mine).values() if "corral" in cmd and " -c " in cmd]
    wait_for(lambda: left() == [], timeout=10,
             what="no process left of the instance that failed to start")
    expect_eq(left(), [], "processes of the instance that failed to start")


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


def redis_commands(corral):
    return corral.stats()["redis"]["commands"]


@scenario
def a_stale_copy_in_memory_is_served_without_redis_while_its_refresh_runs(env):
    # The instance that stored the entry holds it in memory; once stale,
    # its hits are answered from there: one lock attempt starts the
    # refresh, and no hit reads Redis. The refreshed entry replaces it.
    hits = 20
    redis, origin, fleet = stale_fleet(env, 1, PATH)
    corral = fleet[0]
    origin.script(PATH, hold=True, body="v{n}")
    before = redis_commands(corral)
    for i in range(hits):
        r = corral.get(PATH)
        expect_eq((r.status, r.text, r.cache_status.stale), (200, "v1", True),
                  f"stale hit {i + 1} ({r.cache_status.raw})")
    wait_for(lambda: origin.held(PATH) == 1, what="the one refresh to reach the origin")
    c = corral.counters()
    expect_eq((c["stale_hits"], c["near_hits"] >= hits, c["locks_acquired"]),
              (hits, True, 2), "stale_hits, all from memory, locks (prime and refresh)")
    # The lock attempt, and perhaps a renewal; without the copy in memory
    # every hit would read the entry (20 GETs).
    expect(redis_commands(corral) - before <= 3,
           f"{redis_commands(corral) - before} Redis commands for {hits} stale hits")
    origin.release(PATH)
    wait_for(lambda: corral.counters()["stores"] == 2, what="the refresh to be stored")
    r = corral.get(PATH)
    expect_eq((r.text, r.cache_status.hit, r.cache_status.stale), ("v2", True, False),
              f"the refreshed entry replaced the copy ({r.cache_status.raw})")
    expect_eq(origin.count(PATH), 2, "origin requests")


@scenario
def stale_hits_while_another_instance_refreshes_ask_redis_once_per_lock_poll(env):
    # b reads the stale entry once from Redis and keeps it in memory; its
    # lock attempt finds a's refresh and waits for its fill. Until then,
    # within lock_poll, b's hits ask Redis nothing; the fill replaces b's
    # copy.
    redis, origin = env.redis(), env.origin()
    origin.script(PATH, body="v{n}")
    a, b = env.fleet(2, redis, origin, routes={"/": {
        "ttl": "1s", "stale_while_revalidate": "60s", "lock_poll": "5s"}})
    expect_eq(a.get(PATH).text, "v1", "primed through a")
    wait_until_stale(redis, PATH, swr_ms=60_000)
    origin.script(PATH, hold=True, body="v{n}")
    expect(a.get(PATH).cache_status.stale, "a serves stale and refreshes")
    wait_for(lambda: origin.held(PATH) == 1, what="a's refresh to reach the origin")
    before = redis_commands(b)
    for i in range(20):
        r = b.get(PATH)
        expect_eq((r.text, r.cache_status.stale), ("v1", True), f"b's stale hit {i + 1}")
    c = b.counters()
    expect_eq((c["lock_busy"], c["locks_acquired"]), (1, 0), "b's lock attempts: one, busy")
    # A GET, the lock attempt and the watch of the fill (a subscription and
    # a look at the lock); one GET a hit would be 20 more.
    expect(redis_commands(b) - before <= 6,
           f"b sent {redis_commands(b) - before} Redis commands for 20 stale hits")
    origin.release(PATH)
    wait_for(lambda: b.get(PATH).text == "v2", what="a's fill to reach b's memory")
    expect_eq(origin.count(PATH), 2, "origin requests")


@scenario
def a_stale_copy_whose_refresh_cannot_reach_redis_gives_way_to_a_direct_fetch(env):
    # With Redis gone, the copy in memory answers once while its refresh
    # tries; that refresh cannot lock, so the copy is dropped and the next
    # request fetches as any request does while Redis is down.
    redis, origin, fleet = stale_fleet(env, 1, PATH)
    corral = fleet[0]
    redis.kill()
    wait_for(lambda: not corral.stats()["redis"]["up"], what="corral to notice Redis died")
    r = corral.get(PATH)
    expect_eq((r.status, r.text, r.cache_status.stale), (200, "v1", True),
              f"the stale copy answers ({r.cache_status.raw})")
    wait_for(lambda: corral.get(PATH).text == "v2", timeout=10,
             what="a request to fetch without Redis")
    expect_eq(origin.count(PATH), 2, "origin requests")


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


def near_figures(corral):
    """(entries in the workers' own near caches, shared near cache hits)."""
    s = corral.stats()
    return s["near_cache"]["entries"], s["shared_cache"]["hits"]


@scenario
def a_fresh_entry_is_kept_by_a_worker_once_its_shared_copy_was_read_twice(env):
    """A fresh entry fetched goes to the shared near cache alone; the
    worker keeps a copy of its own once the shared one has been read twice,
    and serves it from there. Without the shared cache (l2_max_bytes = 0)
    the worker keeps it at once. A stale entry goes to the worker's own
    cache on its first read: its refresh is asked for once, from there."""
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}, "/s/": {
        "ttl": "1s", "stale_while_revalidate": "60s"}})
    expect_eq(corral.get(PATH).status, 200, "the miss")
    wait_for(lambda: corral.counters()["stores"] == 1, what="the miss stored")
    expect_eq((near_figures(corral), corral.stats()["shared_cache"]["entries"]), ((0, 0), 1),
              "stored: the shared copy alone")
    for i, want in enumerate(((0, 1), (1, 2), (1, 2), (1, 2))):
        r = corral.get(PATH)
        expect_eq((r.status, r.cache_status.hit), (200, True), f"hit {i + 1}")
        expect_eq(near_figures(corral), want, f"after hit {i + 1}: own entries, shared hits")
    expect_eq(origin.count(PATH), 1, "one origin fetch")

    origin.script("/s/1", body="v{n}")
    expect_eq(corral.get("/s/1").text, "v1", "the stale route's miss")
    stored = time.time()
    wait_for(lambda: corral.counters()["stores"] == 2, what="its entry stored")
    wait_for(lambda: time.time() > stored + 1.2, timeout=10, what="the entry to go stale")
    r = corral.get("/s/1")
    expect_eq((r.text, r.cache_status.stale), ("v1", True), "the first stale hit")
    expect_eq(near_figures(corral)[0], 2, "the stale copy kept by the worker at once")
    wait_for(lambda: origin.count("/s/1") == 2, timeout=10, what="its one refresh")

    alone = env.corral(redis, origin, routes={"/": {"ttl": "1h"}},
                       extra={"server": {"l2_max_bytes": "0"}})
    expect_eq(alone.get("/users/2").status, 200, "a miss without the shared cache")
    wait_for(lambda: alone.counters()["stores"] == 1, what="stored")
    expect_eq(near_figures(alone), (1, 0), "kept by the worker at once")


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


# -- a reload, then a worker crash: the respawned worker runs what the instance runs --

MOST_TRIES = 64		# connections opened at most to reach one worker


def accepted_by(port, sock, pids):
    """The pid among pids that accepted sock (a connection to port), or None
    while none has: the kernel picks a worker's SO_REUSEPORT socket."""
    return tcp_socket_owner(pids, local_port=port, remote_port=sock.getsockname()[1])


def connection_to(host, port, pid, pids):
    """An HTTPConnection to host:port that worker pid accepted (pids: every
    worker); fails after MOST_TRIES connections none of which it took."""
    for _ in range(MOST_TRIES):
        conn = http.client.HTTPConnection(host, port, timeout=10)
        conn.connect()
        owner = wait_for(lambda: accepted_by(port, conn.sock, pids),
                         what=f"a worker to accept a connection to port {port}")
        if owner == pid:
            return conn
        conn.close()
    raise AssertionError(f"worker {pid} accepted none of {MOST_TRIES} connections "
                         f"to port {port}")


def get_on(conn, path, host=HOST):
    """GET path on an open connection: (status, Cache-Status, body)."""
    conn.request("GET", path, headers={"Host": host})
    r = conn.getresponse()
    return r.status, r.getheader("Cache-Status") or "", r.read()


def stats_on(conn, corral):
    conn.request("GET", "/stats", headers={"Host": f"{corral.admin_host}:{corral.admin_port}"})
    r = conn.getresponse()
    return json.loads(r.read())


@scenario
def a_server_out_in_one_worker_shows_in_stats_with_that_workers_why(env):
    """Each worker judges a server's health for itself: a server out in
    one worker only is down in /stats, one worker down, with that worker's
    reason, whichever worker's row is summed first (one server is taken
    out by each worker here)."""
    redis = env.redis()
    good, b, c = env.origin(), env.origin(), env.origin()
    for o in (b, c):
        o.script("*", status=503)
    text = corral_config(redis, good, free_port(), free_port(),
                         routes={"/o/": {"upstream": "other"}, "/": {}},
                         extra={"server": {"workers": "2"},
                                "upstream": {"url": b.url, "max_fails": "1",
                                             "fail_timeout": "10m"}})
    text += f"\n[upstream other]\nurl = {c.url}\nmax_fails = 1\nfail_timeout = 10m\n"
    corral = env.corral(config=text)
    workers = wait_for(lambda: len(children(corral.proc.pid)) == 2 and
                       children(corral.proc.pid), what="two workers")
    for pid, path in zip(workers, ("/x", "/o/x")):
        conn = connection_to(corral.host, corral.port, pid, workers)
        expect_eq(get_on(conn, path)[0], 503, f"{path} on worker {pid}: its server's answer")
        conn.close()

    def rows():
        got = {u["server"]: u for u in corral.stats()["upstreams"]}
        return all((got[u]["state"], got[u]["workers_down"]) == ("down", 1)
                   for u in (b.url, c.url)) and got
    got = wait_for(rows, what="each failing server down in one worker")
    for url in (b.url, c.url):
        expect(got[url]["why"].startswith("1 failures in "),
               f"why {url} is out, as the worker that took it out says: {got[url]['why']!r}")


def cache_ttl(cache_status):
    m = re.search(r"ttl=(-?\d+)", cache_status)
    return int(m.group(1)) if m else None


PENDING = ["server.listen", "redis.prefix"]


@scenario
def a_worker_respawned_after_a_reload_runs_what_the_instance_runs(env):
    # A reload changes listen and [redis] prefix (restart-only) and a
    # route's ttl (reloadable); then a worker is killed. The one the
    # master starts in its place must listen where its sibling does,
    # store and hear purges under the same prefix, and take the new ttl.
    redis, origin = env.redis(), env.origin()
    origin.script("/p", body="v{n}")
    extra = {"server": {"workers": "2", "l2_max_bytes": "0"}}
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}}, extra=extra)
    before = wait_for(lambda: len(children(corral.proc.pid)) == 2 and
                      children(corral.proc.pid), what="two workers")
    env.wait_subscribed(redis, 2)

    new_port = free_port()
    with open(corral.config_path, "w") as f:
        f.write(corral_config(redis, origin, new_port, corral.admin_port,
                              routes={"/": {"ttl": "2m"}},
                              extra=dict(extra, redis={"prefix": "moved:"})))
    corral.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: corral.log().count("loaded, 1 route") >= 2,
             what="both workers to reload")
    os.kill(before[0], signal.SIGKILL)
    workers = wait_for(lambda: (lambda kids: len(kids) == 2 and before[0] not in kids and
                                kids)(children(corral.proc.pid)),
                       timeout=10, what="the master to start a new worker")
    born = next(p for p in workers if p not in before)
    old = before[1]
    wait_for(lambda: corral.stats()["redis"]["up"] and redis.subscribers() >= 2,
             what="the new worker's Redis and subscription")

    # Only the running port answers, and the new worker takes its share.
    try:
        socket.create_connection((corral.host, new_port), 2).close()
        expect(False, f"port {new_port} (the file's, pending a restart) answered")
    except ConnectionRefusedError:
        pass
    fresh = connection_to(corral.host, corral.port, born, workers)
    settled = connection_to(corral.host, corral.port, old, workers)

    # What the new worker stores is under the running prefix, with the new ttl.
    status, cs, _ = get_on(fresh, "/born")
    expect_eq((status, "stored" in cs), (200, True), f"the new worker stores: {cs!r}")
    expect_eq(redis.keys("moved:*"), [], "keys under the file's prefix")
    expect(redis.exists(entry_key("/born")), "the entry under the running prefix")
    status, cs, _ = get_on(fresh, "/born")
    ttl = cache_ttl(cs)
    expect(status == 200 and "hit" in cs and ttl is not None and 60 < ttl <= 120,
           f"a hit with the reloaded ttl (2m, not 1h): {cs!r}")

    # A purge reaches both workers' memory copies.
    for conn, who in ((fresh, "new"), (settled, "old")):
        get_on(conn, "/p")
        status, cs, _ = get_on(conn, "/p")
        expect_eq((status, "hit" in cs), (200, True), f"/p in the {who} worker's memory")
    heard = corral.stats()["redis"]["purges_received"]
    expect_eq(corral.purge(url=f"http://{HOST}/p").status, 200, "purge")
    wait_for(lambda: corral.stats()["redis"]["purges_received"] >= heard + 2,
             what="both workers to hear the purge")
    for conn, who in ((fresh, "new"), (settled, "old")):
        status, cs, body = get_on(conn, "/p")
        expect_eq((status, body), (200, b"v2"),
                  f"the {who} worker dropped its memory copy ({cs!r})")
    expect_eq(origin.count("/p"), 2, "origin requests for /p")

    # Both workers say which changes wait for a restart.
    admin = [connection_to(corral.admin_host, corral.admin_port, pid, workers)
             for pid in (born, old)]
    for conn, who in zip(admin, ("new", "old")):
        expect_eq(stats_on(conn, corral).get("restart_pending"), PENDING,
                  f"restart_pending of the {who} worker")
    expect("corral_restart_pending 2" in corral.admin("GET", "/metrics").text,
           "corral_restart_pending in /metrics")
    expect("restart pending: server.listen, redis.prefix" in corral.log(),
           "the log names the pending keys")
    for conn in [fresh, settled] + admin:
        conn.close()


@scenario
def restart_pending_clears_when_the_file_goes_back_and_after_a_restart(env):
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin)
    expect_eq(corral.stats()["restart_pending"], [], "restart_pending at start")
    with open(corral.config_path) as f:
        running = f.read()

    new_port = free_port()
    changed = corral_config(redis, origin, new_port, corral.admin_port,
                            extra={"redis": {"prefix": "moved:", "timeout": "5s"},
                                   "server": {"access_log": "-"}})
    with open(corral.config_path, "w") as f:
        f.write(changed)
    corral.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: corral.stats()["restart_pending"] ==
             ["server.listen", "server.access_log", "redis.prefix", "redis.timeout"],
             what="the pending keys in /stats")
    expect_eq(corral.get("/one").status, 200, "the running port still answers")

    with open(corral.config_path, "w") as f:
        f.write(running)
    corral.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: corral.stats()["restart_pending"] == [],
             what="nothing pending once the file is back")
    expect("corral_restart_pending 0" in corral.admin("GET", "/metrics").text,
           "corral_restart_pending 0 in /metrics")

    corral.stop()
    restarted = env.corral(redis, origin, config=changed)
    expect_eq(restarted.stats()["restart_pending"], [], "restart_pending after a restart")
    expect_eq(restarted.port, new_port, "the restarted instance's port")
    expect_eq(restarted.get("/two").status, 200, "the new port answers")
    expect(redis.exists(entry_key("/two", prefix="moved:")), "stored under the new prefix")
