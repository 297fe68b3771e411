"""The fleet-wide origin budget ([upstream] max_requests): every request to
the origin takes a slot, a lease in Redis, so that the origin never sees
more than max_requests at once from the whole fleet; a freed slot goes to
a cold miss first, then stale and early refreshes, then pass-through; a
request that gets no slot within queue_timeout is answered stale, or 503
with Retry-After (Cache-Status detail=origin-busy); a dead instance's
slots come back within the lease; with Redis down, each instance keeps to
its local share.

The origin counts its requests in flight (origin.stats()["max_active"]):
that peak is what every scenario here bounds.
"""

import http.client
import os
import signal
import threading
import time

from harness import (HOST, PREFIX, Background, children, entry_key, expect, expect_eq,
                     fleet_counters, scenario, slow, stampede, wait_for, wait_until_stale)

QUEUE_KEY = f"{PREFIX}{{budget}}:queue"
SLOTS_KEY = f"{PREFIX}{{budget}}:slots"
FREED_CHANNEL = f"{PREFIX}{{budget}}:freed"
TWO_WORKERS = {"workers": "2"}


def budget(max_requests, queue_timeout="60s", lease="5s", server=None, **more):
    """extra= for corral_config: the budget in [upstream], and [server]."""
    up = {"max_requests": str(max_requests), "queue_timeout": queue_timeout,
          "slot_lease": lease}
    up.update({k: str(v) for k, v in more.items()})
    return {"upstream": up, "server": dict(server or {})}


def flood(targets, paths, method="GET", timeout=None):
    """One client per path, spread round-robin over targets, each on its own
    connection opened up front, all released together. [(status, headers,
    body)] in path order; raises if a client could not connect or read."""
    timeout = timeout or slow(120)
    barrier = threading.Barrier(len(paths))
    results = [None] * len(paths)

    def client(i):
        t = targets[i % len(targets)]
        conn = http.client.HTTPConnection(t.host, t.port, timeout=timeout)
        try:
            conn.connect()
            barrier.wait(timeout)
            conn.request(method, paths[i], headers={"Host": HOST})
            r = conn.getresponse()
            results[i] = (r.status, dict(r.getheaders()), r.read())
        except Exception as e:	# noqa: BLE001 - reported below
            results[i] = ("error", {}, repr(e).encode())
        finally:
            conn.close()

    threads = [threading.Thread(target=client, args=(i,), daemon=True)
               for i in range(len(paths))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout * 2)
    broken = [r for r in results if r is None or r[0] == "error"]
    expect(not broken, f"flood: {len(broken)} clients failed, e.g. {broken[:1]}")
    return results


def queued(redis):
    return redis.cmd("ZCARD", QUEUE_KEY)


def budget_stats(corral):
    return corral.stats()["origin_budget"]


def kill_instance(corral):
    """SIGKILL to a corral and its workers at once: nothing is released."""
    pids = children(corral.proc.pid) + [corral.proc.pid]
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    corral.kill()


