# SPDX-License-Identifier: MIT
"""Watching Corral: Prometheus metrics (every family moves when its event
happens, and promtool accepts the exposition), /stats histograms, the
access and error logs (format, SIGUSR1 reopen), the connections gauge,
corral -s, and the dashboard in headless Chromium.
"""

import http.client
import math
import os
import re
import shutil
import signal
import subprocess
import threading
import time

from browser import Browser
from harness import (HOST, Background, expect, expect_eq, free_port, lock_key, raw_exchange,
                     read_text, scenario, slow, stampede, wait_for, wait_until_stale)

SAMPLE_RE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')

# Every metric family docs/operations.md lists, with its type.
FAMILIES = {
    "corral_build_info": "gauge",
    "corral_start_time_seconds": "gauge",
    "corral_connections": "gauge",
    "corral_admin_connections": "gauge",
    "corral_admin_connections_refused_total": "counter",
    "corral_restart_pending": "gauge",
    "corral_requests_in_progress": "gauge",
    "corral_flights": "gauge",
    "corral_refreshes_in_progress": "gauge",
    "corral_upstream_requests_in_progress": "gauge",
    "corral_requests_total": "counter",
    "corral_upstream_requests_total": "counter",
    "corral_cache_stores_total": "counter",
    "corral_not_modified_total": "counter",
    "corral_invalidations_total": "counter",
    "corral_early_refresh_total": "counter",
    "corral_revalidations_total": "counter",
    "corral_stale_if_error_total": "counter",
    "corral_lock_acquired_total": "counter",
    "corral_lock_busy_total": "counter",
    "corral_lock_renewed_total": "counter",
    "corral_lock_lost_total": "counter",
    "corral_lock_wait_timeouts_total": "counter",
    "corral_lock_takeovers_total": "counter",
    "corral_backoff_skips_total": "counter",
    "corral_peer_streams_total": "counter",
    "corral_stream_laggards_total": "counter",
    "corral_upstream_duration_seconds": "histogram",
    "corral_lock_wait_seconds": "histogram",
    "corral_redis_up": "gauge",
    "corral_redis_commands_total": "counter",
    "corral_redis_errors_total": "counter",
    "corral_redis_timeouts_total": "counter",
    "corral_redis_connects_total": "counter",
    "corral_redis_disconnects_total": "counter",
    "corral_redis_auth_failures_total": "counter",
    "corral_redis_full": "gauge",
    "corral_redis_oom_total": "counter",
    "corral_upstream_rejected_total": "counter",
    "corral_redis_fill_notifications_total": "counter",
    "corral_redis_command_duration_seconds": "histogram",
    "corral_tag_set_members_max": "gauge",
    "corral_tag_members_pruned_total": "counter",
    "corral_key_rule_hits_total": "counter",
    "corral_key_rule_stores_total": "counter",
    "corral_post_passed_total": "counter",
}

# One access-log line: the combined log format, then Corral's fields.
ACCESS_RE = re.compile(
    r'^(?P<client>\S+) - - \[(?P<time>\d\d/[A-Z][a-z]{2}/\d{4}:\d\d:\d\d:\d\d [+-]\d{4})\] '
    r'"(?P<method>[A-Z]+) (?P<uri>\S+) HTTP/(?P<proto>\d\.\d)" (?P<status>\d{3}) (?P<bytes>\d+) '
    r'"(?P<referer>[^"]*)" "(?P<agent>[^"]*)" cache=(?P<cache>[a-z]+) route=(?P<route>\S+) '
    r'upstream_ms=(?P<upstream_ms>\d+|-) lock_wait_ms=(?P<lock_wait_ms>\d+|-) '
    r'total_ms=(?P<total_ms>\d+)(?: key=(?P<key>[a-z-]+))?$')


# -- reading the admin listener ---------------------------------------------------

def admin_get(corral, path):
    return corral.admin("GET", path)


class Metrics:
    """A parsed /metrics exposition: samples by (name, labels) and TYPE lines."""

    def __init__(self, text):
        self.text = text
        self.samples = {}
        self.types = {}
        for line in text.splitlines():
            if line.startswith("# TYPE "):
                _, _, name, kind = line.split(" ", 3)
                self.types[name] = kind
                continue
            if not line or line.startswith("#"):
                continue
            m = SAMPLE_RE.match(line)
            expect(m is not None, f"/metrics: unparsable line {line!r}")
            labels = tuple(sorted(LABEL_RE.findall(m.group(2) or "")))
            self.samples[(m.group(1), labels)] = float(m.group(3))

    def value(self, name, **labels):
        key = (name, tuple(sorted(labels.items())))
        if key not in self.samples:
            raise AssertionError(f"/metrics has no {name}{labels or ''}")
        return self.samples[key]

    def histogram(self, name, **labels):
        """{"count", "sum", "buckets": {le: cumulative}} of one series."""
        buckets = {}
        for (n, lbl), v in self.samples.items():
            d = dict(lbl)
            le = d.pop("le", None)
            if n == name + "_bucket" and d == labels:
                buckets[le] = v
        return {"count": self.value(name + "_count", **labels),
                "sum": self.value(name + "_sum", **labels), "buckets": buckets}


def metrics(corral):
    r = admin_get(corral, "/metrics")
    expect_eq(r.status, 200, "GET /metrics status")
    expect(r.headers.get("Content-Type", "").startswith("text/plain; version=0.0.4"),
           f"/metrics Content-Type: {r.headers.get('Content-Type')!r}")
    return Metrics(r.text)


def expect_values(m, name, expected, **labels):
    """expected: {label_value: n} for the one label not in labels, e.g.
    expect_values(m, "corral_requests_total", {"hit": 1}, route="/")."""
    (label, values), = expected.items()
    for value, n in values.items():
        got = m.value(name, **labels, **{label: value})
        expect_eq(got, n, f"{name}{{{labels}, {label}={value!r}}}")


def find_promtool():
    found = shutil.which("promtool")
    expect(found is not None, "promtool not found: scripts/install-deps test installs it "
           "(Debian package prometheus)")
    return found


# -- metrics ----------------------------------------------------------------------

