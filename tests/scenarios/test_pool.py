# SPDX-License-Identifier: MIT
"""Upstream pools: [upstream] url lists several servers (and [upstream NAME]
pools serve the routes that name them). A request goes to the server with
the fewest requests in flight; a server that fails max_fails times within
fail_timeout is taken out, and comes back after fail_timeout, or after
health_rise passed health checks when health_path is set; a request that
failed before any byte of its response is sent once more to another
server only if it never reached the first (could not connect) or may be
sent twice (GET, HEAD, a POST query its route caches); a reload that
removes a server lets its requests in flight finish.

Three real origin processes in every scenario; the origins' own request
counts and Corral's /stats "upstreams" figures are what is asserted.
"""

import http.client
import json
import os
import signal
import socket
import threading
import time

from harness import (HOST, PREFIX, Background, corral_config, entry_key, expect, expect_eq,
                     fleet_counters, lock_key, scenario, slow, stampede, wait_for)
from harness.wait import free_port

def metric_samples(text):
    """{(name, frozenset of label pairs): value} of /metrics."""
    samples = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            head, value = line.rsplit(" ", 1)
            name, _, labels = head.partition("{")
            pairs = frozenset(tuple(p.split("=", 1)) for p in
                              labels.rstrip("}").replace('"', "").split(",") if p)
            samples[(name, pairs)] = float(value)
    return samples


def pool_extra(origins, **keys):
    """extra= for corral_config: [upstream] with origins as its servers."""
    up = {"url": ", ".join(o.url for o in origins), "connect_timeout": "1s",
          "timeout": "30s"}
    up.update({k: str(v) for k, v in keys.items()})
    return {"upstream": up}


def servers(corral, pool=""):
    """/stats "upstreams" of pool, by server URL."""
    return {u["server"]: u for u in corral.stats()["upstreams"] if u["pool"] == pool}