@scenario(timeout=300)
def flood_of_cold_keys_never_exceeds_the_fleet_budget(env):
    keys, max_requests = 240, 8
    redis, origin = env.redis(), env.origin()
    origin.script("*", delay_ms=100, body="v{n}")
    # A 12 s lease: a waiter left to its re-check (a quarter lease) idles
    # 3 s at a time, the flood far past the bound below.
    fleet = env.fleet(2, redis, origin, extra=budget(max_requests, lease="12s",
                                                    server=TWO_WORKERS))

    t0 = time.monotonic()
    results = flood(fleet, [f"/flood/{i}" for i in range(keys)])
    took = time.monotonic() - t0

    expect_eq(sorted({r[0] for r in results}), [200], "statuses")
    # 30 rounds of 100 ms at best: a freed slot must go to a waiter at
    # once, not at its next re-check (a quarter lease later).
    ideal_s = keys / max_requests * 0.1
    expect(took < slow(4 * ideal_s), f"the flood took {took:.1f} s (at best {ideal_s:.1f} s): "
                                     "freed slots stayed idle")
    peak = origin.stats()["max_active"]
    expect(peak <= max_requests,
           f"origin peak concurrency {peak}, budget {max_requests}")
    expect(peak >= max_requests // 2, f"origin peak {peak}: the budget was hardly used")
    expect_eq(origin.count(), keys, "origin requests: one per key")
    c = fleet_counters(fleet)
    expect_eq(c["slot_grants"], keys, "slots granted over the fleet")
    expect(c["slot_waits"] > 0, "some requests waited for a slot")
    expect_eq((c["shed_busy"], c["slot_lost"]), (0, 0), "sheds, lost leases")
    # The sibling worker's figures are a publication (100 ms) old.
    wait_for(lambda: all((budget_stats(c)["slots_in_use"], budget_stats(c)["queue_length"]) ==
                         (0, 0) for c in fleet), what="/stats: no slot held, nobody waiting")
    expect_eq(budget_stats(fleet[0])["max_requests"], max_requests, "/stats max_requests")
    wait_for(lambda: redis.cmd("ZCARD", SLOTS_KEY) == 0, what="every lease released")


@scenario
def budget_full_of_pass_through_gives_the_next_slot_to_a_cold_miss(env):
    passes = 5
    redis, origin = env.redis(), env.origin()
    origin.script("/pass/*", hold=True, body="p{n}")
    origin.script("/cold", hold=True, body="c{n}")
    a, b = env.fleet(2, redis, origin, extra=budget(1))

    first = Background(a.get, "/pass/0", method="POST", body=b"x")
    wait_for(lambda: origin.held("/pass/0") == 1, what="a POST to hold the only slot")
    later = [Background(a.get, f"/pass/{i}", method="POST", body=b"x")
             for i in range(1, passes + 1)]
    wait_for(lambda: queued(redis) == passes, what="the other POSTs to queue")
    cold = Background(stampede, b, 3, "/cold")
    wait_for(lambda: queued(redis) == passes + 1, what="the cold miss to queue behind them")

    # Woken by the freed notification, not by its re-check (a quarter of
    # the 5 s lease later, about 1.2 s after the release).
    wake_bound_s = slow(0.9)
    origin.release("/pass/*")
    wait_for(lambda: origin.path_stats("/pass/0")["done_at"], what="the first POST's answer")
    released = time.monotonic()
    wait_for(lambda: origin.held("/cold") == 1, timeout=slow(10),
             what="the cold miss to reach the origin")
    woke = time.monotonic() - released
    expect(woke < wake_bound_s, f"the cold miss reached the origin {woke:.2f} s after the "
                                f"slot was freed (bound {wake_bound_s:.2f} s): not woken")
    sent = sum(origin.count(f"/pass/{i}") for i in range(passes + 1))
    expect_eq(sent, 1, "POSTs the origin had seen when the freed slot went to the cold miss")
    origin.release("/cold")

    expect_eq(sorted({(r.status, r.body) for r in cold.result()}), [(200, b"c1")],
              "the cold miss's clients")
    expect_eq(first.result().status, 200, "the first POST")
    expect_eq(sorted({r.result().status for r in later}), [200], "the queued POSTs")
    expect_eq(origin.stats()["max_active"], 1, "origin peak concurrency")


@scenario
def operators_refresh_waits_behind_pass_through_for_an_origin_slot(env):
    # POST /refresh and /warm rank below every client's request: no client
    # waits for the origin while an operator's job takes its slots.
    redis, origin = env.redis(), env.origin()
    origin.script("/op/x", body="x{n}")
    origin.script("/pass/*", hold=True, body="p{n}")
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}}, extra=budget(1))
    expect_eq(corral.get("/op/x").text, "x1", "primed")

    first = Background(corral.get, "/pass/0", method="POST", body=b"x")
    wait_for(lambda: origin.held("/pass/0") == 1, what="a POST to hold the only slot")
    r = corral.admin("POST", f"/refresh?url=http://{HOST}/op/x")
    expect_eq((r.status, r.json().get("scheduled")), (200, 1), f"refresh: {r.text!r}")
    wait_for(lambda: queued(redis) == 1, what="the refresh to queue for a slot")
    later = Background(corral.get, "/pass/1", method="POST", body=b"x")
    wait_for(lambda: queued(redis) == 2, what="a later POST to queue behind it")

    origin.release("/pass/*")
    expect_eq((first.result().status, later.result().status), (200, 200), "the POSTs")
    wait_for(lambda: len(origin.path_stats("/op/x")["done_at"]) == 2, what="the refresh to run")
    done = {p: origin.path_stats(p)["done_at"][-1] for p in ("/pass/1", "/op/x")}
    expect(done["/pass/1"] < done["/op/x"],
           f"the POST queued after the operator's refresh went first: {done}")
    expect_eq(corral.get("/op/x").text, "x2", "the refreshed entry")
    expect_eq(origin.stats()["max_active"], 1, "origin peak concurrency")