@scenario
def every_request_outcome_and_upstream_class_moves_its_metric(env):
    route = "/c/"
    redis, origin = env.redis(), env.origin()
    origin.script("/c/e", status=503)
    origin.script("/c/nf", status=404)
    origin.script("/c/moved", status=301, headers={"Location": "/c/a"})
    origin.script("/c/slow", delay_ms=6000)
    origin.script("/c/held", hold=True)
    corral = env.corral(redis, origin, routes={route: {
        "ttl": "1s", "stale_while_revalidate": "60s", "lock_wait": "5s"}},
        extra={"upstream": {"timeout": "2500ms"}})	# the held fetch's too

    zero = metrics(corral)
    for name, kind in FAMILIES.items():
        expect_eq(zero.types.get(name), kind, f"TYPE of {name}")
    expect_values(zero, "corral_requests_total", {"cache": {
        "hit": 0, "stale": 0, "miss": 0, "collapsed": 0, "bypass": 0, "error": 0}},
        route=route)
    expect_eq(zero.value("corral_build_info", version=corral.stats()["version"]), 1,
              "corral_build_info")

    statuses = {}
    for path, method in (("/c/a", "GET"), ("/c/a", "GET"), ("/c/p", "POST"),
                         ("/free", "GET"), ("/c/e", "GET"), ("/c/nf", "GET"),
                         ("/c/moved", "GET"), ("/c/slow", "GET")):
        statuses[(path, method)] = corral.get(path, method=method).status
    expect_eq(statuses[("/c/slow", "GET")], 504, "a fetch past [upstream] timeout")

    # Two requests for a held key: one fetches, the other is collapsed.
    first = Background(corral.get, "/c/held")
    wait_for(lambda: origin.held("/c/held") == 1, what="the fetch of /c/held")
    second = Background(corral.get, "/c/held")
    wait_for(lambda: corral.stats()["in_progress"]["requests"] == 2,
             what="the second request to join the flight")
    origin.release("/c/held")
    expect_eq(sorted(r.result().status for r in (first, second)), [200, 200], "/c/held")

    wait_until_stale(redis, "/c/a", swr_ms=60_000, by_ms=50)
    expect(corral.get("/c/a").cache_status.hit, "a stale hit on /c/a")
    wait_for(lambda: origin.count("/c/a") == 2, what="the stale hit's refresh")
    wait_for(lambda: corral.stats()["in_progress"]["refreshes"] == 0,
             what="the refresh to finish")

    m = metrics(corral)
    expect_values(m, "corral_requests_total", {"cache": {
        "hit": 1, "stale": 1, "miss": 5, "collapsed": 1, "bypass": 1, "error": 1}},
        route=route)
    expect_values(m, "corral_requests_total", {"cache": {
        "hit": 0, "miss": 0, "bypass": 1, "error": 0}}, route="(none)")
    # /c/a twice (first fetch and refresh), POST /c/p, /c/held.
    expect_values(m, "corral_upstream_requests_total", {"code": {
        "2xx": 4, "3xx": 1, "4xx": 1, "5xx": 1, "timeout": 1, "error": 0}}, route=route)
    expect_values(m, "corral_upstream_requests_total", {"code": {"2xx": 1}}, route="(none)")
    up = m.histogram("corral_upstream_duration_seconds", route=route)
    expect_eq(up["count"], 8, "upstream fetches timed on route /c/")
    expect_eq(up["buckets"]["+Inf"], 8, "the +Inf bucket is the count")
    expect(up["sum"] >= 2.5, f"upstream duration sum includes the 2.5 s timeout: {up['sum']}")
    expect(up["buckets"]["1"] < 8, "the timed-out fetch is in a bucket above 1 s")
    wait = m.histogram("corral_lock_wait_seconds", route=route)
    expect_eq(wait["count"], 1, "lock waits on route /c/ (the collapsed request)")
    # a, e, nf, moved, slow, held, and the refresh of a each took the lock.
    expect_eq(m.value("corral_lock_acquired_total", route=route), 7, "locks acquired")
    expect_eq(m.value("corral_cache_stores_total", route=route), 4,
              "stores: a, moved, held, a's refresh")
    expect_eq(m.value("corral_requests_in_progress"), 0, "requests in progress")
    expect(m.value("corral_redis_commands_total") > 0, "Redis commands counted")
    expect_eq(m.value("corral_redis_up"), 1, "corral_redis_up")
    started = m.value("corral_start_time_seconds")
    expect(int(corral.started_at) <= started <= time.time(),
           f"corral_start_time_seconds {started}: between the launch of the process "
           f"({corral.started_at:.3f}) and now")


@scenario
def lock_busy_renewed_lost_and_wait_timeout_move_their_metrics(env):
    path = "/k"
    redis, origin = env.redis(), env.origin()
    origin.script(path, hold=True)
    a, b = env.fleet(2, redis, origin, routes={"/": {
        "lock_ttl": "300ms", "lock_wait": "500ms", "lock_poll": "5s"}})

    first = Background(a.get, path)
    wait_for(lambda: origin.held(path) == 1, what="A's fetch to hold the lock")
    second = Background(b.get, path)
    wait_for(lambda: metrics(b).value("corral_lock_busy_total", route="/") == 1,
             what="B to find the lock busy")
    wait_for(second.done, timeout=5, what="B to give up after lock_wait (a 504)")
    expect_eq(origin.count(path), 1, "origin requests: B gave up without a fetch")
    wait_for(lambda: metrics(a).value("corral_lock_renewed_total", route="/") >= 1,
             what="A to renew its lock during the slow fetch")
    redis.cmd("SET", lock_key(path), "f" * 32)	# someone took A's lock over
    wait_for(lambda: metrics(a).value("corral_lock_lost_total", route="/") == 1,
             what="A to notice its lock was lost")
    origin.release(path)
    first.result(), second.result()

    ma, mb = metrics(a), metrics(b)
    expect_eq(ma.value("corral_lock_acquired_total", route="/"), 1, "A: locks acquired")
    expect_eq(ma.value("corral_cache_stores_total", route="/"), 0, "A: stores after losing")
    expect_eq(mb.value("corral_lock_wait_timeouts_total", route="/"), 1,
              "B: lock wait timeouts")
    wait = mb.histogram("corral_lock_wait_seconds", route="/")
    expect_eq(wait["count"], 1, "B: lock waits")
    expect(0.45 <= wait["sum"] < 5, f"B waited about lock_wait (500 ms): {wait['sum']} s")
    expect_eq(wait["buckets"]["0.25"], 0, "B's wait is above the 0.25 s bucket")
    expect_eq(wait["buckets"]["1"], 1, "B's wait is within the 1 s bucket")


@scenario
def revalidation_not_modified_and_invalidation_move_their_metrics(env):
    path, etag = "/v", '"v1"'
    redis, origin = env.redis(), env.origin()
    origin.script(path, headers={"ETag": etag})
    corral = env.corral(redis, origin, routes={"/": {
        "ttl": "1s", "stale_while_revalidate": "60s"}})
    count = lambda name: metrics(corral).value(name, route="/")	# noqa: E731

    expect(corral.get(path).cache_status.stored, "the first GET stores")
    r = corral.get(path, headers={"If-None-Match": etag})
    expect_eq(r.status, 304, f"a conditional GET with the stored ETag ({r.cache_status.raw})")
    expect_eq(count("corral_not_modified_total"), 1, "corral_not_modified_total")

    origin.script(path, status=304, headers={"ETag": etag})
    wait_until_stale(redis, path, swr_ms=60_000, by_ms=50)
    expect(corral.get(path).cache_status.hit, "a stale hit starts a refresh")
    wait_for(lambda: count("corral_revalidations_total") == 1,
             what="the refresh to be answered 304 and counted")

    origin.script(path, status=200)
    expect_eq(corral.get(path, method="POST", body=b"x").status, 200, "POST")
    wait_for(lambda: count("corral_invalidations_total") == 1,
             what="the POST to invalidate the entry")
    expect_eq(count("corral_early_refresh_total"), 0, "no early refresh was due")