def get(corral, path, method="GET", body=None, timeout=None):
    conn = http.client.HTTPConnection(corral.host, corral.port, timeout=timeout or slow(30))
    try:
        conn.request(method, path, body=body, headers={"Host": HOST})
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def burst(corral, paths):
    """One client per path, released together; their statuses."""
    barrier = threading.Barrier(len(paths))
    statuses = [None] * len(paths)

    def client(i):
        barrier.wait(slow(30))
        try:
            statuses[i] = get(corral, paths[i])[0]
        except Exception as e:	# noqa: BLE001 - reported below
            statuses[i] = repr(e)

    threads = [threading.Thread(target=client, args=(i,), daemon=True)
               for i in range(len(paths))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(slow(60))
    return statuses


def count_prefix(origin, prefix):
    return sum(p["count"] for path, p in origin.stats()["paths"].items()
               if path.startswith(prefix))


def rewrite_and_reload(corral, text):
    with open(corral.config_path, "w") as f:
        f.write(text)
    corral.proc.send_signal(signal.SIGHUP)


@scenario(timeout=180)
def dead_server_out_after_max_fails_and_back_after_health_checks(env):
    redis = env.redis()
    a, b, c = env.origin(), env.origin(), env.origin()
    port = b.port
    listen, admin = free_port(), free_port()
    text = corral_config(redis, a, listen, admin,
                         extra=pool_extra([a, b, c], max_fails=3, fail_timeout="10m"))
    corral = env.corral(config=text)
    b.stop()

    statuses = burst(corral, [f"/cold/{i}" for i in range(90)])
    expect_eq(sorted(set(statuses)), [200], "every client's status")
    served = (count_prefix(a, "/cold/"), count_prefix(c, "/cold/"))
    expect_eq(sum(served), 90, "origin requests of the two live servers (one per key)")
    expect(min(served) >= 20, f"the live servers share the work: {served}")
    s = servers(corral)[b.url]
    expect_eq(s["state"], "down", "the dead server's state")
    expect("failures" in s["why"], f"taken out by its failures: {s['why']!r}")
    expect(3 <= s["failures"] <= 90, f"its failures: {s['failures']}")
    expect_eq(s["retries"], s["failures"], "each of its failures retried elsewhere")
    expect_eq(corral.stats()["total"]["upstream_retries"], s["failures"], "retries")
    expect(f"server {b.url} is out" in corral.log(), "one log line says it went out")

    # It stays out: new keys go to the others only.
    failures = s["failures"]
    expect_eq(sorted(set(burst(corral, [f"/more/{i}" for i in range(10)]))), [200],
              "statuses while it is out")
    expect_eq(servers(corral)[b.url]["failures"], failures, "no request tried it again")

    # Health checks bring it back once it answers again.
    b = env.origin(port=port)
    rewrite_and_reload(corral, corral_config(
        redis, a, listen, admin, extra=pool_extra(
            [a, b, c], max_fails=3, fail_timeout="10m", health_path="/health",
            health_interval="200ms", health_rise=2)))
    wait_for(lambda: servers(corral)[b.url]["state"] == "up", timeout=slow(20),
             what="the restarted server back in after its health checks")
    s = servers(corral)[b.url]
    expect(s["health_ok"] >= 2, f"passed health checks: {s['health_ok']}")
    expect(f"server {b.url} is back in" in corral.log(), "one log line says it came back")
    expect(b.count("/health") >= 2, "the origin saw the health checks")
    expect_eq(sorted(set(burst(corral, [f"/back/{i}" for i in range(30)]))), [200],
              "statuses once it is back")
    expect(count_prefix(b, "/back/") >= 5, "it takes its share again")


@scenario(timeout=180)
def hung_server_times_out_its_requests_go_elsewhere_and_it_is_taken_out(env):
    """Round robin, so the hung server has its turns however the burst's
    requests spread in time (by least outstanding, a burst that arrives
    one by one would send it only its first)."""
    redis = env.redis()
    a, b, c = env.origin(), env.origin(), env.origin()
    b.script("*", hold=True)	# accepts, reads, never answers
    corral = env.corral(redis, a, extra=pool_extra(
        [b, a, c], max_fails=2, fail_timeout="10m", first_byte_timeout="300ms",
        balance="round-robin"))

    statuses = burst(corral, [f"/hung/{i}" for i in range(12)])
    expect_eq(sorted(set(statuses)), [200], "every client's status")
    expect_eq(count_prefix(a, "/hung/") + count_prefix(c, "/hung/"), 12,
              "each key fetched once from the live servers")
    s = servers(corral)[b.url]
    expect(s["failures"] >= 2, f"the hung server's timeouts: {s['failures']}")
    expect_eq(s["retries"], s["failures"], "each timed-out request tried once more")
    expect_eq(count_prefix(b, "/hung/"), s["failures"], "the hung server's requests")
    expect_eq(s["state"], "down", "the hung server's state")
    expect("first_byte_timeout" in s["why"], f"why: {s['why']!r}")
    samples = metric_samples(corral.admin("GET", "/metrics").text)
    for name, want in (("corral_upstream_server_up", 0),
                       ("corral_upstream_server_failures_total", s["failures"]),
                       ("corral_upstream_server_retries_total", s["retries"]),
                       ("corral_upstream_server_taken_out_total", 1)):
        key = (name, frozenset({("pool", "default"), ("server", b.url)}))
        expect_eq(samples.get(key), want, f"/metrics {name} of the hung server")
    key = ("corral_upstream_server_up", frozenset({("pool", "default"), ("server", a.url)}))
    expect_eq(samples.get(key), 1, "/metrics corral_upstream_server_up of a live one")
    before = count_prefix(b, "/hung/")
    expect_eq(sorted(set(burst(corral, [f"/after/{i}" for i in range(6)]))), [200],
              "statuses once it is out")
    expect_eq(count_prefix(b, "/hung/") + count_prefix(b, "/after/"), before,
              "nothing more sent to the hung server")
    b.release("*")


@scenario
def post_reset_after_reaching_a_server_is_never_sent_again(env):
    redis = env.redis()
    a, b, c = env.origin(), env.origin(), env.origin()
    b.script("/submit", drop=True)		# counts it, then closes
    b.script("/drop-get/*", drop=True)
    # round-robin: the first request of each kind goes to the first server.
    corral = env.corral(redis, a, extra=pool_extra([b, a, c], balance="round-robin"))

    status, _ = get(corral, "/submit", method="POST", body=b"order=1")
    expect_eq(b.count("/submit"), 1, "the server that reset it counted it once")
    expect_eq(a.count("/submit") + c.count("/submit"), 0, "no other server got it")
    expect_eq(status, 502, "the client's status")
    expect_eq(servers(corral)[b.url]["retries"], 0, "retries of the POST")

    # A GET reset before any byte is sent once more, to another server
    # (round robin: one of three distinct keys goes to b first).
    for i in range(3):
        expect_eq(get(corral, f"/drop-get/{i}")[0], 200, "a GET's status")
    expect_eq(count_prefix(b, "/drop-get/"), 1, "the server that reset the GET")
    expect_eq(count_prefix(a, "/drop-get/") + count_prefix(c, "/drop-get/"), 3,
              "each GET answered by another server, the reset one retried")
    expect_eq(corral.stats()["total"]["upstream_retries"], 1, "retries")


@scenario
def cached_post_query_reset_is_retried_elsewhere_a_mutation_never(env):
    redis = env.redis()
    a, b, c = env.origin(), env.origin(), env.origin()
    b.script("/gql/*", drop=True)		# counts it, then closes: no byte back
    for o in (a, c):
        o.script("/gql/*", body="gql n={n}")
    routes = {"/gql/": {"cache_post": "on", "graphql": "on"}, "/": {}}
    # round-robin: the first request goes to the first server, b.
    corral = env.corral(redis, a, routes=routes,
                        extra=pool_extra([b, a, c], balance="round-robin"))
    json_body = {"Content-Type": "application/json"}

    # A query the route caches may be sent twice (RFC 9110 9.2.2): the
    # reset one goes once more, to another server, and is stored.
    query = json.dumps({"query": "query { user(id: 7) { name } }"}).encode()
    r = corral.get("/gql/q", json_body, method="POST", body=query)
    expect_eq(r.status, 200, "the query's status")
    expect_eq(b.count("/gql/q"), 1, "the server that reset the query")
    expect_eq(a.count("/gql/q") + c.count("/gql/q"), 1,
              "the query sent once more, to another server")
    expect_eq(servers(corral)[b.url]["retries"], 1, "retries of the reset server")
    expect_eq(corral.stats()["total"]["upstream_retries"], 1, "retries")
    r = corral.get("/gql/q", json_body, method="POST", body=query)
    expect_eq((r.status, r.cache_status.hit), (200, True), "the query again: a hit")
    expect_eq(sum(o.count("/gql/q") for o in (a, b, c)), 2, "origin requests for the query")

    # A mutation is passed, never resent: until one reaches b (round
    # robin: within three), each goes to one server once.
    mutation = json.dumps({"query": "mutation { like(id: 7) { n } }"}).encode()
    statuses = []
    while b.count("/gql/m") == 0 and len(statuses) < 6:
        statuses.append(corral.get("/gql/m", json_body, method="POST", body=mutation).status)
    expect_eq(b.count("/gql/m"), 1, "mutations that reached the server that resets")
    expect_eq(statuses[-1], 502, "the client's status for the mutation b reset")
    expect_eq(a.count("/gql/m") + c.count("/gql/m"), len(statuses) - 1,
              f"mutations the others got (statuses {statuses}): none sent twice")
    expect_eq(corral.stats()["total"]["upstream_retries"], 1, "retries: the query's only")


@scenario
def route_with_its_own_pool_never_sends_to_the_default_pool(env):
    redis = env.redis()
    a, b, r = env.origin(), env.origin(), env.origin()
    extra = pool_extra([a, b])
    extra = corral_config(redis, a, free_port(), free_port(), extra=extra,
                          routes={"/reports/": {"upstream": "reports"}, "/": {}})
    extra += f"\n[upstream reports]\nurl = {r.url}\ntimeout = 30s\n"
    corral = env.corral(config=extra)

    expect_eq(sorted(set(burst(corral, [f"/reports/{i}" for i in range(20)]))), [200],
              "report statuses")
    expect_eq(sorted(set(burst(corral, [f"/api/{i}" for i in range(20)]))), [200],
              "other statuses")
    expect_eq(count_prefix(r, "/reports/"), 20, "reports: each from its own pool")
    expect_eq(count_prefix(a, "/reports/") + count_prefix(b, "/reports/"), 0,
              "reports sent to the default pool")
    expect_eq(count_prefix(r, "/api/"), 0, "other routes sent to the reports pool")
    expect_eq(count_prefix(a, "/api/") + count_prefix(b, "/api/"), 20, "other routes")
    expect_eq(servers(corral, "reports")[r.url]["requests"], 20, "/stats of the pool")


@scenario
def reload_that_removes_a_server_drains_its_requests_in_flight(env):
    redis = env.redis()
    a, b, c = env.origin(), env.origin(), env.origin()
    for o in (a, b, c):
        o.script("/slow/*", hold=True)
    listen, admin = free_port(), free_port()
    corral = env.corral(config=corral_config(redis, a, listen, admin,
                                             extra=pool_extra([a, b, c])))
    clients = [Background(get, corral, f"/slow/{i}") for i in range(6)]
    wait_for(lambda: sum(o.stats()["active"] for o in (a, b, c)) == 6, timeout=slow(20),
             what="six requests held by the origins")
    held_on_a = a.stats()["active"]
    expect(held_on_a >= 1, f"requests in flight on the server to remove: {held_on_a}")

    rewrite_and_reload(corral, corral_config(redis, a, listen, admin,
                                             extra=pool_extra([b, c])))
    wait_for(lambda: servers(corral)[a.url]["state"] == "draining", timeout=slow(10),
             what="the removed server draining")
    expect_eq(servers(corral)[a.url]["in_flight"], held_on_a, "its requests in flight")
    for i in range(6):
        expect_eq(get(corral, f"/during/{i}")[0], 200, "a new request while it drains")
    expect_eq(count_prefix(a, "/during/"), 0, "new requests sent to the draining server")
    expect_eq(count_prefix(b, "/during/") + count_prefix(c, "/during/"), 6,
              "new requests to the servers kept")
    for o in (a, b, c):
        o.release("/slow/*")
    expect_eq(sorted({cl.result(slow(30))[0] for cl in clients}), [200],
              "the clients' statuses")
    wait_for(lambda: a.url not in servers(corral), timeout=slow(10),
             what="the drained server gone from /stats")
    expect_eq(sorted(set(burst(corral, [f"/new/{i}" for i in range(10)]))), [200],
              "statuses after the reload")
    expect_eq(count_prefix(a, "/new/"), 0, "requests to the removed server")


@scenario
def least_outstanding_sends_new_requests_to_the_fast_servers(env):
    redis = env.redis()
    a, b, c = env.origin(), env.origin(), env.origin()
    b.script("/lo/*", delay_ms=3000)
    corral = env.corral(redis, a, extra=pool_extra([a, b, c]))
    # Three at once: one to each server, and b holds its own for 3 s.
    first = Background(burst, corral, [f"/lo/first/{i}" for i in range(3)])
    wait_for(lambda: b.stats()["active"] == 1, timeout=slow(10),
             what="the slow server working on one")
    for i in range(10):
        expect_eq(get(corral, f"/lo/fast/{i}")[0], 200, "a fast request's status")
    expect_eq(servers(corral)[b.url]["in_flight"], 1,
              "the slow server still busy (the fast requests came meanwhile)")
    expect_eq(count_prefix(b, "/lo/fast/"), 0, "fast requests sent to the busy server")
    expect_eq(count_prefix(a, "/lo/fast/") + count_prefix(c, "/lo/fast/"), 10,
              "fast requests sent to the idle servers")
    expect_eq(first.result(slow(30)), [200] * 3, "the first three")
    expect_eq(count_prefix(b, "/lo/first/"), 1, "the slow server's share of them")


@scenario
def pool_config_errors_name_file_and_line(env):
    path = env.config_file(
        "[upstream]\nurl = http://127.0.0.1:1 weight=200, http://127.0.0.1:2\n"
        "[upstream reports]\nmax_fails = 3\n[route /r/]\nupstream = report\n")
    p = env.run_corral("-t", "-c", path)
    expect(p.returncode != 0, "corral -t exits non-zero")
    expect(f"{path}:2: url: \"weight=200\": a weight is 1 to 100" in p.stderr, p.stderr)
    expect(f"{path}:3: [upstream reports] needs url (its servers)" in p.stderr, p.stderr)
    expect(f"{path}:6: upstream: no pool [upstream report] in the file" in p.stderr,
           p.stderr)
    ok = env.config_file("[upstream]\nurl = http://127.0.0.1:1 weight=2, http://127.0.0.1:2"
                         "\nhealth_path = /health\n[upstream reports]\n"
                         "url = http://127.0.0.1:3\n[route /r/]\nupstream = reports\n",
                         name="ok.conf")
    p = env.run_corral("-t", "-c", ok)
    expect_eq(p.returncode, 0, f"a good pool configuration: {p.stderr}")
    os.unlink(ok)


@scenario
def health_check_answering_another_status_takes_a_server_out(env):
    redis = env.redis()
    a, b = env.origin(), env.origin()
    b.script("/ping", status=503)
    corral = env.corral(redis, a, extra=pool_extra(
        [a, b], health_path="/ping", health_interval="200ms", health_status=200))
    wait_for(lambda: servers(corral)[b.url]["state"] == "down", timeout=slow(10),
             what="the server whose health check answers 503 out")
    s = servers(corral)[b.url]
    expect("health check: status 503" in s["why"], f"why: {s['why']!r}")
    expect(s["health_failed"] >= 1 and s["taken_out"] == 1, f"figures: {s}")
    expect_eq(servers(corral)[a.url]["state"], "up", "the healthy server")
    expect_eq(sorted(set(burst(corral, [f"/h/{i}" for i in range(10)]))), [200], "statuses")
    expect_eq(count_prefix(a, "/h/"), 10, "requests to the healthy server")
    b.script("/ping", status=200)
    wait_for(lambda: servers(corral)[b.url]["state"] == "up", timeout=slow(10),
             what="the server back once its health check answers 200")


@scenario
def health_check_slower_than_health_timeout_takes_a_server_out(env):
    """health_timeout = 500ms: a probe answered after 1.5 s fails (it would
    pass the default 2 s); once its probes answer at once, they pass."""
    redis = env.redis()
    a, b = env.origin(), env.origin()
    a.script("/ping", body="ok")
    b.script("/ping", body="ok", delay_ms=1500)
    corral = env.corral(redis, a, extra=pool_extra(
        [a, b], health_path="/ping", health_interval="200ms", health_timeout="500ms"))
    wait_for(lambda: servers(corral)[b.url]["state"] == "down", timeout=slow(10),
             what="the server whose probe answers after 1.5 s out")
    s = servers(corral)[b.url]
    expect(s["why"].startswith("health check: timeout"), f"why: {s['why']!r}")
    b.script("/ping", body="ok")
    wait_for(lambda: servers(corral)[b.url]["state"] == "up", timeout=slow(10),
             what="the server back once its probes answer within health_timeout")


@scenario
def health_rise_counts_passed_probes_from_the_last_failed_one(env):
    """health_rise = 3: a server out by its probes is back after three
    passed in a row, never after two."""
    redis = env.redis()
    a, b = env.origin(), env.origin()
    a.script("/ping", body="ok")
    b.script("/ping", status=503)
    corral = env.corral(redis, a, extra=pool_extra(
        [a, b], health_path="/ping", health_interval="200ms", health_rise=3))
    wait_for(lambda: servers(corral)[b.url]["health_failed"] >= 3, timeout=slow(10),
             what="b out, and failing its probes")
    passed = servers(corral)[b.url]["health_ok"]	# none yet: b answers 503
    b.script("/ping", body="ok")
    s = wait_for(lambda: (lambda s: s if s["state"] == "up" else None)(servers(corral)[b.url]),
                 timeout=slow(10), what="b back once its probes pass")
    expect(s["health_ok"] - passed >= 3,
           f"b back after {s['health_ok'] - passed} passed probes (health_rise 3)")


@scenario
def health_status_names_the_status_a_probe_must_answer(env):
    """health_status = 204: a probe answered 204 passes, one answered 200
    (the default's status) fails."""
    redis = env.redis()
    a, b = env.origin(), env.origin()
    a.script("/ping", status=204, body="")
    b.script("/ping", status=200, body="ok")
    corral = env.corral(redis, a, extra=pool_extra(
        [a, b], health_path="/ping", health_interval="200ms", health_status=204))
    wait_for(lambda: servers(corral)[b.url]["state"] == "down", timeout=slow(10),
             what="the server whose probe answers 200 out")
    expect_eq(servers(corral)[b.url]["why"], "health check: status 200, not 204", "why")
    wait_for(lambda: servers(corral)[a.url]["health_ok"] >= 3, timeout=slow(10),
             what="the server answering 204 passing its probes")
    expect_eq((servers(corral)[a.url]["state"], servers(corral)[a.url]["health_failed"]),
              ("up", 0), "the server answering 204")


def unanswered_port():
    """A listening socket whose backlog is full: a connect to it is never
    completed (the kernel drops the SYNs). The sockets, to keep open."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=0)
    filler = socket.create_connection(listener.getsockname(), timeout=slow(5))
    return listener, filler


@scenario
def connect_timeout_bounds_a_connect_that_never_completes(env):
    """connect_timeout = 3s: a server that never completes the connect is
    given up after 3 s (not the default 1 s, nor the try's whole
    first_byte_timeout), and the request, which never reached it, goes to
    the next server."""
    connect_s = 3
    listener, filler = unanswered_port()
    dead = f"http://127.0.0.1:{listener.getsockname()[1]}"
    redis, a = env.redis(), env.origin()
    corral = env.corral(redis, a, extra={"upstream": {
        "url": f"{dead}, {a.url}", "balance": "round-robin", "timeout": "60s",
        "connect_timeout": f"{connect_s}s"}})
    t0 = time.monotonic()
    status, body = get(corral, "/c/1")	# round robin: the first try goes to dead
    took = time.monotonic() - t0
    expect_eq(status, 200, "the request, answered by the next server")
    expect_eq(a.count("/c/1"), 1, "the next server's requests")
    # Against the default (1 s) and against no bound on the connect (the
    # try's first_byte_timeout, 30 s): a lower bound, and a far upper one.
    expect(connect_s <= took < slow(20), f"answered after {took:.2f} s")
    s = servers(corral)[dead]
    expect_eq((s["failures"], s["retries"]), (1, 1), f"the dead server's figures: {s}")
    listener.close()
    filler.close()


@scenario
def origin_budget_and_per_server_cap_apply_to_each_pool(env):
    redis = env.redis()
    a, b, r = env.origin(), env.origin(), env.origin()
    for o in (a, b, r):
        o.script("*", delay_ms=300)
    text = corral_config(redis, a, free_port(), free_port(),
                         extra=pool_extra([a, b], max_requests=4, max_requests_per_server=1,
                                          queue_timeout="60s"),
                         routes={"/reports/": {"upstream": "reports"}, "/": {}})
    text += (f"\n[upstream reports]\nurl = {r.url}\nmax_requests = 1\n"
             "queue_timeout = 60s\n")
    corral = env.corral(config=text)

    statuses = burst(corral, [f"/reports/{i}" for i in range(4)] +
                     [f"/api/{i}" for i in range(8)])
    expect_eq(sorted(set(statuses)), [200], "statuses")
    expect_eq(r.stats()["max_active"], 1, "the reports pool's peak (its max_requests 1)")
    expect_eq((a.stats()["max_active"], b.stats()["max_active"]), (1, 1),
              "each default server's peak (max_requests_per_server 1)")
    expect_eq(count_prefix(a, "/api/") + count_prefix(b, "/api/"), 8, "default pool requests")
    expect_eq(count_prefix(r, "/reports/"), 4, "reports pool requests")


# -- max_requests_per_server: each server's cap, fleet-wide ---------------------

TWO_WORKERS = {"workers": "2"}


def server_slots_key(url, pool=""):
    """The Redis set of the slots taken on one server of a pool."""
    return f"{PREFIX}{{budget}}:{pool + ':' if pool else ''}server:{url}"


def capped_fleet(env, n, redis, origins, cap, workers=None, **keys):
    """n instances whose default pool is origins, capped at cap requests per
    server (and each with workers worker processes)."""
    extra = pool_extra(origins, **dict({"max_requests_per_server": cap,
                                        "queue_timeout": "60s"}, **keys))
    if workers:
        extra["server"] = {"workers": str(workers)}
    before = redis.subscribers()
    fleet = [env.corral(redis, origins[0], extra=extra) for _ in range(n)]
    env.wait_subscribed(redis, before + n)
    return fleet


@scenario(timeout=240)
def per_server_cap_holds_across_two_instances_of_two_workers(env):
    cap, keys = 2, 60
    redis = env.redis()
    a, slow_one, c = env.origin(), env.origin(), env.origin()
    for o in (a, c):
        o.script("/cap/*", delay_ms=100, body="v{n}")
    slow_one.script("/cap/*", delay_ms=1500, body="v{n}")
    fleet = capped_fleet(env, 2, redis, [a, slow_one, c], cap, workers=2)

    results = stampede(fleet, keys, lambda i: f"/cap/{i}", timeout=slow(120))
    expect_eq(sorted({r.status for r in results}), [200], "statuses")
    peak = slow_one.stats()["max_active"]
    expect(1 <= peak <= cap, f"the slow server's peak concurrency {peak}, its cap {cap} "
                             "(four workers of two instances share it)")
    for o in (a, c):
        expect(o.stats()["max_active"] <= cap,
               f"a fast server's peak {o.stats()['max_active']}, cap {cap}")
    fast = count_prefix(a, "/cap/") + count_prefix(c, "/cap/")
    expect_eq(fast + count_prefix(slow_one, "/cap/"), keys, "origin requests: one per key")
    expect(fast >= keys - 10, f"the fast servers took the rest: {fast} of {keys}")
    wait_for(lambda: all(redis.cmd("ZCARD", server_slots_key(o.url)) == 0
                         for o in (a, slow_one, c)),
             what="every server slot released")


@scenario
def full_server_sends_the_request_to_another_with_room_at_once(env):
    redis = env.redis()
    a, b = env.origin(), env.origin()
    for o in (a, b):
        o.script("/hold/*", hold=True, body="h{n}")
        o.script("/go/*", body="g{n}")
    # Queue_timeout is long: a request that waited for a's slot would hang.
    first, second = capped_fleet(env, 2, redis, [a, b], 1)

    held = Background(first.get, "/hold/1")
    wait_for(lambda: a.held("/hold/1") == 1, what="the first instance's request held by a")
    # The second instance's own view prefers a (listed first, idle here), but
    # a's slot is taken in the fleet: the request goes to b without waiting.
    r = second.get("/go/1", timeout=slow(10))
    expect_eq((r.status, r.text), (200, "g1"), "the second instance's request")
    expect_eq((a.count("/go/1"), b.count("/go/1")), (0, 1), "where it went (a, b)")
    expect_eq(second.counters()["slot_waits"], 0, "requests that waited for a slot")
    expect_eq(a.held("/hold/1"), 1, "a's request still held meanwhile")

    # Every server full: a request waits, and goes when a slot is freed.
    other = Background(first.get, "/hold/2")
    wait_for(lambda: b.held("/hold/2") == 1, what="b's only slot taken too")
    waiting = Background(second.get, "/go/2")
    wait_for(lambda: redis.cmd("ZCARD", f"{PREFIX}{{budget}}:queue") == 1,
             what="the second instance's request queued, every server full")
    expect_eq(a.count("/go/2") + b.count("/go/2"), 0, "sent to a full server")
    a.release("/hold/*")
    r = waiting.result(slow(10))
    expect_eq(r.status, 200, "the request that waited")
    expect_eq(a.count("/go/2"), 1, "it went to the server freed")
    b.release("/hold/*")
    expect_eq((held.result().status, other.result().status), (200, 200), "the held ones")
    expect_eq((a.stats()["max_active"], b.stats()["max_active"]), (1, 1), "each server's peak")


@scenario(timeout=180)
def a_full_first_choice_gives_way_to_the_lightest_server_then_to_the_next_in_turn(env):
    """Least outstanding with max_requests_per_server: when the server
    chosen first is full in the fleet, the request goes to the lightest
    of the others (this instance's requests in flight per weight), and
    among equally light ones to the one whose turn comes first, whatever
    their order in the list. Smooth weighted round robin decides each turn
    (nginx's): the servers and steps below are where it leads."""
    redis = env.redis()
    a, b, c, d, e, f = (env.origin() for _ in range(6))
    for o in (a, b, c, d, e, f):
        o.script("/hold/*", hold=True, body="held")
        o.script("/tie/hold/*", hold=True, body="held")
    extra = {"upstream": {"url": f"{a.url} weight=3, {b.url} weight=3, {c.url}",
                          "max_requests_per_server": "2", "queue_timeout": "60s",
                          "timeout": "60s"}}
    tie = (f"\n[upstream tie]\nurl = {d.url} weight=2, {e.url}, {f.url} weight=2\n"
           "max_requests_per_server = 1\nqueue_timeout = 60s\ntimeout = 60s\n")
    routes = {"/tie/": {"upstream": "tie"}, "/": {}}

    def instance():
        return env.corral(config=corral_config(redis, a, free_port(), free_port(),
                                               routes=routes, extra=extra) + tie)
    y, x1, x2 = instance(), instance(), instance()
    env.wait_subscribed(redis, 3)

    def went(path, origins):
        return tuple(o.count(path) for o in origins)
    # y's turns: a, then b (held there: one of two), then c.
    expect_eq(get(y, "/q/1")[0], 200, "y's first request")
    expect_eq(went("/q/1", (a, b, c)), (1, 0, 0), "y's first request went to a")
    held = [Background(get, y, "/hold/y")]
    wait_for(lambda: b.held("/hold/y") == 1, what="y's request held by b")
    expect_eq(get(y, "/q/3")[0], 200, "y's third request")
    expect_eq(went("/q/3", (a, b, c)), (0, 0, 1), "y's third request went to c")
    # Two other instances, each choosing a first, fill a.
    for x in (x1, x2):
        held.append(Background(get, x, f"/hold/{x.name}"))
    wait_for(lambda: a.held(f"/hold/{x1.name}") + a.held(f"/hold/{x2.name}") == 2,
             what="a's two slots taken by the other instances")
    # y's turn is a's, full: c (none of y's in flight) before b (one),
    # though b's turn would come before c's.
    expect_eq(get(y, "/go/1")[0], 200, "y's request while a is full")
    expect_eq(went("/go/1", (a, b, c)), (0, 0, 1),
              "where it went (a, b, c): the lightest of the others")

    # Pool tie: every server as light; d, f weigh 2, e 1. x1's first
    # turn takes d's only slot; y's first turn is d's too, full: f's turn
    # comes before e's, though e is listed first.
    held.append(Background(get, x1, "/tie/hold/x1"))
    wait_for(lambda: d.held("/tie/hold/x1") == 1, what="d's slot taken by x1")
    expect_eq(get(y, "/tie/go")[0], 200, "y's request while d is full")
    expect_eq(went("/tie/go", (d, e, f)), (0, 0, 1),
              "where it went (d, e, f): the next in turn, not the next listed")
    for o in (a, b, d):
        o.release("/hold/*")
        o.release("/tie/hold/*")
    expect_eq(sorted({h.result(slow(30))[0] for h in held}), [200], "the held requests")


@scenario
def every_server_full_past_queue_timeout_answers_503(env):
    redis = env.redis()
    a, b = env.origin(), env.origin()
    for o in (a, b):
        o.script("/hold/*", hold=True)
    first, second = capped_fleet(env, 2, redis, [a, b], 1, queue_timeout="500ms")
    held = [Background(first.get, f"/hold/{i}") for i in range(2)]
    wait_for(lambda: a.held("/hold/0") + a.held("/hold/1") +
             b.held("/hold/0") + b.held("/hold/1") == 2, what="both servers' slots taken")
    r = second.get("/busy", timeout=slow(10))
    expect_eq((r.status, r.cache_status.detail), (503, "origin-busy"),
              "a request with every server full past queue_timeout")
    expect_eq(a.count("/busy") + b.count("/busy"), 0, "sent anyway")
    for o in (a, b):
        o.release("/hold/*")
    expect_eq(sorted(h.result().status for h in held), [200, 200], "the held ones")


@scenario
def server_slots_are_renewed_and_released_with_the_fetch(env):
    redis = env.redis()
    a = env.origin()
    # Leases of 1 s, renewed every third of one: a stall of a few hundred
    # ms on a busy machine does not lose them.
    a.script("/slow/*", delay_ms=3500, body="s{n}")
    fleet = capped_fleet(env, 2, redis, [a], 1, slot_lease="1s")
    results = stampede(fleet, 2, lambda i: f"/slow/{i}", timeout=slow(60))
    expect_eq(sorted({r.status for r in results}), [200], "statuses")
    expect_eq(a.stats()["max_active"], 1,
              "the server's peak: a fetch three leases long kept its server slot")
    c = fleet_counters(fleet)
    expect_eq((c["slot_grants"], c["slot_lost"]), (2, 0), "slots granted, leases lost")
    wait_for(lambda: redis.cmd("ZCARD", server_slots_key(a.url)) == 0,
             what="the server slots released")


@scenario
def capped_retry_without_queue_timeout_takes_a_free_slot_on_another_server(env):
    """queue_timeout = 0: no request waits for a slot, but a retry that
    finds room on another server at once takes it (a 200, not a 502)."""
    redis = env.redis()
    a, b = env.origin(), env.origin()
    b.script("/r/*", drop=True)		# counts it, then closes: no byte back
    a.script("/r/*", body="a{n}")
    (corral,) = capped_fleet(env, 1, redis, [b, a], 1, balance="round-robin",
                             queue_timeout="0")
    expect_eq(get(corral, "/r/1"), (200, b"a1"), "the request b reset, retried on a")
    expect_eq((b.count("/r/1"), a.count("/r/1")), (1, 1), "its tries (b, a)")
    expect_eq(corral.counters()["shed_busy"], 0, "requests shed")


@scenario(timeout=180)
def instance_killed_holding_a_server_slot_gives_it_back_within_the_lease(env):
    """A per-server cap without max_requests: the slot a killed instance
    held on the server is free once its lease runs out, not at the other
    instance's queue_timeout (a 503 origin-busy), nor never."""
    lease_s = 2
    redis, a = env.redis(), env.origin()
    a.script("/held/*", hold=True, body="h{n}")
    a.script("/go/*", body="g{n}")
    first, second = capped_fleet(env, 2, redis, [a], 1, workers=2, slot_lease=f"{lease_s}s")
    Background(first.get, "/held/1")	# its client sees the instance die
    wait_for(lambda: a.held("/held/1") == 1,
             what="the first instance's request holding the server's one slot")
    expect_eq(redis.cmd("ZCARD", server_slots_key(a.url)), 1, "the server's slots taken")
    waiting = Background(second.get, "/go/1", timeout=slow(90))
    wait_for(lambda: redis.cmd("ZCARD", f"{PREFIX}{{budget}}:queue") == 1,
             what="the second instance's request queued for the server's slot")
    first.kill()	# master and workers at once: nothing is given back
    killed_at = time.monotonic()

    r = waiting.result(slow(90))
    took = time.monotonic() - killed_at
    expect_eq((r.status, r.text), (200, "g1"), f"the second instance's request "
              f"({r.cache_status.raw})")
    # The lease runs out within one lease of its last renewal; the waiter
    # looks again a quarter lease later at most. Never: queue_timeout, 60 s.
    expect(took <= slow(lease_s * 3),
           f"the request went {took:.2f} s after the instance was killed (lease {lease_s} s)")
    a.release("/held/*")


@scenario
def capped_retry_takes_a_slot_on_another_server_or_fails_without_room(env):
    redis = env.redis()
    a, b = env.origin(), env.origin()
    b.script("/r/*", drop=True)		# counts it, then closes: no byte back
    a.script("/r/*", hold=True, body="a{n}")
    # round-robin: the first request goes to b; queue_timeout bounds a
    # retry's wait for room on another server.
    (corral,) = capped_fleet(env, 1, redis, [b, a], 1, balance="round-robin",
                             queue_timeout="500ms")
    first = Background(get, corral, "/r/1")
    wait_for(lambda: a.held("/r/1") == 1, what="the retry held by a")
    expect_eq(b.count("/r/1"), 1, "the first try, reset by b")
    expect_eq((redis.cmd("ZCARD", server_slots_key(b.url)),
               redis.cmd("ZCARD", server_slots_key(a.url))), (0, 1),
              "server slots while the retry runs (b's given up, a's taken)")

    # b resets the next one too, and a is full: the retry finds no room
    # within queue_timeout, and the first try's failure is the answer.
    second = Background(get, corral, "/r/2")
    status, _ = second.result(slow(10))
    expect_eq(status, 502, "a retry with no room on another server")
    expect_eq((b.count("/r/2"), a.count("/r/2")), (1, 0), "the second request's tries (b, a)")
    a.release("/r/*")
    expect_eq(first.result(slow(10)), (200, b"a1"), "the retried request")
    expect_eq(servers(corral)[b.url]["retries"], 1, "b's retries: the one sent")
    expect_eq(corral.stats()["total"]["upstream_retries"], 1, "upstream_retries")
    expect_eq(a.stats()["max_active"], 1, "a's peak")


@scenario(timeout=240)
def redis_down_each_instance_keeps_to_its_share_of_each_servers_cap(env):
    cap, keys = 4, 48		# two instances: each allows itself 2 per server
    redis = env.redis()
    a, b = env.origin(), env.origin()
    for o in (a, b):
        o.script("*", delay_ms=200, body="v{n}")
    fleet = capped_fleet(env, 2, redis, [a, b], cap, workers=2)
    wait_for(lambda: all(c.stats()["origin_budget"]["instances"] == 2 for c in fleet),
             timeout=slow(15), what="every worker to count two instances alive")
    redis.kill()
    wait_for(lambda: not any(c.stats()["redis"]["up"] for c in fleet),
             what="both instances to see Redis down")

    results = stampede(fleet, keys, lambda i: f"/down/{i}", timeout=slow(120))
    expect_eq(sorted({r.status for r in results}), [200], "statuses")
    for o in (a, b):
        peak = o.stats()["max_active"]
        expect(2 <= peak <= cap, f"a server's peak {peak}: two instances' shares of {cap}")
    expect_eq(fleet_counters(fleet)["slot_local"], keys, "slots from the local share")
    expect("requests at once to each server" in fleet[0].log(),
           "the log says what the instance allows itself")


# -- reloads, states, rows ----------------------------------------------------


def pool_section(name, origins, **keys):
    text = f"\n[upstream {name}]\nurl = {', '.join(o.url for o in origins)}\ntimeout = 30s\n"
    return text + "".join(f"{k} = {v}\n" for k, v in keys.items())


@scenario
def reload_that_removes_a_pool_drains_every_one_of_its_servers(env):
    redis = env.redis()
    a = env.origin()
    r1, r2, r3 = env.origin(), env.origin(), env.origin()
    for o in (r1, r2, r3):
        o.script("/reports/*", hold=True)
        o.script("/ping", body="ok")
    listen, admin = free_port(), free_port()
    routes = {"/reports/": {"upstream": "reports"}, "/": {}}
    base = corral_config(redis, a, listen, admin, extra=pool_extra([a]), routes=routes)
    corral = env.corral(config=base + pool_section(
        "reports", [r1, r2, r3], balance="round-robin", health_path="/ping",
        health_interval="100ms"))
    held = Background(get, corral, "/reports/0")	# round robin: r1 first
    wait_for(lambda: r1.held("/reports/0") == 1, what="a report held by the first server")

    rewrite_and_reload(corral, corral_config(redis, a, listen, admin, extra=pool_extra([a])))
    wait_for(lambda: servers(corral, "reports").get(r1.url, {}).get("state") == "draining",
             timeout=slow(10), what="the first server draining")
    expect_eq(sorted(servers(corral, "reports")), [r1.url],
              "the pool's servers /stats still lists (the idle ones let go)")
    probes = (r2.count("/ping"), r3.count("/ping"))
    r1.release("/reports/*")
    expect_eq(held.result(slow(30))[0], 200, "the report in flight")
    wait_for(lambda: "reports" not in {u["pool"] for u in corral.stats()["upstreams"]},
             timeout=slow(10), what="the removed pool gone from /stats")
    expect_eq((r2.count("/ping"), r3.count("/ping")), probes,
              "health checks of the idle servers of the removed pool after the reload")
    log = corral.log()
    for o in (r1, r2, r3):
        expect(f"server {o.url} removed" in log, f"log line of {o.url}'s removal")
    expect(f"server {r1.url} drained, let go" in log, "the drained server let go, logged")
    expect("upstream [upstream reports] drained, let go" in log, "the drained pool, logged")


@scenario
def reload_naming_a_draining_server_again_keeps_one_row_up(env):
    redis = env.redis()
    a, b = env.origin(), env.origin()
    a.script("/slow/*", hold=True)
    listen, admin = free_port(), free_port()
    text = corral_config(redis, a, listen, admin, extra=pool_extra([a, b]))
    corral = env.corral(config=text)
    held = Background(get, corral, "/slow/0")	# least outstanding, tie: a first
    wait_for(lambda: a.held("/slow/0") == 1, what="a request held by a")
    rewrite_and_reload(corral, corral_config(redis, a, listen, admin, extra=pool_extra([b])))
    wait_for(lambda: servers(corral)[a.url]["state"] == "draining", timeout=slow(10),
             what="a draining")
    rewrite_and_reload(corral, text)
    wait_for(lambda: servers(corral)[a.url]["state"] == "up", timeout=slow(10),
             what="a named again: up")
    rows = [u for u in corral.stats()["upstreams"] if u["server"] == a.url]
    expect_eq(len(rows), 1, "a's rows in /stats")
    expect_eq(rows[0]["in_flight"], 1, "its request in flight, kept")
    expect(f"server {a.url} removed, draining its 1 request in flight" in corral.log(),
           "log line of its removal")
    expect(f"server {a.url} named again, no longer draining" in corral.log(), "log line")
    a.release("/slow/*")
    expect_eq(held.result(slow(30))[0], 200, "the request in flight")
    expect_eq(sorted(set(burst(corral, [f"/new/{i}" for i in range(6)]))), [200], "new ones")
    expect(count_prefix(a, "/new/") >= 1, "a takes new requests again")
    expect_eq(servers(corral)[a.url]["state"], "up", "a once its request is done")


@scenario
def stats_list_every_server_of_sixteen_pools_of_sixteen(env):
    # Short names, so that sixteen fit a line; never sent a request.
    urls = ",".join(f"http://{h}:{p}" for h in "ab" for p in range(1, 9))
    redis = env.redis()
    text = corral_config(redis, urls, free_port(), free_port())
    text += "".join(f"\n[upstream p{i}]\nurl = {urls}\n" for i in range(15))
    corral = env.corral(config=text)
    s = corral.stats()
    expect_eq(len(s["upstreams"]), 256, "servers /stats lists")
    expect_eq(s["upstreams_left_out"], 0, "servers left out")
    expect_eq(len({(u["pool"], u["server"]) for u in s["upstreams"]}), 256, "distinct rows")


@scenario
def server_out_is_back_after_fail_timeout_without_a_request(env):
    redis = env.redis()
    a, b = env.origin(), env.origin()
    b.stop()
    corral = env.corral(redis, a, extra=pool_extra([b, a], max_fails=1, fail_timeout="1s",
                                                   balance="round-robin"))
    expect_eq(get(corral, "/one")[0], 200, "a request (b refuses it, a answers)")
    expect_eq(servers(corral)[b.url]["state"], "down", "b taken out")
    wait_for(lambda: servers(corral)[b.url]["state"] == "up", timeout=slow(10),
             what="b back in /stats once fail_timeout is over, no request since")
    samples = metric_samples(corral.admin("GET", "/metrics").text)
    key = ("corral_upstream_server_up", frozenset({("pool", "default"), ("server", b.url)}))
    expect_eq(samples.get(key), 1, "/metrics corral_upstream_server_up of b")
    expect(f"server {b.url} is back in: fail_timeout is over" in corral.log(), "log line")


def failing(corral, path):
    """A request its server answers 503 (a failure): (sent, answered),
    monotonic."""
    sent = time.monotonic()
    status, _ = get(corral, path)
    answered = time.monotonic()
    expect_eq(status, 503, f"{path}: the server's answer")
    return sent, answered


@scenario
def failures_further_apart_than_fail_timeout_never_take_a_server_out(env):
    """max_fails = 2 within fail_timeout = 2 s: two failures more than 2 s
    apart leave the server in; two within 2 s take it out."""
    window_s = 2
    redis, a = env.redis(), env.origin()
    a.script("/fail/*", status=503)
    corral = env.corral(redis, a, extra=pool_extra([a], max_fails=2,
                                                   fail_timeout=f"{window_s}s"))
    _, answered = failing(corral, "/fail/1")
    expect_eq(servers(corral)[a.url]["state"], "up", "after one failure")
    # The first failure was counted before its answer left; the second is
    # counted after it is sent: more than the window apart by Corral's clock.
    wait_for(lambda: time.monotonic() > answered + window_s + 0.1, timeout=window_s + 5,
             what="fail_timeout to pass since the first failure")
    sent, _ = failing(corral, "/fail/2")
    s = servers(corral)[a.url]
    expect_eq((s["state"], s["failures"]), ("up", 2),
              "two failures further apart than fail_timeout: the server stays in")

    # The next one back to back: within the window, unless the machine
    # stalled past it (that pair proves nothing, and the next is tried).
    for i in range(3, 8):
        before, (sent, answered) = sent, failing(corral, f"/fail/{i}")
        s = servers(corral)[a.url]
        if s["state"] == "down":
            break
        expect(answered - before >= window_s,
               f"failures {i - 1} and {i}, at most {answered - before:.2f} s apart, left "
               f"the server in: {s}")
    expect_eq(s["state"], "down", "two failures within fail_timeout take the server out")
    expect(s["why"].startswith("2 failures in "), f"why: {s['why']!r}")
    expect(int(s["why"].split()[3]) <= window_s * 1000, f"within the window: {s['why']!r}")
    expect_eq(s["taken_out"], 1, "times taken out")


@scenario
def failed_try_with_no_other_server_is_no_retry(env):
    redis, a = env.redis(), env.origin()
    a.stop()
    corral = env.corral(redis, a, extra=pool_extra([a], max_fails=0))
    expect_eq(get(corral, "/x")[0], 502, "a request to the only server, refused")
    expect_eq(servers(corral)[a.url]["retries"], 0, "its server's retries")
    expect_eq(corral.stats()["total"]["upstream_retries"], 0, "upstream_retries")


@scenario
def every_server_out_the_one_that_failed_longest_ago_gets_the_request(env):
    redis = env.redis()
    a, b = env.origin(), env.origin()
    for o in (a, b):
        o.script("/ping", status=503)
    # b listed first: with no failure times, it would be chosen.
    corral = env.corral(redis, a, extra=pool_extra(
        [b, a], health_path="/ping", health_interval="100ms", health_rise=100))
    wait_for(lambda: all(s["state"] == "down" for s in servers(corral).values()),
             timeout=slow(10), what="both servers out by their probes")
    a.script("/ping", status=200)	# a passes from now on (not enough to be back)
    passed = servers(corral)[a.url]["health_ok"]
    wait_for(lambda: servers(corral)[a.url]["health_ok"] >= passed + 3, timeout=slow(10),
             what="a's probes passing, b's still failing")
    expect_eq(servers(corral)[a.url]["state"], "down", "a still out (health_rise 100)")
    expect_eq(get(corral, "/x")[0], 200, "a request with every server out")
    expect_eq((a.count("/x"), b.count("/x")), (1, 0),
              "the request went to the server that failed longest ago")


# -- first_byte_timeout's default, balancing, weights, fencing, stale ----------

@scenario
def hung_server_request_goes_elsewhere_with_the_default_first_byte_timeout(env):
    redis = env.redis()
    a, b = env.origin(), env.origin()
    b.script("*", hold=True)	# accepts, reads, never answers
    # No first_byte_timeout: with two servers a try waits half of timeout.
    corral = env.corral(redis, a, extra=pool_extra([b, a], timeout="4s"))
    r = corral.get("/hung/1", timeout=slow(30))
    expect_eq((r.status, r.text != ""), (200, True), "the client's status")
    expect(r.elapsed < slow(3.5), f"answered after {r.elapsed:.2f} s (timeout 4 s, a try 2 s)")
    expect_eq((b.count("/hung/1"), a.count("/hung/1")), (1, 1), "tries (b, a)")
    expect_eq(servers(corral)[b.url]["retries"], 1, "the hung server's retries")
    b.release("*")


def weighted_extra(a, b, **keys):
    up = {"url": f"{a.url} weight=3, {b.url}", "connect_timeout": "1s", "timeout": "30s"}
    up.update({k: str(v) for k, v in keys.items()})
    return {"upstream": up}


@scenario
def weights_split_requests_three_to_one_in_either_balance(env):
    redis = env.redis()
    for balance in ("least_outstanding", "round-robin"):
        a, b = env.origin(), env.origin()
        corral = env.corral(redis, a, extra=weighted_extra(a, b, balance=balance))
        for i in range(40):	# one at a time: equal loads
            expect_eq(get(corral, f"/{balance}/{i}")[0], 200, "a request's status")
        expect_eq((count_prefix(a, f"/{balance}/"), count_prefix(b, f"/{balance}/")),
                  (30, 10), f"{balance}: requests of the weight 3 and weight 1 servers")
        expect_eq(servers(corral)[a.url]["weight"], 3, "/stats weight")


@scenario
def round_robin_gives_each_server_its_turn_however_busy(env):
    redis = env.redis()
    a, b, c = env.origin(), env.origin(), env.origin()
    a.script("/busy/*", hold=True)
    corral = env.corral(redis, a, extra=pool_extra([a, b, c], balance="round-robin"))
    busy = Background(get, corral, "/busy/0")	# a's turn: held there
    wait_for(lambda: a.held("/busy/0") == 1, what="a busy with a held request")
    for i in range(6):
        expect_eq(get(corral, f"/rr/{i}")[0], 200, "a request's status")
    expect_eq(tuple(count_prefix(o, "/rr/") for o in (a, b, c)), (2, 2, 2),
              "requests of a (busy), b and c: each its turn, load ignored")
    expect_eq(servers(corral)[a.url]["in_flight"], 1, "a still busy")
    a.release("/busy/*")
    expect_eq(busy.result(slow(10))[0], 200, "the held request")


@scenario
def retried_fetch_that_lost_its_lock_never_overwrites_the_entry(env):
    foreign = "f" * 32
    redis = env.redis()
    a, b = env.origin(), env.origin()
    b.script("/fence", drop=True)			# reset before any byte
    a.script("/fence", hold=True, body="v{n}")
    corral = env.corral(redis, a, routes={"/": {"lock_ttl": "30s"}},
                        extra=pool_extra([b, a], balance="round-robin"))
    client = Background(corral.get, "/fence")
    wait_for(lambda: a.held("/fence") == 1 and redis.exists(lock_key("/fence")),
             what="the retry held by a, under the lock")
    expect_eq(b.count("/fence"), 1, "the first try, reset by b")
    redis.cmd("SET", lock_key("/fence"), foreign)	# another fetch took it over
    a.release("/fence")
    r = client.result(slow(10))
    expect_eq((r.status, r.text, r.cache_status.stored), (200, "v1", False),
              f"the retried fetch that lost its lock ({r.cache_status.raw})")
    expect(not redis.exists(entry_key("/fence")), "an entry was written without the lock")
    expect_eq(redis.get(lock_key("/fence")), foreign, "the other holder's lock")
    c = corral.counters()
    expect_eq((c["upstream_retries"], c["lock_lost"], c["stores"]), (1, 1, 0),
              "upstream_retries, lock_lost, stores")


@scenario
def every_server_out_serves_stale_where_stale_if_error_allows(env):
    redis = env.redis()
    a, b = env.origin(), env.origin()
    for o in (a, b):
        o.script("*", body="v{n}")
    routes = {"/s/": {"ttl": "1s", "stale_while_revalidate": "1s", "stale_if_error": "1h"},
              "/": {}}
    corral = env.corral(redis, a, routes=routes,
                        extra=pool_extra([a, b], max_fails=1, fail_timeout="10m"))
    expect_eq(corral.get("/s/x").text, "v1", "primed")
    expect_eq(corral.get("/n/x").status, 200, "primed, without stale_if_error")
    wait_for(lambda: 0 < redis.pttl(entry_key("/s/x")) < 3_601_000 - 2_200,
             timeout=slow(10), what="/s/x past its stale_while_revalidate")
    a.stop()
    b.stop()
    for i in range(2):	# the first takes both out; the second finds them out
        r = corral.get("/s/x")
        expect_eq((r.status, r.text), (200, "v1"), f"request {i}: the stale entry")
    expect(all(s["state"] == "down" for s in servers(corral).values()), "both servers out")
    expect_eq(corral.get("/n/y").status, 502, "a miss with every server out")


@scenario
def reload_adds_and_removes_named_pools_and_changes_weights(env):
    redis = env.redis()
    a, b, r, e = env.origin(), env.origin(), env.origin(), env.origin()
    listen, admin = free_port(), free_port()
    corral = env.corral(config=corral_config(
        redis, a, listen, admin, extra=pool_extra([a, b]),
        routes={"/reports/": {"upstream": "reports"}, "/": {}}) + pool_section("reports", [r]))
    expect_eq(get(corral, "/reports/0")[0], 200, "a report")
    expect_eq(r.count("/reports/0"), 1, "the report from its pool")

    rewrite_and_reload(corral, corral_config(
        redis, a, listen, admin, extra=weighted_extra(a, b),
        routes={"/exports/": {"upstream": "exports"}, "/": {}}) + pool_section("exports", [e]))
    wait_for(lambda: {u["pool"] for u in corral.stats()["upstreams"]} == {"", "exports"},
             timeout=slow(10), what="the pools after the reload: the default and exports")
    expect_eq(servers(corral)[a.url]["weight"], 3, "a's new weight")
    for i in range(4):
        expect_eq(get(corral, f"/exports/{i}")[0], 200, "an export")
    expect_eq(count_prefix(e, "/exports/"), 4, "exports from the new pool")
    expect_eq(get(corral, "/reports/1")[0], 200, "a report now of the default pool")
    expect_eq(r.count("/reports/1"), 0, "requests to the removed pool's server")
    for i in range(20):
        expect_eq(get(corral, f"/w/{i}")[0], 200, "a request's status")
    split = (count_prefix(a, "/w/"), count_prefix(b, "/w/"))
    expect(split in ((15, 5), (14, 6), (16, 4)), f"the new weights' split (3:1): {split}")
    expect("upstream [upstream reports] removed" in corral.log(), "log line")