@scenario
def stale_refresh_queued_behind_cold_misses_serves_stale_meanwhile(env):
    redis, origin = env.redis(), env.origin()
    origin.script("*", delay_ms=100, body="v{n}")
    routes = {"/stale/": {"ttl": "1s", "stale_while_revalidate": "60s"}, "/": {}}
    corral = env.corral(redis, origin, routes=routes, extra=budget(1))
    expect_eq(corral.get("/stale/x").text, "v1", "primed")
    wait_until_stale(redis, "/stale/x", swr_ms=60_000)

    origin.script("/cold/*", hold=True, body="c{n}")
    held = Background(corral.get, "/cold/0")
    wait_for(lambda: origin.held("/cold/0") == 1, what="a cold miss to hold the only slot")
    colds = [Background(corral.get, f"/cold/{i}") for i in (1, 2)]
    wait_for(lambda: queued(redis) == 2, what="two cold misses to queue")

    r = corral.get("/stale/x")
    expect_eq((r.status, r.text, r.cache_status.stale), (200, "v1", True),
              "the stale entry, served while its refresh waits for a slot")
    wait_for(lambda: queued(redis) == 3, what="the refresh to queue behind the misses")
    expect_eq(origin.count("/stale/x"), 1, "origin requests for the stale key so far")

    origin.release("/cold/*")
    expect_eq(held.result().status, 200, "the first cold miss")
    expect_eq(sorted({c.result().status for c in colds}), [200], "the queued cold misses")
    wait_for(lambda: len(origin.path_stats("/stale/x")["done_at"]) == 2,
             what="the refresh to run")
    done = {p: origin.path_stats(p)["done_at"] for p in ("/cold/1", "/cold/2", "/stale/x")}
    expect(done["/stale/x"][-1] > max(done["/cold/1"] + done["/cold/2"]),
           f"the refresh ran after both cold misses: {done}")
    expect_eq(origin.stats()["max_active"], 1, "origin peak concurrency")


@scenario
def no_slot_within_queue_timeout_answers_stale_or_503_with_retry_after(env):
    redis, origin = env.redis(), env.origin()
    origin.script("*", body="v{n}")
    # Past its stale_while_revalidate, /old/x is still served for want of a
    # slot, as for an upstream failure: stale_if_error covers it.
    routes = {"/old/": {"ttl": "1s", "stale_while_revalidate": "1s",
                        "stale_if_error": "1h"},
              "/soft/": {"ttl": "1s", "stale_while_revalidate": "60s"}, "/": {}}
    corral = env.corral(redis, origin, routes=routes, extra=budget(1, queue_timeout="500ms"))
    expect_eq(corral.get("/old/x").text, "v1", "primed /old/x")
    expect_eq(corral.get("/soft/x").text, "v1", "primed /soft/x")
    wait_until_stale(redis, "/soft/x", swr_ms=60_000)
    wait_for(lambda: 0 < redis.pttl(entry_key("/old/x")) < 3_601_000 - 2_200,
             timeout=slow(10), what="/old/x to be past its stale_while_revalidate")

    origin.script("/hold", hold=True)
    held = Background(corral.get, "/hold")
    wait_for(lambda: origin.held("/hold") == 1, what="a request to hold the only slot")

    r = corral.get("/cold")
    expect_eq((r.status, r.cache_status.detail, r.cache_status.fwd), (503, "origin-busy", "miss"),
              "a cold miss with no slot")
    expect_eq(r.headers.get("Retry-After"), "1", "its Retry-After")
    r = corral.get("/post", method="POST", body=b"x")
    expect_eq((r.status, r.cache_status.detail, r.cache_status.fwd),
              (503, "origin-busy", "method"), "a POST with no slot")
    r = corral.get("/old/x")
    expect_eq((r.status, r.text, r.cache_status.detail), (200, "v1", "origin-busy"),
              "an expired entry with no slot: the entry, and why")
    r = corral.get("/soft/x")
    expect_eq((r.status, r.text, r.cache_status.stale), (200, "v1", True),
              "a stale hit: answered at once, its refresh queued")
    wait_for(lambda: corral.counters()["shed_refresh"] == 1, timeout=slow(10),
             what="the queued refresh to be dropped after queue_timeout")

    origin.release("/hold")
    expect_eq(held.result().status, 200, "the request that held the slot")
    c = corral.counters()
    expect_eq((c["shed_busy"], c["shed_stale"]), (2, 1), "sheds: 503, stale")
    expect_eq(origin.count("/cold") + origin.count("/post"), 0, "origin requests of the shed")
    expect_eq(origin.count("/old/x") + origin.count("/soft/x"), 2, "only the priming fetches")
    expect_eq(origin.stats()["max_active"], 1, "origin peak concurrency")