@scenario
def upstream_and_redis_failures_move_error_metrics(env):
    redis = env.redis()
    closed = f"http://127.0.0.1:{free_port()}"	# nothing listens: connection refused
    # The pause below must outlast [redis] timeout, also when the harness
    # stretches its defaults (under valgrind).
    corral = env.corral(redis, closed, extra={"redis": {"timeout": "250ms"}})

    expect_eq(corral.get("/x").status, 502, "GET with the upstream down")
    m = metrics(corral)
    expect_values(m, "corral_requests_total", {"cache": {"error": 1}}, route="/")
    expect_values(m, "corral_upstream_requests_total", {"code": {"error": 1, "2xx": 0}},
                  route="/")
    before = m.value("corral_redis_errors_total")
    expect_eq(m.value("corral_redis_timeouts_total"), 0, "Redis timeouts before the pause")

    # Redis answers nothing for 2 s: the lookup times out ([redis] timeout
    # 250 ms), and its late reply lands in a slow bucket of the histogram.
    redis.cmd("CLIENT", "PAUSE", "2000", "ALL")
    expect_eq(corral.get("/y").status, 502, "GET while Redis is paused")
    wait_for(lambda: metrics(corral).histogram(
        "corral_redis_command_duration_seconds")["buckets"]["0.25"] <
        metrics(corral).value("corral_redis_command_duration_seconds_count"),
        what="a reply slower than 0.25 s in corral_redis_command_duration_seconds")
    m = metrics(corral)
    expect(m.value("corral_redis_timeouts_total") >= 1, "corral_redis_timeouts_total moved")
    expect(m.value("corral_redis_errors_total") > before, "corral_redis_errors_total moved")

    redis.stop()
    wait_for(lambda: metrics(corral).value("corral_redis_up") == 0,
             what="corral_redis_up to drop to 0 with Redis stopped")
    expect(metrics(corral).value("corral_redis_disconnects_total") >= 1,
           "corral_redis_disconnects_total moved")
    health = admin_get(corral, "/health").text.strip()
    expect(re.fullmatch(r"ok redis=down \((disconnected|cannot connect).*\) mode=single "
                        + re.escape(redis.address) + "=down", health),
           f"/health says down, why, the mode and the node: {health!r}")


@scenario
def promtool_accepts_the_metrics_exposition(env):
    promtool = find_promtool()
    redis, origin = env.redis(), env.origin()
    origin.script("/api/down", status=500)
    origin.script("/api/cold", hold=True)
    corral = env.corral(redis, origin, routes={"/api/": {}, "/reports/": {}})
    for path in ("/api/a", "/api/a", "/reports/r", "/api/down", "/elsewhere"):
        corral.get(path)
    clients = Background(stampede, corral, 20, "/api/cold")
    wait_for(lambda: corral.stats()["in_progress"]["requests"] == 20,
             what="20 requests waiting for the held /api/cold")
    origin.release("/api/cold")
    clients.result()

    text = admin_get(corral, "/metrics").text
    p = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                       text=True, timeout=30)
    expect(p.returncode == 0 and not (p.stdout + p.stderr).strip(),
           f"promtool check metrics: exit {p.returncode}\n{p.stdout}{p.stderr}")
    m = Metrics(text)
    for route in ("/api/", "/reports/", "(none)"):
        m.value("corral_requests_total", route=route, cache="hit")
    expect_eq(m.value("corral_requests_total", route="/api/", cache="hit"), 1, "hits")
    expect_eq(m.value("corral_requests_total", route="/api/", cache="collapsed"), 19,
              "collapsed in the stampede")


@scenario
def stats_json_has_histogram_buckets_and_quantiles(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/r/slow", delay_ms=1200)
    corral = env.corral(redis, origin, routes={"/r/": {}})
    for path in ("/r/a", "/r/slow", "/r/a", "/outside"):
        corral.get(path)

    s = corral.stats()
    for where, h in (("total.upstream_duration", s["total"]["upstream_duration"]),
                     ("routes./r/.upstream_duration", s["routes"]["/r/"]["upstream_duration"]),
                     ("redis.command_duration", s["redis"]["command_duration"])):
        keys = list(h["buckets"])
        expect_eq(keys[-1], "+Inf", f"{where}: last bucket")
        bounds = [float(k) for k in keys[:-1]]
        expect(bounds == sorted(bounds) and bounds[0] < 0.001 and bounds[-1] >= 30,
               f"{where}: bounds from sub-millisecond to tens of seconds: {keys}")
        expect_eq(sum(h["buckets"].values()), h["count"], f"{where}: buckets add up to count")
        expect(h["count"] > 0, f"{where}: has observations")
        expect(0 < h["p50_s"] <= h["p90_s"] <= h["p99_s"], f"{where}: quantiles {h}")
    total = s["total"]["upstream_duration"]
    expect_eq(total["count"], 3, "upstream fetches: /r/a, /r/slow, /outside")
    expect(1 <= total["p99_s"] <= 2.5, f"p99 is in the slow fetch's bucket: {total}")
    expect(total["sum_s"] >= 1.2, f"sum_s includes the 1.2 s fetch: {total}")
    expect_eq(s["routes"]["/r/"]["lock_wait"]["count"], 0, "no lock waits")
    expect_eq(s["unrouted"]["bypass"], 1, "unrouted: /outside bypassed")
    expect_eq(s["unrouted"]["upstream_duration"]["count"], 1, "unrouted: one fetch")
    expect_eq(s["total"]["hits"], 1, "counters are still there")

    # connections: open client connections, none between requests, then
    # the two held open.
    wait_for(lambda: corral.stats()["connections"] == 0, what="connections back to 0")
    held = [http.client.HTTPConnection(corral.host, corral.port, timeout=10) for _ in range(2)]
    for conn in held:
        conn.request("GET", "/r/a", headers={"Host": HOST})
        resp = conn.getresponse()
        resp.read()
        expect_eq(resp.status, 200, "a request on a held connection")
    wait_for(lambda: corral.stats()["connections"] == 2,
             what="connections = 2 while two keep-alive clients stay connected")
    for conn in held:
        conn.close()
    wait_for(lambda: corral.stats()["connections"] == 0,
             what="connections = 0 once they closed")


@scenario
def connections_gauge_counts_open_client_connections(env):
    import http.client
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin)
    gauge = lambda: metrics(corral).value("corral_connections")	# noqa: E731

    conns = [http.client.HTTPConnection(corral.host, corral.port, timeout=10)
             for _ in range(3)]
    for c in conns:
        c.request("GET", "/a", headers={"Host": "app.test"})
        c.getresponse().read()
    expect_eq(gauge(), 3, "three keep-alive connections")
    conns[0].close()
    conns[1].close()
    wait_for(lambda: gauge() == 1, what="the gauge to drop to 1 after two closes")
    conns[2].request("GET", "/a", headers={"Host": "app.test", "Connection": "close"})
    conns[2].getresponse().read()
    wait_for(lambda: gauge() == 0, what="the gauge to drop to 0 after Connection: close")
    expect_eq(corral.stats()["connections"], 0, "/stats connections")
    conns[2].close()


