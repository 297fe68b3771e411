# SPDX-License-Identifier: MIT
"""The upstream side: what Corral never sends twice, and what it refuses
to take from an upstream. A request that is not idempotent reaches the
upstream at most once; a response whose framing the next hop could read
differently, or with more header lines than [upstream]
max_upstream_headers, is an upstream failure (502, or the stale entry
under stale_if_error) and is never stored; a Redis that refuses Corral's
password shows as down, with the reason, in /health and /stats.
"""

import re

from harness import (Background, entry_key, expect, expect_entry, expect_eq,
                     expect_no_entries, get_request, http_request, raw_exchange,
                     scenario, wait_for, wait_until_stale)

POOLED = 3		# idle upstream connections made before the unsafe request
ORIGIN_OWN_HEADERS = 5	# Server, Date, X-Origin-Count, Content-Type, Content-Length
DEFAULT_MAX_HEADERS = 100


def admin_get(corral, path):
    return http_request(corral.admin_host, corral.admin_port, path,
                        headers={"Host": f"{corral.admin_host}:{corral.admin_port}"},
                        timeout=10)


def metric(corral, name, labels=""):
    """One sample of /metrics, e.g. metric(c, "corral_x_total", 'reason="a"')."""
    text = admin_get(corral, "/metrics").text
    want = f"{name}{{{labels}}}" if labels else name
    for line in text.splitlines():
        sample, _, value = line.rpartition(" ")
        if sample == want:
            return float(value)
    raise AssertionError(f"/metrics has no {want}")


def expect_upstream_error(r, what):
    cs = r.cache_status
    expect_eq((r.status, cs.fwd, cs.detail), (502, "miss", "upstream-error"),
              f"{what}: status, fwd, detail ({cs.raw!r})")


def fill_connection_pool(corral, origin, n):
    """Leaves n idle keep-alive connections to the origin in corral's pool:
    n GETs of different paths, held by the origin until all have arrived."""
    paths = [f"/warm/{i}" for i in range(n)]
    for p in paths:
        origin.script(p, hold=True)
    clients = [Background(corral.get, p) for p in paths]
    wait_for(lambda: all(origin.count(p) == 1 for p in paths),
             what=f"{n} held GETs at the origin at once")
    for p in paths:
        origin.release(p)
    for c in clients:
        expect_eq(c.result().status, 200, "warming GET")


# -- requests that are not idempotent -----------------------------------------------

@scenario
def unanswered_post_and_patch_reach_the_upstream_once_and_get_502(env):
    # The origin reads each request and closes without a word. A GET on a
    # reused connection may be retried (nothing was processed as far as
    # HTTP can tell), but a POST or PATCH may have been acted on: sending
    # it again could charge a card twice.
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin)
    for method in ("POST", "PATCH"):
        fill_connection_pool(corral, origin, POOLED)
        path = f"/orders/{method.lower()}"
        origin.script(path, drop=True)
        r = corral.get(path, method=method, body=b"amount=10")
        cs = r.cache_status
        expect_eq((r.status, cs.fwd, cs.detail), (502, "method", "upstream-error"),
                  f"{method}: status, fwd, detail ({cs.raw!r})")
        expect_eq(origin.count(path), 1, f"{method}s the origin received")
    expect_eq(corral.counters()["upstream_failures"], 2, "upstream_failures")


# -- framing ---------------------------------------------------------------------------

BODY = "hello world!"
CHUNKED = "5\r\nhello\r\n0\r\n\r\n"
MISFRAMED = {
    # path: (headers, body as sent)
    "/two-lengths": ([["Content-Length", "5"], ["Content-Length", "12"]], BODY),
    "/same-length-twice": ([["Content-Length", "12"], ["Content-Length", "12"]], BODY),
    "/chunked-and-length": ([["Transfer-Encoding", "chunked"], ["Content-Length", "5"]],
                            CHUNKED),
    "/length-not-a-number": ([["Content-Length", "12abc"]], BODY),
    "/length-signed": ([["Content-Length", "+12"]], BODY),
}


@scenario
def misframed_upstream_answers_are_502_and_never_stored(env):
    redis, origin = env.redis(), env.origin()
    for path, (headers, body) in MISFRAMED.items():
        origin.script(path, headers=headers, body=body)
    origin.script("/fine", headers=[["Content-Length", "12"]], body=BODY)
    corral = env.corral(redis, origin)

    for path in MISFRAMED:
        expect_upstream_error(corral.get(path), path)
    expect_no_entries(redis, "misframed answers")
    r = corral.get("/fine")
    expect_eq((r.status, r.text, r.cache_status.stored), (200, BODY, True),
              "one well-formed Content-Length set by the origin")
    stats = corral.stats()
    expect_eq(stats["total"]["upstream_failures"], len(MISFRAMED), "upstream_failures")
    expect_eq(stats["upstream"]["bad_framing"], len(MISFRAMED), "/stats upstream.bad_framing")
    expect_eq(metric(corral, "corral_upstream_rejected_total", 'reason="framing"'),
              len(MISFRAMED), "corral_upstream_rejected_total{reason=framing}")
    expect("framing" in corral.log(), "the error log names the framing problem")