@scenario
def every_kind_of_origin_request_waits_for_a_slot(env):
    redis, origin = env.redis(), env.origin()
    origin.script("*", delay_ms=50, body="v{n}")
    origin.script("/mine", body="m{n}", headers={"Set-Cookie": "s=1"})
    corral = env.corral(redis, origin, extra=budget(1))
    expect_eq(corral.get("/mine").status, 200, "a response with Set-Cookie: hit-for-miss")

    origin.script("/hold", hold=True)
    held = Background(corral.get, "/hold", {"Accept": "text/x-held"})
    wait_for(lambda: origin.held("/hold") == 1, what="a request to hold the only slot")
    kinds = [Background(corral.get, "/cold", {"Accept": "text/x-queued"}),
             Background(corral.get, "/post", method="POST", body=b"x"),
             Background(corral.get, "/cookie", headers={"Cookie": "u=1"}),
             Background(corral.get, "/mine")]
    wait_for(lambda: queued(redis) == len(kinds),
             what="a miss, a POST, a request with credentials and a hit-for-miss to queue")
    expect_eq(origin.count(), 2, "origin requests while the slot is held")

    origin.release("/hold")
    expect_eq(held.result().status, 200, "the request that held the slot")
    expect_eq(sorted({k.result().status for k in kinds}), [200], "the queued requests")
    expect_eq(origin.stats()["max_active"], 1, "origin peak concurrency")
    # A fetch granted at once and one that queued both carry the request's
    # headers and Corral's own.
    for path, accept in (("/hold", "text/x-held"), ("/cold", "text/x-queued")):
        seen = {k.lower(): v for k, v in origin.path_stats(path)["headers"].items()}
        expect_eq((seen.get("accept"), seen.get("x-forwarded-for")), (accept, "127.0.0.1"),
                  f"Accept and X-Forwarded-For the origin got for {path}")
    c = corral.counters()
    expect_eq(c["slot_grants"], 2 + len(kinds), "slots granted")
    expect_eq(c["slot_waits"], len(kinds), "of those, after waiting")
    # Every slot is given back: a stop waits for nothing.
    corral.stop()
    log = corral.log()
    expect("stop: nothing left in progress" in log and "shutdown_timeout reached" not in log,
           "the stop, once the requests were answered, waited for no release")


@scenario
def slow_fetches_keep_their_slots_past_the_lease(env):
    # Leases of 1 s, renewed every third of one: a stall of a few hundred
    # ms on a busy machine does not lose them.
    keys = 2
    redis, origin = env.redis(), env.origin()
    origin.script("*", delay_ms=3500, body="v{n}")
    corral = env.corral(redis, origin, extra=budget(1, lease="1s"))

    results = flood([corral], [f"/slow/{i}" for i in range(keys)])

    expect_eq(sorted({r[0] for r in results}), [200], "statuses")
    expect_eq(origin.stats()["max_active"], 1,
              "origin peak concurrency: a fetch three leases long kept its slot")
    c = corral.counters()
    expect_eq((c["slot_grants"], c["slot_lost"]), (keys, 0), "slots granted, leases lost")


@scenario(timeout=240)
def instance_killed_holding_slots_gives_them_back_within_the_lease(env):
    lease_s = 2
    redis, origin = env.redis(), env.origin()
    origin.script("/a/*", hold=True, body="a{n}")
    origin.script("/b/*", body="b{n}")
    a, b = env.fleet(2, redis, origin, extra=budget(2, lease=f"{lease_s}s",
                                                    server=TWO_WORKERS))

    for i in range(2):
        Background(a.get, f"/a/{i}")
    wait_for(lambda: origin.held("/a/0") + origin.held("/a/1") == 2,
             what="instance A to hold both slots")
    for i in (2, 3):	# A's tickets, ahead of B's in the queue
        Background(a.get, f"/a/{i}")
    wait_for(lambda: queued(redis) == 2, what="A's other requests to queue")
    waiting = Background(flood, [b], ["/b/0", "/b/1"])
    wait_for(lambda: queued(redis) == 4, what="B's requests to queue behind them")
    wait_for(lambda: budget_stats(b)["instances"] == 2, timeout=slow(15),
             what="B to count two instances alive")
    kill_instance(a)
    killed_at = time.monotonic()
    # When A's leases run out (Redis's clock, ms): no renewal comes now.
    ends = [float(v) for v in redis.cmd("ZRANGE", SLOTS_KEY, 0, -1, "WITHSCORES")[1::2]]
    expect_eq(len(ends), 2, "A's two leases")

    results = waiting.result(timeout=slow(60))
    took = time.monotonic() - killed_at
    expect_eq(sorted({r[0] for r in results}), [200], "B's clients")
    # The leases run out within one lease of their last renewal; a waiter
    # looks again a quarter lease later at most (or hears it at once).
    # Never: queue_timeout (60 s), a 503.
    expect(took <= slow(lease_s * 3),
           f"B's requests took {took:.2f} s after A was killed (lease {lease_s} s)")
    went = min(origin.path_stats(p)["done_at"][0] for p in ("/b/0", "/b/1"))
    expect(went * 1000 >= min(ends) - 20,
           f"B's first request went {min(ends) / 1000 - went:.2f} s before A's first "
           "lease ran out")
    wait_for(lambda: budget_stats(b)["instances"] == 1, timeout=slow(15),
             what="B to count itself alone once A's hellos have stopped")
    origin.release("/a/*")