# -- logs ---------------------------------------------------------------------------

def access_lines(path, count, what):
    """Waits for at least count lines in path; returns them parsed."""
    lines = wait_for(lambda: (lambda ls: ls if len(ls) >= count else None)(
        read_text(path).splitlines()), what=f"{count} lines in {what}")
    parsed = []
    for line in lines:
        m = ACCESS_RE.match(line)
        expect(m is not None, f"{what}: line does not match the documented format:\n{line}")
        parsed.append(m.groupdict())
    return parsed


@scenario
def access_log_line_has_combined_fields_cache_route_and_times(env):
    log = os.path.join(env.workdir, "access.log")
    redis, origin = env.redis(), env.origin()
    origin.script("/r/a?x=1", delay_ms=1000, body="hello")
    corral = env.corral(redis, origin, routes={"/r/": {}},
                        extra={"server": {"access_log": log}})
    agent = 'probe/1.0 "quoted"'
    headers = {"User-Agent": agent, "Referer": "/from"}

    miss = corral.get("/r/a?x=1", headers=headers)
    hit = corral.get("/r/a?x=1", headers=headers)
    corral.get("/elsewhere", method="POST", body=b"abc")
    expect_eq((miss.cache_status.stored, hit.cache_status.hit), (True, True), "miss, hit")

    m, h, p = access_lines(log, 3, "the access log")
    for line, what in ((m, "miss"), (h, "hit")):
        expect_eq((line["client"], line["method"], line["uri"], line["proto"], line["status"]),
                  ("127.0.0.1", "GET", "/r/a?x=1", "1.1", "200"), f"{what}: request fields")
        expect_eq(line["bytes"], "5", f"{what}: body bytes")
        expect_eq(line["referer"], "/from", f"{what}: referer")
        expect_eq(line["agent"], r"probe/1.0 \x22quoted\x22", f"{what}: escaped user agent")
        expect_eq(line["route"], "/r/", f"{what}: route")
        expect_eq(line["lock_wait_ms"], "-", f"{what}: lock_wait_ms")
    expect_eq(m["cache"], "miss", "miss: cache")
    expect(m["upstream_ms"] != "-" and int(m["upstream_ms"]) >= 1000,
           f"miss: upstream_ms covers the 1 s origin: {m['upstream_ms']}")
    expect(int(m["total_ms"]) >= int(m["upstream_ms"]), f"miss: total_ms >= upstream_ms: {m}")
    expect_eq((h["cache"], h["upstream_ms"]), ("hit", "-"), "hit: cache, upstream_ms")
    expect(int(h["total_ms"]) < 500, f"hit: total_ms {h['total_ms']}, not the origin's 1 s")
    expect_eq((p["method"], p["cache"], p["route"], p["referer"]),
              ("POST", "bypass", "-", "-"), "unrouted POST: method, cache, route, referer")


@scenario
def sigusr1_reopens_the_access_and_error_logs(env):
    access = os.path.join(env.workdir, "access.log")
    errors = os.path.join(env.workdir, "error.log")
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, extra={"server": {
        "access_log": access, "error_log": errors}})

    expect("listening on" in read_text(errors), "start-up lines go to the error_log file")
    expect("listening on" not in corral.log(), "and not to stderr")
    corral.get("/before")
    access_lines(access, 1, "the access log")
    os.rename(access, access + ".1")	# what logrotate does
    os.rename(errors, errors + ".1")
    corral.proc.send_signal(signal.SIGUSR1)
    wait_for(lambda: "logs reopened" in read_text(errors),
             what="'logs reopened' in a new error log at the same path")
    corral.get("/after")

    (after,) = access_lines(access, 1, "the new access log")
    expect_eq(after["uri"], "/after", "the new file's line")
    old = [l["uri"] for l in access_lines(access + ".1", 1, "the rotated access log")]
    expect_eq(old, ["/before"], "lines in the rotated file")
    expect("logs reopened" not in read_text(errors + ".1"), "the rotated error log")


# -- corral -s ------------------------------------------------------------------------

@scenario
def corral_s_prints_the_stats_as_a_table(env):
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, routes={"/": {}, "/reports/": {}})
    for path in ("/a", "/a", "/a", "/reports/x"):
        corral.get(path)

    p = env.run_corral("-s", f"{corral.admin_host}:{corral.admin_port}")
    expect_eq(p.returncode, 0, f"corral -s exit status ({p.stderr})")
    rows = {line.split()[0]: line.split() for line in p.stdout.splitlines() if line.strip()}
    expect("redis" in rows and rows["redis"][1] == "up:", f"a Redis line:\n{p.stdout}")
    header = rows["route"]
    for name in ("requests", "hit%", "miss", "collapsed", "upstream", "wait-p99"):
        expect(name in header, f"column {name} in:\n{p.stdout}")
    col = {name: i for i, name in enumerate(header)}
    expect_eq((rows["/"][col["requests"]], rows["/"][col["hit"]], rows["/"][col["miss"]]),
              ("3", "2", "1"), "route / requests, hit, miss")
    expect_eq(rows["/"][col["hit%"]], "66.7%", "route / hit%")
    expect_eq(rows["total"][col["requests"]], "4", "total requests")
    expect("/reports/" in rows and "(none)" in rows, f"every route and (none):\n{p.stdout}")

    nobody = env.run_corral("-s", f"127.0.0.1:{free_port()}")
    expect_eq(nobody.returncode, 1, "corral -s with nothing listening")
    expect("no answer" in nobody.stderr, f"its message: {nobody.stderr!r}")


@scenario
def corral_s_sends_the_admin_token_from_the_environment_or_the_configuration(env):
    redis, origin = env.redis(), env.origin()
    token = "s-Tok3n-only-for-reading-0123"
    tokens = os.path.join(env.workdir, "tokens")
    with open(tokens, "w") as f:
        f.write(f"# for corral -s\n{token} read\n")
    os.chmod(tokens, 0o600)
    corral = env.corral(redis, origin, extra={"server": {"admin_token_file": tokens}},
                        admin_token=token)
    corral.get("/a")
    addr = f"{corral.admin_host}:{corral.admin_port}"

    p = env.run_corral("-s", addr, env={"CORRAL_ADMIN_TOKEN": ""})
    expect_eq(p.returncode, 1, "corral -s without a token")
    expect("wants an admin token: set CORRAL_ADMIN_TOKEN" in p.stderr,
           f"it says how to give one: {p.stderr!r}")
    for how, args, extra in (("from the environment", ("-s", addr), {"CORRAL_ADMIN_TOKEN": token}),
                             ("from -c's admin_token_file", ("-s", addr, "-c", corral.config_path),
                              {"CORRAL_ADMIN_TOKEN": ""})):
        p = env.run_corral(*args, env=extra)
        expect_eq(p.returncode, 0, f"corral -s with the token {how} ({p.stderr!r})")
        expect(p.stdout.startswith("corral ") and "\ntotal " in p.stdout,
               f"the table, with the token {how}:\n{p.stdout}")
        expect(token not in p.stdout + p.stderr, "the token is never printed")
    p = env.run_corral("-s", addr, env={"CORRAL_ADMIN_TOKEN": "not-a-token-of-the-file"})
    expect_eq(p.returncode, 1, "corral -s with a wrong token")
    expect("answered 401" in p.stderr, f"it says so: {p.stderr!r}")


