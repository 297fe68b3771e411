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
import threading

from harness import (HOST, Background, corral_config, expect, expect_eq, scenario,
                     slow, wait_for)
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
          "timeout": "10s"}
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
    redis = env.redis()
    a, b, c = env.origin(), env.origin(), env.origin()
    b.script("*", hold=True)	# accepts, reads, never answers
    corral = env.corral(redis, a, extra=pool_extra(
        [b, a, c], max_fails=2, fail_timeout="10m", first_byte_timeout="300ms"))

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