@scenario(timeout=240)
def redis_down_each_instance_keeps_to_its_local_share(env):
    max_requests, keys = 7, 60	# odd: each instance's share rounds up
    redis = env.redis()
    origins = [env.origin(), env.origin()]
    fleet = []
    for o in origins:
        o.script("*", delay_ms=200, body="v{n}")
        fleet.append(env.corral(redis, o, extra=budget(max_requests, server=TWO_WORKERS)))
    share = (max_requests + 1) // 2
    # The share /stats shows is its workers' largest: each has counted two.
    wait_for(lambda: all(budget_stats(c)["instances"] == 2 and
                         budget_stats(c)["local_share"] == share for c in fleet),
             timeout=slow(15), what="every worker to count two instances alive")

    redis.kill()
    wait_for(lambda: not any(c.stats()["redis"]["up"] for c in fleet),
             what="both instances to see Redis down")
    results = flood(fleet, [f"/down/{i}" for i in range(keys)])

    expect_eq(sorted({r[0] for r in results}), [200], "statuses")
    for i, (c, o) in enumerate(zip(fleet, origins)):
        expect_eq(budget_stats(c)["local_share"], share, f"instance {i}'s local share")
        peak = o.stats()["max_active"]
        expect(share // 2 <= peak <= share,
               f"instance {i}: its origin's peak {peak}, local share {share}")
    c = fleet_counters(fleet)
    expect_eq(c["slot_local"], keys, "slots from the local share")


@scenario
def the_local_share_is_max_requests_over_the_instances_rounded_up(env):
    """Two instances: max_requests 8 gives each 4 (not 5), 9 gives each 5
    (not 4): shown in /stats before Redis is ever down."""
    redis, origin = env.redis(), env.origin()
    fleet = env.fleet(2, redis, origin, extra=budget(8))
    wait_for(lambda: all(budget_stats(c)["instances"] == 2 for c in fleet),
             timeout=slow(15), what="each instance to count two alive")
    expect_eq([budget_stats(c)["local_share"] for c in fleet], [4, 4], "shares of 8")
    for c in fleet:
        with open(c.config_path) as f:
            text = f.read()
        with open(c.config_path, "w") as f:
            f.write(text.replace("max_requests = 8", "max_requests = 9"))
        c.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: [budget_stats(c)["local_share"] for c in fleet] == [5, 5],
             timeout=slow(15), what="shares of 9 after a reload: 5 each")


@scenario(timeout=240)
def redis_down_an_instance_keeps_to_the_local_share_it_is_given(env):
    """local_share = 2 rules over max_requests' split (8 here, alone): with
    Redis down, the instance's two workers send at most 2 at once."""
    max_requests, share, keys = 8, 2, 24
    redis, origin = env.redis(), env.origin()
    origin.script("*", delay_ms=200, body="v{n}")
    corral = env.corral(redis, origin, extra=budget(max_requests, server=TWO_WORKERS,
                                                    local_share=share))
    wait_for(lambda: budget_stats(corral)["local_share"] == share, timeout=slow(15),
             what="/stats to show the local share given")
    redis.kill()
    wait_for(lambda: not corral.stats()["redis"]["up"], what="the instance to see Redis down")
    results = flood([corral], [f"/down/{i}" for i in range(keys)])

    expect_eq(sorted({r[0] for r in results}), [200], "statuses")
    peak = origin.stats()["max_active"]
    expect(1 <= peak <= share, f"the origin's peak {peak}: local_share {share}, "
                               f"not max_requests {max_requests}")
    c = corral.counters()
    expect_eq(c["slot_local"], keys, "slots from the local share")
    said = corral.log().count(f"allows itself {share} origin requests at once")
    expect(1 <= said <= 2, f"the log says once per worker what it allows itself: {said} times "
                           f"for {keys} requests")
    expect("to each server" not in corral.log(),
           "a share of each server's cap logged, without max_requests_per_server")