# -- the dashboard ------------------------------------------------------------------

class Traffic:
    """Clients in a thread until stopped: hits, misses, and every round a
    cold key that three clients ask for at once (one fetches, two wait)."""

    def __init__(self, corral):
        self.corral, self.stop_ev, self.errors, self.rounds = corral, threading.Event(), [], 0
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        n = 0
        while not self.stop_ev.is_set() and n < 2000:	# bounded
            n += 1
            try:
                results = stampede(self.corral, 3, f"/slow/{n}", timeout=10)
                results += [self.corral.get(f"/page/{i}", timeout=10) for i in range(5)]
                bad = [r for r in results if r.status != 200]
                expect(not bad, f"round {n}: answers other than 200: {bad[:2]}")
                self.rounds += 1
            except Exception as e:	# noqa: BLE001 - reported by stop()
                self.errors.append(e)
                return

    def stop(self):
        self.stop_ev.set()
        self.thread.join(30)
        expect(not self.thread.is_alive(), "the traffic thread did not stop")
        expect(not self.errors, f"traffic failed: {self.errors[:1]}")
        expect(self.rounds > 0, "no traffic round completed")


@scenario(timeout=180)
def dashboard_in_headless_chromium_draws_live_charts(env):
    redis, origin = env.redis(), env.origin()
    origin.script("*", delay_ms=150)	# misses are slow; hits never reach it
    # Each round's cold key is JSON worth compressing: one encode per round.
    rows = ",".join(f'{{"id": {i}, "name": "user{i}", "active": true}}' for i in range(60))
    origin.script("/slow/*", delay_ms=150, body=f'{{"data": [{rows}]}}',
                  headers={"Content-Type": "application/json"})
    corral = env.corral(redis, origin, routes={"/page/": {}, "/slow/": {}})
    page = admin_get(corral, "/")
    expect_eq(page.status, 200, "GET / on the admin listener")
    expect(page.headers.get("Content-Type", "").startswith("text/html"), "HTML")
    absolute = re.findall(r"(?i)\b(?:https?:)?//[a-z0-9.-]+\.[a-z]{2,}", page.text)
    expect_eq(absolute, [], "absolute URLs in the dashboard: it must make no external request")

    traffic = Traffic(corral)
    url = f"{corral.admin_url}/?interval=250&span=30"
    shot = os.path.join(env.workdir, "dashboard.png")
    try:
        with Browser(env.workdir) as b:
            b.open(url)
            b.wait_for_js("Number(document.body.dataset.polls) >= 12", timeout=30,
                          what="12 polls of /stats")
            charts = ("requests", "upstream", "hitratio", "lockwait", "health", "latency",
                      "codings")
            expr = ("Object.fromEntries([...document.querySelectorAll('canvas')].map("
                    "c => [c.id, {points: Number(c.dataset.points), sum: Number(c.dataset.sum)}]))")
            drawn = b.wait_for_js(
                f"(() => {{ const d = {expr}; return {list(charts)!r}.every("
                "k => d['chart-' + k] && d['chart-' + k].points >= 2) && d; })()",
                timeout=30, what="data points in every chart")
            expect(drawn["chart-requests"]["sum"] > 0, f"requests/s drawn: {drawn}")
            expect(drawn["chart-upstream"]["sum"] > 0, f"upstream requests/s drawn: {drawn}")
            expect(drawn["chart-lockwait"]["sum"] > 0, f"lock-wait p99 drawn: {drawn}")
            b.wait_for_js("[...document.querySelectorAll('#legend-codings > span')].some("
                          "s => s.textContent.startsWith('compressed on store ') && "
                          "parseFloat(s.querySelector('b').textContent) > 0)",
                          timeout=30, what="bodies compressed on store, per second, drawn")
            saved = b.js("document.getElementById('codings-why').textContent")
            expect(re.search(r"[0-9.]+ bytes per identity byte", saved or ""),
                   f"what compression saves, above the codings chart: {saved!r}")
            tiles = b.js("({redis: document.getElementById('redis-state').textContent,"
                         " rps: document.getElementById('rps').textContent,"
                         " rows: document.querySelectorAll('#routes-body tr').length})")
            expect_eq(tiles["redis"], "UP", "the Redis tile")
            expect(tiles["rps"] not in ("", "\u2013", "0"), f"the requests/s tile: {tiles}")
            expect_eq(tiles["rows"], 4, "route table rows: /page/, /slow/, (none), total")
            b.screenshot(shot)
            seen = b.requests_seen()
    finally:
        traffic.stop()
    foreign = [u for u in seen if not u.startswith(corral.admin_url + "/")]
    expect_eq(foreign, [], "requests the page made to other origins")
    expect(any(u.endswith("/stats") for u in seen), f"the page polled /stats: {seen[:5]}")
    with open(shot, "rb") as f:
        expect(f.read(8) == b"\x89PNG\r\n\x1a\n", "the screenshot is a PNG")
    expect(os.path.getsize(shot) > 20_000, f"the screenshot has content: {os.path.getsize(shot)} B")
    print(f"dashboard screenshot: {shot} ({traffic.rounds} traffic rounds)")


def shown_seconds(text):
    """A duration as the dashboard writes it ("700 ms", "1.2 s"), in s."""
    m = re.fullmatch(r"([0-9.]+) (ms|s)", text)
    expect(m is not None, f"a duration on the page: {text!r}")
    return float(m.group(1)) / (1000 if m.group(2) == "ms" else 1)


def same(a, b):
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b), 1)


def bucket_rounded(h, v):
    """v rounded to the power of ten at or below the width of the bucket of
    histogram h (as /stats gives it) that v falls in: what may be shown."""
    bounds = sorted(float(k) for k in h["buckets"] if k != "+Inf")
    lo, i = 0.0, 0
    while i < len(bounds) - 1 and v > bounds[i]:
        lo, i = bounds[i], i + 1
    step = 10 ** math.floor(math.log10((bounds[i] - lo) * 1.000001))
    return math.floor(v / step + 0.5) * step