@scenario
def misframed_refresh_serves_the_stale_entry_under_stale_if_error(env):
    sie = {"ttl": "1s", "stale_while_revalidate": "0", "stale_if_error": "60s",
           "error_backoff": "0"}
    redis, origin = env.redis(), env.origin()
    origin.script("/a", body="v{n}")
    corral = env.corral(redis, origin, routes={"/": sie})
    r = corral.get("/a")
    expect_eq((r.status, r.text, r.cache_status.stored), (200, "v1", True), "prime /a")
    stored = expect_entry(redis, "/a")
    wait_until_stale(redis, "/a", swr_ms=60_000)

    origin.script("/a", headers=MISFRAMED["/two-lengths"][0], body=BODY)
    r = corral.get("/a")
    cs = r.cache_status
    expect_eq((r.status, r.text, cs.fwd, cs.detail), (200, "v1", "stale", "stale-if-error"),
              f"the stale entry instead of the misframed answer ({cs.raw!r})")
    expect_eq(redis.cmd_bytes("GET", entry_key("/a")), stored, "the stored entry is untouched")


# -- header lines ------------------------------------------------------------------------

def numbered_headers(n):
    return [[f"X-Filler-{i}", str(i)] for i in range(n)]


def get_raw(corral, path):
    """A GET read off the socket: http.client refuses over 100 header lines."""
    return raw_exchange(corral.host, corral.port,
                        get_request(path, extra=b"Connection: close\r\n"))


@scenario
def upstream_header_lines_over_max_upstream_headers_are_502_counted_and_logged(env):
    redis, origin = env.redis(), env.origin()
    at_limit = DEFAULT_MAX_HEADERS - ORIGIN_OWN_HEADERS
    origin.script("/many", headers=numbered_headers(150))
    origin.script("/at-limit", headers=numbered_headers(at_limit))
    origin.script("/over-limit", headers=numbered_headers(at_limit + 1))
    corral = env.corral(redis, origin)

    for path in ("/many", "/over-limit"):
        expect_upstream_error(get_raw(corral, path), f"{path} (default limit)")
    expect_no_entries(redis, "answers over the header limit")
    r = get_raw(corral, "/at-limit")
    expect_eq((r.status, r.cache_status.stored), (200, True),
              f"{DEFAULT_MAX_HEADERS} header lines: served and stored")
    expect_eq(r.headers.get(f"x-filler-{at_limit - 1}"), str(at_limit - 1),
              "headers passed through")
    expect_eq(corral.stats()["upstream"]["too_many_headers"], 2,
              "/stats upstream.too_many_headers")
    expect_eq(metric(corral, "corral_upstream_rejected_total", 'reason="headers"'), 2,
              "corral_upstream_rejected_total{reason=headers}")
    expect(re.search(r"more than 100 header lines", corral.log()) is not None,
           "the error log says the header limit was hit")

    # The key lowers the limit: 35 lines, fine by default, are now too many.
    origin.script("/thirty", headers=numbered_headers(30))
    strict = env.corral(redis, origin, extra={"upstream": {"max_upstream_headers": "20"}})
    expect_upstream_error(get_raw(strict, "/thirty"), "35 lines with max_upstream_headers 20")
    expect_eq(strict.stats()["upstream"]["too_many_headers"], 1,
              "too_many_headers with max_upstream_headers 20")


# -- Redis authentication ------------------------------------------------------------------

SECRET = "pw-7f3a9c"	# the Redis password corral is given: shown nowhere


@scenario
def wrong_redis_password_reports_down_with_the_reason_until_it_is_accepted(env):
    redis, origin = env.redis(), env.origin()
    redis.cmd("CONFIG", "SET", "requirepass", "right")
    corral = env.corral(redis, origin, extra={"redis": {"password": SECRET}},
                        wait_redis=False)

    wait_for(lambda: corral.stats()["redis"]["auth_failures"] >= 1,
             what="an authentication failure counted in /stats")
    redis_stats = corral.stats()["redis"]
    expect_eq(redis_stats["up"], False, "/stats redis.up with a wrong password")
    expect("WRONGPASS" in redis_stats["down_reason"],
           f"/stats redis.down_reason names the refusal: {redis_stats['down_reason']!r}")
    health = admin_get(corral, "/health").text.strip()
    expect(health.startswith("ok redis=down") and "WRONGPASS" in health,
           f"/health says down and why: {health!r}")
    expect_eq(metric(corral, "corral_redis_up"), 0, "corral_redis_up")
    expect(metric(corral, "corral_redis_auth_failures_total") >= 1,
           "corral_redis_auth_failures_total moved")
    r = corral.get("/x")
    expect_eq((r.status, r.cache_status.detail), (200, "cache-unavailable"),
              f"served without the cache ({r.cache_status.raw!r})")
    expect_eq(corral.stats()["redis"]["errors"], 0,
              "no command was sent on the unauthenticated connection")

    # No password at all: Redis answers the set-up PING with NOAUTH.
    bare = env.corral(redis, origin, wait_redis=False)
    wait_for(lambda: "NOAUTH" in bare.stats()["redis"]["down_reason"],
             what="NOAUTH as the reason Redis is down without a password")
    expect(bare.stats()["redis"]["auth_failures"] >= 1, "NOAUTH counted as an auth failure")

    # Redis now takes that password: the next reconnect succeeds.
    redis.cmd("CONFIG", "SET", "requirepass", SECRET)
    wait_for(lambda: corral.stats()["redis"]["up"] is True, timeout=15,
             what="redis up once the password is accepted")
    expect_eq(corral.stats()["redis"]["down_reason"], "", "down_reason once up")
    health = admin_get(corral, "/health").text.strip()
    expect(health.startswith("ok redis=up mode=single "), f"/health once up: {health!r}")
    # The password shows nowhere: not in a log, /stats, /health or /metrics.
    shown = {"the log": corral.log(), "/stats": admin_get(corral, "/stats").text,
             "/health": health, "/metrics": admin_get(corral, "/metrics").text}
    expect_eq([where for where, text in shown.items() if SECRET in text], [],
              "where the Redis password shows")