def metric_samples(text):
    """{(name, frozenset of label pairs): value} and {name: type} of /metrics."""
    samples, types = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            types[name] = kind
        elif line and not line.startswith("#"):
            head, value = line.rsplit(" ", 1)
            name, _, labels = head.partition("{")
            pairs = frozenset(tuple(p.split("=", 1)) for p in
                              labels.rstrip("}").replace('"', "").split(",") if p)
            samples[(name, pairs)] = float(value)
    return samples, types


@scenario(timeout=180)
def budget_figures_in_stats_metrics_table_and_dashboard(env):
    from browser import Browser
    redis, origin = env.redis(), env.origin()
    origin.script("*", delay_ms=100, body="v{n}")
    origin.script("/h/*", hold=True)
    corral = env.corral(redis, origin, extra=budget(2, queue_timeout="300ms"))

    held = [Background(corral.get, f"/h/{i}") for i in range(2)]
    wait_for(lambda: origin.held("/h/0") + origin.held("/h/1") == 2,
             what="two fetches to hold both slots")
    expect_eq(corral.get("/shed").status, 503, "a cold miss with no slot")
    s = budget_stats(corral)
    expect_eq((s["max_requests"], s["slots_in_use"], s["fleet_slots_in_use"], s["queue_length"]),
              (2, 2, 2, 0), "/stats origin_budget while both slots are held")
    text = corral.admin("GET", "/metrics").text
    samples, types = metric_samples(text)
    up = corral.stats()["origin_budget"]["upstream"]
    for name, kind in (("corral_origin_slots_granted_total", "counter"),
                       ("corral_origin_slot_waits_total", "counter"),
                       ("corral_origin_slots_local_total", "counter"),
                       ("corral_origin_slot_leases_lost_total", "counter"),
                       ("corral_origin_sheds_total", "counter"),
                       ("corral_origin_slot_wait_seconds", "histogram"),
                       ("corral_origin_max_requests", "gauge"),
                       ("corral_origin_slots_in_use", "gauge"),
                       ("corral_origin_queue_length", "gauge"),
                       ("corral_origin_local_share", "gauge"),
                       ("corral_origin_fleet_instances", "gauge")):
        expect_eq(types.get(name), kind, f"TYPE of {name}")
    for labels, want in (({"upstream": up, "scope": "instance"}, 2),
                         ({"upstream": up, "scope": "fleet"}, 2)):
        got = samples.get(("corral_origin_slots_in_use", frozenset(labels.items())))
        expect_eq(got, want, f"corral_origin_slots_in_use{labels}")
    expect_eq(samples.get(("corral_origin_sheds_total",
                           frozenset({"route": "/", "reason": "busy"}.items()))), 1,
              "corral_origin_sheds_total{route=/, reason=busy}")
    table = corral.admin("GET", "/stats.txt").text
    expect("origin budget 2: 2 slots in use here, 0 waiting" in table, f"/stats.txt:\n{table}")

    origin.release("/h/*")
    expect_eq(sorted({h.result().status for h in held}), [200], "the held requests")

    stop = threading.Event()

    def traffic():	# origin requests while the page polls: slot waits to draw
        i = 0
        while not stop.is_set():
            corral.get(f"/t/{i}")
            i += 1
    feeder = Background(traffic)
    try:
        with Browser(env.workdir) as b:
            b.open(f"{corral.admin_url}/?interval=250&span=30")
            expr = ("Object.fromEntries([...document.querySelectorAll('canvas')].map("
                    "c => [c.id, {points: Number(c.dataset.points), "
                    "sum: Number(c.dataset.sum)}]))")
            drawn = b.wait_for_js(
                f"(() => {{ const d = {expr}; return ['budget', 'slotwait', 'sheds'].every("
                "k => d['chart-' + k] && d['chart-' + k].points >= 2) && d; })()",
                timeout=30, what="data points in the origin budget's charts")
            expect(drawn["chart-budget"]["sum"] > 0, f"slots drawn: {drawn}")
    finally:
        stop.set()
        feeder.result()