@scenario(timeout=180)
def dashboard_quantiles_in_headless_chromium_are_those_of_stats(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/slow/*", delay_ms=600)	# in (0.5, 0.75] s
    corral = env.corral(redis, origin, routes={"/fast/": {}, "/slow/": {}})
    with Browser(env.workdir) as b:
        # A window longer than the scenario: the page's figures cover every
        # request made after its first poll.
        b.open(f"{corral.admin_url}/?interval=250&window=600")
        b.wait_for_js("Number(document.body.dataset.polls) >= 2", timeout=30,
                      what="two polls of /stats before any request")
        for i in range(20):
            expect_eq(corral.get(f"/fast/{i}").status, 200, f"/fast/{i}")
        for i in range(2):
            expect_eq([r.status for r in stampede(corral, 3, f"/slow/{i}")], [200] * 3,
                      f"/slow/{i}")
        s = corral.stats()["total"]
        up, wait = s["upstream_duration"], s["lock_wait"]
        expect_eq(up["count"], 22, "upstream fetches: 20 fast, 2 slow")
        expect(wait["count"] >= 2, f"requests that waited for a slow fetch: {wait}")
        b.wait_for_js(f"samples.length > 0 && (t => t.upstream_duration.count === {up['count']}"
                      f" && t.lock_wait.count === {wait['count']})"
                      "(samples[samples.length - 1].s.total)", timeout=30,
                      what="the page to have polled the figures after the requests")
        shown = b.js("(() => { const row = [...document.querySelectorAll('#routes-body tr')]"
                     ".pop().children; return {up99: row[4].textContent,"
                     " wait99: row[5].textContent,"
                     " tile: document.getElementById('wait').textContent,"
                     " legend: [...document.querySelectorAll('#legend-lockwait b')]"
                     ".map(e => e.textContent)}; })()")
        # On screen: /stats' quantiles, each to its bucket's resolution.
        expect(same(shown_seconds(shown["up99"]), bucket_rounded(up, up["p99_s"])),
               f"upstream p99 in the table (/stats p99_s {up['p99_s']}): {shown}")
        expect(0.5 <= shown_seconds(shown["up99"]) <= 0.75,
               f"the slow fetches' p99 is in their bucket: {shown}")
        expect(same(shown_seconds(shown["wait99"]), bucket_rounded(wait, wait["p99_s"])),
               f"lock wait p99 in the table (/stats {wait['p99_s']}): {shown}")
        expect_eq(shown["tile"], shown["wait99"], "the lock wait tile and the table")
        p99, p50 = (shown_seconds(t) for t in shown["legend"])
        expect(same(p99, bucket_rounded(wait, wait["p99_s"])) and
               same(p50, bucket_rounded(wait, wait["p50_s"])),
               f"lock wait p99 and p50 in the chart's legend (/stats {wait}): {shown}")
        # The page's own reading of the histograms it polled, unrounded.
        page = b.js("(() => { const s = samples[samples.length - 1].s; return ["
                    "s.total.upstream_duration, s.total.lock_wait, s.redis.command_duration]"
                    ".map(h => ({h, q: [0.5, 0.9, 0.99].map(q => histQuantile(h, null, q))})); })()")
        for (got, name) in zip(page, ("upstream_duration", "lock_wait", "redis.command_duration")):
            want = [got["h"][f"p{p}_s"] for p in (50, 90, 99)]
            expect(all(abs(a - w) <= 1e-5 * max(w, 1e-6) for a, w in zip(got["q"], want)),
                   f"{name}: the page's p50, p90, p99 {got['q']} and /stats' {want}")
            expect(got["q"][0] <= got["q"][1] <= got["q"][2], f"{name}: in order: {got['q']}")
# -- /metrics and /stats: one figure, one value --------------------------------------

# Per-route counter families: the /stats counter of each (by the label
# that tells its series apart, when one does; a tuple is summed).
ROUTE_COUNTERS = {
    "corral_requests_total": ("cache", {
        "hit": "hits", "stale": "stale_hits", "miss": "misses", "collapsed": "collapsed",
        "bypass": "bypass", "error": ("errors", "rejected")}),
    "corral_upstream_requests_total": ("code", {
        "2xx": "upstream_2xx", "3xx": "upstream_3xx", "4xx": "upstream_4xx",
        "5xx": "upstream_5xx", "timeout": "upstream_timeouts", "error": "upstream_failures"}),
    "corral_cache_stores_total": "stores",
    "corral_tags_dropped_total": "tags_dropped",
    "corral_variants_refused_total": "variants_refused",
    "corral_not_modified_total": "not_modified",
    "corral_invalidations_total": "invalidations",
    "corral_early_refresh_total": "early_refreshes",
    "corral_revalidations_total": "revalidated",
    "corral_stale_if_error_total": "stale_if_error",
    "corral_lock_acquired_total": "locks_acquired",
    "corral_lock_busy_total": "lock_busy",
    "corral_lock_renewed_total": "lock_renewals",
    "corral_lock_lost_total": "lock_lost",
    "corral_lock_wait_timeouts_total": "lock_wait_timeouts",
    "corral_lock_takeovers_total": "lock_takeovers",
    "corral_backoff_skips_total": "backoff_skips",
    "corral_hit_for_miss_total": "hit_for_miss",
    "corral_peer_streams_total": ("result", {"streamed": "peer_streams",
                                             "none": "peer_fallbacks"}),
    "corral_sibling_fills_total": "sibling_fills",
    "corral_stream_laggards_total": ("result", {"detached": "stream_detached",
                                                "cut": "stream_cut_slow"}),
    "corral_origin_slots_granted_total": "slot_grants",
    "corral_origin_slot_waits_total": "slot_waits",
    "corral_origin_slots_local_total": "slot_local",
    "corral_origin_slot_leases_lost_total": "slot_lost",
    "corral_origin_sheds_total": ("reason", {"stale": "shed_stale", "busy": "shed_busy",
                                             "refresh": "shed_refresh",
                                             "unwanted": "shed_unwanted"}),
    "corral_clients_gone_total": "client_gone",
    "corral_key_rule_hits_total": ("rule", {r: f"key_{f}_hits" for r, f in (
        ("query-rules", "query"), ("headers", "headers"), ("post", "post"),
        ("graphql", "graphql"), ("credential", "credential"), ("claims", "claims"))}),
    "corral_key_rule_stores_total": ("rule", {r: f"key_{f}_stores" for r, f in (
        ("query-rules", "query"), ("headers", "headers"), ("post", "post"),
        ("graphql", "graphql"), ("credential", "credential"), ("claims", "claims"))}),
    "corral_post_passed_total": "post_passed",
    "corral_jwt_verifications_total": ("result", {
        "verified": "jwt_verified", "missing": "jwt_missing", "malformed": "jwt_malformed",
        "alg_refused": "jwt_alg_refused", "key_unknown": "jwt_key_unknown",
        "bad_signature": "jwt_bad_signature", "expired": "jwt_expired",
        "not_yet_valid": "jwt_not_yet_valid", "claims_refused": "jwt_claims_refused",
        "error": "jwt_errors"}),
    "corral_jwt_refusals_total": ("action", {"rejected": "jwt_rejected",
                                             "passed": "jwt_passed"}),
    "corral_jwt_refreshes_expired_total": "jwt_refresh_expired",
    "corral_jwt_key_loads_total": ("result", {"ok": "jwt_keys_reloads",
                                              "error": "jwt_keys_reload_errors"}),
    "corral_coding_total": ("op", {"encoded": "coding_encoded", "decoded": "coding_decoded",
                                   "refused": "coding_refused",
                                   "not_acceptable": "coding_406"}),
    "corral_coded_bytes_total": ("as", {"stored": "coded_stored_bytes",
                                        "identity": "coded_plain_bytes"}),
}
ROUTE_HISTOGRAMS = {
    "corral_upstream_duration_seconds": "upstream_duration",
    "corral_lock_wait_seconds": "lock_wait",
    "corral_origin_slot_wait_seconds": "slot_wait",
    "corral_fill_wake_seconds": "fill_wake",
    "corral_rush_seconds": "rush",
}
# Families of one series and no label: where /stats keeps the figure.
PLAIN = {
    "corral_workers": ("workers",),
    "corral_connections": ("connections",),
    "corral_admin_connections": ("admin", "connections"),
    "corral_admin_connections_refused_total": ("admin", "refused"),
    "corral_requests_in_progress": ("in_progress", "requests"),
    "corral_flights": ("in_progress", "flights"),
    "corral_refreshes_in_progress": ("in_progress", "refreshes"),
    "corral_upstream_requests_in_progress": ("in_progress", "upstream_fetches"),
    "corral_decoded_bytes_queued": ("in_progress", "decoded_bytes"),
    "corral_decoded_bytes_kept": ("in_progress", "decoded_kept_bytes"),
    "corral_decoding": ("in_progress", "decoding"),
    "corral_near_cache_bytes": ("near_cache", "bytes"),
    "corral_near_cache_entries": ("near_cache", "entries"),
    "corral_near_cache_rejected_total": ("near_cache", "rejected"),
    "corral_body_files": ("near_cache", "body_files"),
    "corral_body_file_bytes": ("near_cache", "body_file_bytes"),
    "corral_shared_cache_bytes": ("shared_cache", "bytes"),
    "corral_shared_cache_entries": ("shared_cache", "entries"),
    "corral_shared_cache_hits_total": ("shared_cache", "hits"),
    "corral_shared_cache_misses_total": ("shared_cache", "misses"),
    "corral_shared_cache_stores_total": ("shared_cache", "stores"),
    "corral_shared_cache_evictions_total": ("shared_cache", "evictions"),
    "corral_shared_cache_resets_total": ("shared_cache", "resets"),
    "corral_shared_cache_lock_busy_total": ("shared_cache", "lock_busy"),
    "corral_redis_commands_total": ("redis", "commands"),
    "corral_redis_errors_total": ("redis", "errors"),
    "corral_redis_timeouts_total": ("redis", "timeouts"),
    "corral_redis_connects_total": ("redis", "connects"),
    "corral_redis_disconnects_total": ("redis", "disconnects"),
    "corral_redis_auth_failures_total": ("redis", "auth_failures"),
    "corral_redis_oom_total": ("redis", "oom"),
    "corral_redis_fill_notifications_total": ("redis", "fills_received"),
    "corral_redis_purge_notifications_total": ("redis", "purges_received"),
    "corral_redis_map_refreshes_total": ("redis", "map_refreshes"),
    "corral_redis_replica_reads_total": ("redis", "replica_reads"),
    "corral_tag_set_members_max": ("tags", "largest_set"),
    "corral_tag_members_pruned_total": ("tags", "pruned"),
    "corral_origin_local_share": ("origin_budget", "local_share"),
    "corral_origin_fleet_instances": ("origin_budget", "instances"),
    "corral_origin_max_requests": ("origin_budget", "max_requests"),
}
PLAIN_HISTOGRAMS = {
    "corral_redis_command_duration_seconds": ("redis", "command_duration"),
    "corral_redis_fill_delay_seconds": ("redis", "fill_delay"),
}
# Per-server families: the figure of /stats "upstreams".
SERVER = {
    "corral_upstream_server_in_flight": "in_flight",
    "corral_upstream_server_requests_total": "requests",
    "corral_upstream_server_failures_total": "failures",
    "corral_upstream_server_retries_total": "retries",
    "corral_upstream_server_taken_out_total": "taken_out",
}


def dig(s, path):
    for k in path:
        s = s[k]
    return s


def histogram_figure(h, suffix, labels):
    """The /stats histogram h's figure for one series of a family."""
    if suffix == "_count":
        return h["count"]
    if suffix == "_sum":
        return h["sum_s"]
    le, total = labels["le"], 0	# a bucket of /metrics counts those below it too
    for bound, n in h["buckets"].items():
        if le == "+Inf" or (bound != "+Inf" and float(bound) <= float(le)):
            total += n
    return total


def split_histogram(name):
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix):
            return name[:-len(suffix)], suffix
    return name, None


def stats_figure(s, name, labels):
    """The /stats figure of one /metrics series; KeyError if none is known
    for it (a family this test does not know: add it)."""
    labels = dict(labels)
    base, suffix = split_histogram(name)
    scope = None
    if "route" in labels:
        route = labels.pop("route")
        scope = s["unrouted"] if route == "(none)" else s["routes"][route]
    if scope is not None and base in ROUTE_HISTOGRAMS and suffix:
        return histogram_figure(scope[ROUTE_HISTOGRAMS[base]], suffix, labels)
    if scope is not None:
        rule = ROUTE_COUNTERS[name]
        if isinstance(rule, tuple):
            label, fields = rule
            rule = fields[labels[label]]
        return sum(scope[f] for f in (rule if isinstance(rule, tuple) else (rule,)))
    if base in PLAIN_HISTOGRAMS and suffix:
        return histogram_figure(dig(s, PLAIN_HISTOGRAMS[base]), suffix, labels)
    if name in SERVER or name in ("corral_upstream_server_up",
                                  "corral_upstream_health_checks_total"):
        pool = "" if labels["pool"] == "default" else labels["pool"]
        row, = [u for u in s["upstreams"] if u["pool"] == pool and
                u["server"] == labels["server"]]
        if name == "corral_upstream_server_up":
            return int(row["state"] == "up")
        if name == "corral_upstream_health_checks_total":
            return row["health_ok" if labels["result"] == "ok" else "health_failed"]
        return row[SERVER[name]]
    if name in ("corral_origin_slots_in_use", "corral_origin_queue_length"):
        field = "slots_in_use" if name == "corral_origin_slots_in_use" else "queue_length"
        return s["origin_budget"][field if labels["scope"] == "instance" else f"fleet_{field}"]
    if name == "corral_origin_queue_oldest_seconds":	# /stats keeps it in ms
        b = s["origin_budget"]
        return b["queue_oldest_ms"] / 1000 if labels.get("upstream") == b["upstream"] else None
    if name in PLAIN:
        value = dig(s, PLAIN[name])
        if name.startswith("corral_origin_"):	# labelled with the upstream
            value = value if labels.get("upstream") == s["origin_budget"]["upstream"] else None
        return value
    if name == "corral_build_info":
        return int(labels["version"] == s["version"])
    if name == "corral_redis_mode":
        return int(labels["mode"] == s["redis"]["mode"])
    if name in ("corral_redis_up", "corral_redis_full"):
        return int(s["redis"][name.rsplit("_", 1)[1]])
    if name == "corral_restart_pending":
        return len(s["restart_pending"])
    if name in ("corral_redis_node_up", "corral_redis_node_slots"):
        node, = [n for n in s["redis"]["nodes"] if n["address"] == labels["node"]]
        return int(node["up"]) if name.endswith("_up") else node["slots"]
    if name == "corral_redis_redirects_total":
        return s["redis"][labels["kind"]]
    if name == "corral_upstream_rejected_total":
        return s["upstream"]["too_many_headers" if labels["reason"] == "headers"
                             else "bad_framing"]
    raise KeyError(name)


def expected_from(s, m):
    """{(name, labels): the /stats figure} of every /metrics series but the
    start time; the series none is known for under None."""
    want = {}
    for (name, labels) in m.samples:
        if name == "corral_start_time_seconds":
            continue
        try:
            want[(name, labels)] = stats_figure(s, name, labels)
        except KeyError:
            want[(name, labels)] = KeyError
    return want


def quiet_reading(corral):
    """/stats and /metrics read while no figure moved: a /metrics between
    two /stats that agree on every figure it shows (health checks and the
    budget's hellos run meanwhile: a reading they moved is taken again)."""
    def attempt():
        t0 = time.time()
        s1 = corral.stats()
        m = metrics(corral)
        s2 = corral.stats()
        want = expected_from(s1, m)
        return want == expected_from(s2, m) and (s1, m, want, t0, time.time())
    return wait_for(attempt, timeout=30, what="a reading of /stats, /metrics and /stats "
                                              "in which no figure moved")


@scenario
def every_metrics_figure_is_the_same_figure_in_stats(env):
    """After a known workload, every series of /metrics (counters, gauges,
    histograms' buckets, sums and counts, by route, server and node) has
    the value /stats gives the same figure; a family /stats has no figure
    for fails the test until it is mapped here."""
    redis, a, b = env.redis(), env.origin(), env.origin()
    for o in (a, b):
        o.script("*", body="{path} v{n}")
        o.script("/c/e", status=503)
        o.script("/c/nf", status=404)
        o.script("/c/moved", status=301, headers={"Location": "/c/a"})
        o.script("/c/text", body="{path} " * 300)	# compressed on store
    a.script("/ping", body="ok")
    b.script("/ping", status=503)	# b fails its health checks: out
    routes = {"/c/": {"ttl": "1s", "stale_while_revalidate": "60s", "key_query": "id"}}
    up = {"url": f"{a.url}, {b.url}", "health_path": "/ping", "health_interval": "300ms",
          "max_requests": "4", "timeout": "10s", "connect_timeout": "1s"}
    corral = env.corral(redis, a, routes=routes, extra={"upstream": up})
    wait_for(lambda: [u["state"] for u in corral.stats()["upstreams"]] == ["up", "down"],
             timeout=slow(10), what="b out by its health checks, a in")

    for path, method in (("/c/a?id=1", "GET"), ("/c/a?id=1&x=2", "GET"), ("/c/p", "POST"),
                         ("/free", "GET"), ("/c/e", "GET"), ("/c/nf", "GET"),
                         ("/c/moved", "GET"), ("/c/a?id=2", "GET"), ("/c/text", "GET")):
        corral.get(path, method=method)
    a.script("/c/held", hold=True)
    first = Background(corral.get, "/c/held")
    wait_for(lambda: a.held("/c/held") == 1, what="the fetch of /c/held")
    second = Background(corral.get, "/c/held")
    wait_for(lambda: corral.stats()["in_progress"]["requests"] == 2,
             what="the second request to join the flight")
    a.release("/c/held")
    expect_eq(sorted(r.result().status for r in (first, second)), [200, 200], "/c/held")
    r = raw_exchange(corral.host, corral.port,
                     f"GET /c/x HTTP/1.1\r\nHost: {HOST}\r\nHost: x\r\n\r\n".encode())
    expect_eq(r.status, 400, "a request with two Host lines")
    wait_until_stale(redis, "/c/a?id=1", swr_ms=60_000, by_ms=50)
    expect(corral.get("/c/a?id=1").cache_status.stale, "a stale hit")
    wait_for(lambda: a.count("/c/a?id=1") == 2 and
             corral.stats()["in_progress"]["refreshes"] == 0, what="its refresh done")
    expect_eq(corral.purge(url=f"http://{HOST}/c/a?id=2").status, 200, "a purge")

    s, m, want, t0, t1 = quiet_reading(corral)
    unknown = sorted({name for (name, _), v in want.items() if v is KeyError})
    expect_eq(unknown, [], "/metrics families with no /stats figure known to this test")
    wrong = [f"{name}{dict(labels)}: /metrics {m.samples[(name, labels)]}, /stats {v}"
             for (name, labels), v in sorted(want.items())
             if v is None or abs(m.samples[(name, labels)] - v) > 1e-6 * max(1, abs(v))]
    expect_eq(wrong, [], "series whose /metrics value is not the /stats figure")
    start = m.value("corral_start_time_seconds")
    expect(t0 - start - 1 <= s["uptime_s"] <= t1 - start + 0.01,
           f"corral_start_time_seconds {start}: uptime_s {s['uptime_s']} between "
           f"{t0 - start:.2f} - 1 and {t1 - start:.2f}")

    # The workload moved what it should: the comparison is not of zeros.
    route, total = s["routes"]["/c/"], s["total"]
    moved = {"hits": route["hits"], "stale": route["stale_hits"], "misses": route["misses"],
             "collapsed": route["collapsed"], "bypass": route["bypass"],
             "rejected": total["rejected"], "4xx": route["upstream_4xx"],
             "5xx": route["upstream_5xx"], "3xx": route["upstream_3xx"],
             "key rule hits": route["key_query_hits"], "slot grants": total["slot_grants"],
             "purges heard": s["redis"]["purges_received"],
             "compressed on store": route["coding_encoded"],
             "coded bytes stored": route["coded_stored_bytes"]}
    expect(all(moved.values()), f"figures the workload moves: {moved}")
    rows = {u["server"]: u for u in s["upstreams"]}
    expect(rows[a.url]["health_ok"] > rows[a.url]["health_failed"] == 0 and
           rows[b.url]["health_failed"] > rows[b.url]["health_ok"] == 0,
           f"health checks passed by a, failed by b: {rows}")
    # Each counter's series over the routes and (none) add up to /stats total.
    for name, rule in ROUTE_COUNTERS.items():
        series = [(lbl, v) for (n, lbl), v in m.samples.items() if n == name]
        for label_value in ({dict(lbl).get(rule[0]) for lbl, _ in series}
                            if isinstance(rule, tuple) else {None}):
            got = sum(v for lbl, v in series if dict(lbl).get(rule[0] if isinstance(
                rule, tuple) else "") == label_value)
            field = rule[1][label_value] if isinstance(rule, tuple) else rule
            want_total = sum(total[f] for f in (field if isinstance(field, tuple)
                                                else (field,)))
            expect_eq(got, want_total, f"{name} {label_value or ''} summed over routes")