@scenario
def slot_freed_while_the_waiter_asks_is_not_lost(env):
    # The re-check is a quarter lease (5 s) after B's ask: only the freed
    # notification can hand the slot over within the bound.
    wake_bound_s = slow(2.5)
    redis, origin = env.redis(), env.origin()
    origin.script("/p/*", hold=True, body="p{n}")
    proxy = env.redis_proxy(redis)
    a = env.corral(redis, origin, extra=budget(1, lease="20s"))
    # B's ask is held back by the proxy: within its [redis] timeout.
    extra = budget(1, lease="20s")
    extra["redis"] = {"timeout": "5s"}
    b = env.corral(proxy, origin, extra=extra, wait_redis=True)
    wait_for(lambda: redis.cmd("PUBSUB", "SHARDNUMSUB", FREED_CHANNEL)[1] == 2,
             what="both instances to listen for freed slots")

    first = Background(a.get, "/p/0", method="POST", body=b"x")
    wait_for(lambda: origin.held("/p/0") == 1, what="A's POST to hold the only slot")
    proxy.hold_replies_after(b"EVALSHA")
    second = Background(b.get, "/p/1", method="POST", body=b"x")
    # Its ticket in the queue: the ask ran in Redis (not only another
    # script of B's, such as its hello) and its answer is kept back.
    wait_for(lambda: proxy.held_bytes() > 0 and queued(redis) == 1,
             what="B's ask for a slot to be under way")
    heard = proxy.published(FREED_CHANNEL)
    origin.release("/p/*")	# B's POST will not be held there
    expect_eq(first.result().status, 200, "A's POST")
    # The freed slot's own message (A's POST also invalidates its URL).
    wait_for(lambda: proxy.published(FREED_CHANNEL) > heard,
             what="B to hear of the freed slot while its ask is under way")
    # Sent to B; two round trips to its event loop later it has read it,
    # before the answer to its ask (else the answer comes first, and the
    # message finds it asking no more).
    b.stats(), b.stats()
    released = time.monotonic()
    proxy.release()	# its answer: queued (asked before the slot was freed)
    wait_for(lambda: origin.count("/p/1") == 1, timeout=slow(10), what="B's POST to go")
    took = time.monotonic() - released
    expect(took < wake_bound_s, f"B's POST went {took:.2f} s after its ask was answered "
                                f"(bound {wake_bound_s:.2f} s): the freed slot was forgotten")
    expect_eq(second.result().status, 200, "B's POST")


# -- what nobody waits for ---------------------------------------------------------

def open_and_send(corral, requests):
    """One connection per request, each sent; the sockets, to close later."""
    import socket
    socks = []
    for data in requests:
        s = socket.create_connection((corral.host, corral.port), slow(10))
        s.sendall(data)
        socks.append(s)
    return socks


@scenario
def clients_that_leave_while_queued_cost_the_origin_nothing(env):
    """Misses and pass-throughs whose clients left while they waited for
    an origin slot are never sent: the queue empties at once, not at
    queue_timeout, and the next request gets the first freed slot."""
    from harness import get_request
    redis, origin = env.redis(), env.origin()
    origin.script("/busy/*", hold=True, body="busy")
    corral = env.corral(redis, origin, routes={"/": {"lock_poll": "5s"}},
                        extra=budget(2, queue_timeout="60s"))
    held = [Background(corral.get, f"/busy/{i}") for i in range(2)]
    wait_for(lambda: origin.stats()["active"] == 2, what="the 2 slots taken")
    leaving = [get_request(f"/gone/{i}") for i in range(60)] + \
        [get_request(f"/pass/{i}", extra=b"Authorization: Bearer x\r\n") for i in range(30)]
    socks = open_and_send(corral, leaving)
    wait_for(lambda: budget_stats(corral)["queue_length"] == 90,
             what="the 90 requests waiting for a slot")
    for s in socks:
        s.close()
    # Against the alternative: they would stay queued for queue_timeout (60 s).
    wait_for(lambda: budget_stats(corral)["queue_length"] == 0, timeout=slow(20),
             what="the queue empty once its clients left")
    expect_eq(queued(redis), 0, "no ticket left in the fleet's queue")
    c = corral.counters()
    expect_eq((c["client_gone"], c["shed_unwanted"]), (90, 60),
              "clients gone, and the misses' fetches dropped unsent")
    origin.release("/busy/*")
    for h in held:
        expect_eq(h.result().status, 200, "the requests that held the slots")
    expect_eq(corral.get("/pass/new", {"Authorization": "Bearer y"}).status, 200,
              "a new pass-through gets a slot")
    total = origin.stats()["paths"]
    sent = [p for p in total if p.startswith("/gone/") or p.startswith("/pass/")]
    expect_eq(sent, ["/pass/new"], "what reached the origin of the queued requests")


@scenario
def a_request_that_waited_goes_before_newer_ones_with_more_waiters(env):
    """Age bounds every wait: a miss with one client that has waited past
    the age bound gets the next slot before a newer miss with 20."""
    redis, origin = env.redis(), env.origin()
    origin.script("/busy", hold=True, body="busy")
    corral = env.corral(redis, origin, routes={"/": {"lock_poll": "5s"}},
                        extra=budget(1, queue_timeout="60s"))
    held = Background(corral.get, "/busy")
    wait_for(lambda: origin.stats()["active"] == 1, what="the one slot taken")
    old = Background(corral.get, "/old")
    wait_for(lambda: budget_stats(corral)["queue_oldest_ms"] >= 1000,
             what="the lone miss waiting past the age bound (1 s)")
    crowd = Background(stampede, [corral], 20, "/crowd")
    wait_for(lambda: corral.stats()["in_progress"]["requests"] == 22,
             what="the 20 clients of the newer miss waiting")
    origin.script("/old", hold=True, body="old")
    origin.script("/crowd", hold=True, body="crowd")
    origin.release("/busy")
    expect_eq(held.result().status, 200, "the request that held the slot")
    wait_for(lambda: origin.stats()["active"] == 1, what="the freed slot taken again")
    expect_eq((origin.count("/old"), origin.count("/crowd")), (1, 0),
              "the slot went to the older miss")
    origin.release("/old")
    origin.release("/crowd")
    expect_eq(old.result().text, "old", "the older miss's answer")
    expect_eq({r.body for r in crowd.result()}, {b"crowd"}, "the crowd's answer")


# -- the gauges: of now, never a sum of moments apart ----------------------------

@scenario(timeout=240)
def budget_gauges_say_now_and_never_more_than_max_requests(env):
    """The instance's slots and queue, summed over its workers, are of one
    moment: never above max_requests while fetches come and go, and 0 as
    soon as the last client is answered; the fleet's are Redis's of now,
    0 within a few hellos once the fleet is idle, unknown (-1) while
    Redis is away and back once it returns."""
    max_requests = 6
    redis, origin = env.redis(), env.origin()
    origin.script("/h/*", hold=True, body="h{n}")
    origin.script("/f/*", delay_ms=5, body="f{n}")
    corral = env.corral(redis, origin, extra=budget(max_requests, server=TWO_WORKERS))
    seen = []

    def gauges():
        s = budget_stats(corral)
        seen.append(s["slots_in_use"])
        return s

    # Held at the origin: 6 slots in use, 4 waiting, here and fleet-wide.
    clients = [Background(corral.get, f"/h/{i}") for i in range(10)]
    wait_for(lambda: sum(origin.held(f"/h/{i}") for i in range(10)) == max_requests,
             what="six fetches held at the origin")
    wait_for(lambda: [gauges()[k] for k in ("slots_in_use", "queue_length",
                                            "fleet_slots_in_use", "fleet_queue_length")]
             == [6, 4, 6, 4], what="/stats: 6 slots in use and 4 waiting, here and fleet-wide")
    origin.release("/h/*")
    expect_eq(sorted({c.result().status for c in clients}), [200], "the held clients")
    s = gauges()	# at once: each worker's figures are of now
    expect_eq((s["slots_in_use"], s["queue_length"]), (0, 0),
              "/stats right after the last answer: slots in use, waiting")

    # Fetches coming and going on both workers: never above the budget.
    stop = threading.Event()

    def poll():
        while not stop.is_set():
            gauges()
    poller = Background(poll)
    try:
        flood([corral], [f"/f/{i}" for i in range(200)])
    finally:
        stop.set()
        poller.result()
    expect(origin.stats()["max_active"] <= max_requests, "the origin's peak")
    expect(len(seen) > 20, f"/stats read {len(seen)} times during the flood")
    expect(max(seen) <= max_requests,
           f"/stats slots_in_use read {max(seen)} with max_requests {max_requests}")

    # Idle: the fleet's figures are Redis's of now, not the last acquire's.
    wait_for(lambda: (gauges()["fleet_slots_in_use"], gauges()["fleet_queue_length"]) == (0, 0),
             timeout=slow(20), what="/stats fleet figures of an idle fleet: 0 and 0")
    port = redis.port
    redis.stop()
    wait_for(lambda: (gauges()["fleet_slots_in_use"], gauges()["fleet_queue_length"]) ==
             (-1, -1), timeout=slow(30), what="/stats fleet figures unknown with Redis away")
    redis.start(port)
    wait_for(lambda: (gauges()["fleet_slots_in_use"], gauges()["fleet_queue_length"]) == (0, 0),
             timeout=slow(30), what="/stats fleet figures back once Redis is")
