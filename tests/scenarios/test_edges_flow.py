# SPDX-License-Identifier: MIT
"""The request flow's edges: what a client may not decide for the origin
(X-Forwarded-*, the target's dot segments, an absolute-form target's
host), and work that outlives the configuration or the process it began
in (a reload that removes a route mid-fetch, a stop past its deadline)."""

import http.client
import re
import signal
import socket
import time

from harness import (Background, CacheStatus, corral_config, expect, expect_eq, free_port,
                     raw_exchange, scenario, slow, wait_for, wait_until_stale, HOST)
from origin import sized_body


def origin_headers(origin, path):
    """The headers of the last request of path that reached the origin,
    with lower-cased names; a name sent on several lines has its values
    joined by " | ", so that a second line shows."""
    seen = {}
    for name, value in origin.path_stats(path)["header_lines"]:
        name = name.lower()
        seen[name] = f"{seen[name]} | {value}" if name in seen else value
    return seen


@scenario
def client_forwarded_headers_are_replaced_by_corrals_own(env):
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin)
    spoof = {"Host": HOST, "X-Forwarded-For": "203.0.113.9",
             "X-Forwarded-Host": "evil.example", "X-Forwarded-Proto": "https"}
    expect_eq(corral.get("/xf/1", spoof).status, 200, "the spoofing request")
    seen = origin_headers(origin, "/xf/1")
    expect_eq(seen.get("x-forwarded-for"), "127.0.0.1", "X-Forwarded-For at the origin")
    expect_eq(seen.get("x-forwarded-host"), HOST, "X-Forwarded-Host at the origin")
    expect_eq(seen.get("x-forwarded-proto"), "http", "X-Forwarded-Proto at the origin")
    # The same through the pass-through path (a POST is never cached).
    expect_eq(corral.get("/xf/2", spoof, method="POST", body=b"x").status, 200,
              "the spoofing POST")
    seen = origin_headers(origin, "/xf/2")
    expect_eq((seen.get("x-forwarded-for"), seen.get("x-forwarded-host")),
              ("127.0.0.1", HOST), "X-Forwarded-For and -Host of a passed-through POST")
    # A clean client later gets the entry the spoofing one made: it must not
    # have been made for evil.example.
    r = corral.get("/xf/1", {"Host": HOST})
    expect(r.cache_status.hit, f"the clean client's hit: {r.cache_status.raw!r}")
    expect_eq(origin.count("/xf/1"), 1, "origin fetches of /xf/1")


@scenario
def trusted_proxies_keep_and_extend_forwarded_headers(env):
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin,
                        extra={"server": {"trusted_proxies": "10.0.0.0/8, 127.0.0.0/8"}})
    fwd = {"Host": HOST, "X-Forwarded-For": "203.0.113.9",
           "X-Forwarded-Host": "www.example", "X-Forwarded-Proto": "https",
           "Forwarded": "for=203.0.113.9;host=www.example;proto=https"}
    expect_eq(corral.get("/xf/t", fwd).status, 200, "the request through a trusted proxy")
    seen = origin_headers(origin, "/xf/t")
    expect_eq(seen.get("x-forwarded-for"), "203.0.113.9, 127.0.0.1",
              "X-Forwarded-For: the proxy's value, then the peer")
    expect_eq(seen.get("x-forwarded-proto"), "https", "X-Forwarded-Proto kept")
    # A host the key does not hold is no one's to pass on, not even a
    # trusted proxy's: the keyed Host goes, and Forwarded loses host=.
    expect_eq(seen.get("x-forwarded-host"), HOST, "X-Forwarded-Host: the keyed host")
    expect_eq(seen.get("forwarded"), "for=203.0.113.9;proto=https",
              "Forwarded kept without its host pair")


@scenario
def trusted_proxies_off_a_byte_boundary_cover_their_prefix_only(env):
    # 127.16.0.0/12 is 127.16.0.0 to 127.31.255.255 (the loopback answers
    # every 127/8 source): a peer inside keeps the client's X-Forwarded-For,
    # peers just outside (above, below, and sharing the byte's low bits) do not.
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, extra={"server": {"trusted_proxies": "127.16.0.0/12"}})
    for peer, trusted in (("127.31.0.5", True), ("127.32.0.5", False),
                          ("127.15.0.5", False), ("127.0.0.1", False)):
        path = f"/xf/{peer}"
        conn = http.client.HTTPConnection(corral.host, corral.port, timeout=10,
                                          source_address=(peer, 0))
        try:
            conn.request("GET", path, headers={"Host": HOST, "X-Forwarded-For": "203.0.113.9"})
            expect_eq(conn.getresponse().status, 200, f"the request from {peer}")
        finally:
            conn.close()
        want = f"203.0.113.9, {peer}" if trusted else peer
        expect_eq(origin_headers(origin, path).get("x-forwarded-for"), want,
                  f"X-Forwarded-For from {peer} ({'' if trusted else 'not '}trusted)")


@scenario
def a_bad_trusted_proxies_entry_is_a_config_error(env):
    text = corral_config("127.0.0.1:6379", "http://127.0.0.1:9", free_port(), free_port(),
                         extra={"server": {"trusted_proxies":
                                           "10.0.0.0/8, 10.1.2.3/40, bogus, ::1/128"}})
    path = env.config_file(text, "proxies.conf")
    p = env.run_corral("-t", "-c", path)
    expect_eq(p.returncode, 1, f"exit status of corral -t (stderr: {p.stderr!r})")
    line = next(n for n, l in enumerate(text.splitlines(), 1) if "trusted_proxies" in l)
    for want in ("10.1.2.3/40", "bogus"):
        expect(re.search(re.escape(f"{path}:{line}:") + ".*" + re.escape(want), p.stderr),
               f"a {path}:{line}: error naming {want!r}: {p.stderr!r}")
    expect("::1/128" not in p.stderr, f"::1/128 is valid: {p.stderr!r}")


@scenario
def dot_segments_are_removed_before_routing_and_keying(env):
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, routes={"/ok/": {"ttl": "1h"}})
    # /status/ has no route: what resolves there is never cached.
    for target in ("/ok/../status/x", "/ok/%2e%2e/status/x", "/ok/./../status/x"):
        r = raw_exchange(corral.host, corral.port,
                         f"GET {target} HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\n\r\n"
                         .encode())
        expect_eq(r.status, 200, f"GET {target}")
        expect_eq(r.cache_status.fwd, "bypass", f"GET {target} is not cached under /ok/")
    expect_eq(origin.count("/status/x"), 3, "the origin saw the resolved path each time")
    expect_eq(origin.count("/ok/../status/x"), 0, "the origin never saw the dot segments")
    expect_eq(redis.entry_keys(), [], "nothing stored")
    r = raw_exchange(corral.host, corral.port,
                     f"GET /ok/a/./b/../c HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\n\r\n"
                     .encode())
    expect_eq((r.status, r.cache_status.stored), (200, True), "/ok/a/./b/../c is /ok/a/c")
    expect_eq(origin.count("/ok/a/c"), 1, "the origin saw /ok/a/c")
    r = corral.get("/ok/a/c", {"Host": HOST})
    expect(r.cache_status.hit, f"/ok/a/c then hits the same entry: {r.cache_status.raw!r}")


@scenario
def absolute_form_target_names_the_host(env):
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin)
    r = raw_exchange(corral.host, corral.port,
                     b"GET http://other.example/abs/x HTTP/1.1\r\nHost: other.example\r\n"
                     b"Connection: close\r\n\r\n")
    expect_eq(r.status, 200, "the absolute-form request")
    expect_eq(origin.count("/abs/x"), 1, "the origin got the path of the target")
    expect_eq(origin_headers(origin, "/abs/x").get("x-forwarded-host"), "other.example",
              "the host is the target's authority")
    r = corral.get("/abs/x", {"Host": "other.example"})
    expect(r.cache_status.hit, f"the entry is other.example's: {r.cache_status.raw!r}")
    r = corral.get("/abs/x", {"Host": HOST})
    expect(not r.cache_status.hit, f"not {HOST}'s: {r.cache_status.raw!r}")
    # A Host that says otherwise: two names for one request, refused.
    r = raw_exchange(corral.host, corral.port,
                     b"GET http://evil.example/abs/x HTTP/1.1\r\nHost: " + HOST.encode() +
                     b"\r\nConnection: close\r\n\r\n")
    expect_eq((r.status, r.end), (400, "eof"), "an authority that differs from Host")
    expect_eq(origin.count("/abs/x"), 2, "origin requests: one per host, none for the refused")


@scenario
def reload_that_removes_a_route_mid_vary_fetch_finishes_every_request(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/v/x", hold=True, headers={"Vary": "X-Lang"}, body="{h:X-Lang}")
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}, "/v/": {"ttl": "1h"}})
    # Two clients of different variants join one flight: the second must go
    # on to its own variant once the first's response says it varies.
    en = Background(corral.get, "/v/x", {"Host": HOST, "X-Lang": "en"})
    wait_for(lambda: origin.count("/v/x") == 1, what="the first fetch at the origin")
    fr = Background(corral.get, "/v/x", {"Host": HOST, "X-Lang": "fr"})
    wait_for(lambda: corral.stats()["in_progress"]["requests"] == 2, what="both requests in progress")
    with open(corral.config_path) as f:
        text = f.read()
    with open(corral.config_path, "w") as f:
        f.write(text.replace("[route /v/]", "[route /w/]"))
    corral.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: "/w/" in corral.stats()["routes"], what="the reload")
    origin.release("/v/x")
    expect_eq((en.result().status, en.result().text), (200, "en"), "the first client")
    expect_eq((fr.result().status, fr.result().text), (200, "fr"), "the second client")
    expect(corral.running(), "corral still runs")
    expect_eq(corral.get("/v/y", {"Host": HOST}).status, 200, "and still serves")


@scenario
def no_fetch_starts_once_a_stop_begins(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/d/held", hold=True)
    routes = {"/": {"ttl": "1s", "stale_while_revalidate": "60s", "lock_ttl": "30s"}}
    corral = env.corral(redis, origin, routes=routes,
                        extra={"server": {"shutdown_timeout": "3s"}})
    # Keep-alive connections opened before the stop: the drain answers a
    # request on each (with Connection: close), but starts no fetch for it.
    conns = [http.client.HTTPConnection(corral.host, corral.port, timeout=10)
             for _ in range(3)]

    def get(i, path, method="GET"):
        conns[i].request(method, path, body=b"x" if method == "POST" else None,
                         headers={"Host": HOST})
        resp = conns[i].getresponse()
        resp.read()
        return resp.status, CacheStatus(resp.getheader("Cache-Status"))

    expect_eq(get(0, "/d/warm")[0], 200, "the entry that will be stale")
    expect_eq(get(1, "/d/other")[0], 200, "a second connection")
    expect_eq(get(2, "/d/third")[0], 200, "a third connection")
    wait_until_stale(redis, "/d/warm", 60000)
    held = Background(corral.get, "/d/held", {"Host": HOST})
    wait_for(lambda: origin.count("/d/held") == 1, what="the held fetch at the origin")
    stopping = Background(corral.stop)
    wait_for(lambda: "stop: no longer accepting" in corral.log(), what="the drain to begin")

    status, cs = get(0, "/d/warm")
    expect_eq((status, cs.stale), (200, True), "a stale hit while draining")
    status, cs = get(1, "/d/cold")
    expect_eq((status, cs.detail), (503, "unavailable"), "a cold miss while draining")
    status, cs = get(2, "/d/post", "POST")
    expect_eq((status, cs.detail), (503, "unavailable"), "a POST while draining")
    expect_eq(origin.count("/d/post"), 0, "a POST sent upstream while draining")
    expect_eq(origin.count("/d/warm"), 1, "a background refresh started while draining")
    expect_eq(origin.count("/d/cold"), 0, "a fetch started while draining")
    for c in conns:
        c.close()
    r = held.result()
    expect_eq((r.status, r.cache_status.detail), (503, "unavailable"),
              "the held client at shutdown_timeout")
    stopping.result(timeout=15)
    expect_eq(redis.keys("*:lock"), [], "locks left in Redis")
    origin.release("*")


@scenario
def a_body_that_waits_on_a_slow_origin_outlasts_client_timeout(env):
    # client_timeout counts a client's own silence (bytes Corral has for it
    # that it does not take), not the origin's pauses in the middle of a
    # body: each gap here is longer than client_timeout.
    size, path = 300 * 1024, "/t/trickle"
    redis, origin = env.redis(), env.origin()
    origin.script(path, size=size, pieces=3, interval_ms=2500)
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}},
                        extra={"server": {"client_timeout": "1s"}})

    def fetch(method):
        conn = http.client.HTTPConnection(corral.host, corral.port, timeout=slow(30))
        try:
            conn.request(method, path, body=b"x" if method == "POST" else None,
                         headers={"Host": HOST})
            resp = conn.getresponse()
            body = resp.read()
            return resp.status, len(body), body == sized_body(size)
        except (http.client.HTTPException, OSError) as e:
            return repr(e)
        finally:
            conn.close()

    clients = [Background(fetch, "GET") for _ in range(3)] + [Background(fetch, "POST")]
    for i, c in enumerate(clients):
        expect_eq(c.result(slow(60)), (200, size, True),
                  f"client {i} ({'POST, passed' if i == 3 else 'GET, shared'}): "
                  "status, length, bytes")
    expect_eq(origin.count(path), 2, "origin requests: one shared GET, one POST")


@scenario
def client_timeout_still_closes_a_client_that_takes_nothing_or_idles(env):
    # The other side of the scenario above: a client that takes none of
    # what is queued for it, and a keep-alive connection left idle after
    # its answer, are each closed once client_timeout passes.
    # The body is not compressible, so that the entry's own bytes are the
    # reply (a body decoded for its client is queued whole at once).
    size, path = 8 * 1024 * 1024, "/t/big"
    redis, origin = env.redis(), env.origin()
    origin.script(path, size=size, headers={"Content-Type": "application/octet-stream"})
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}},
                        extra={"server": {"client_timeout": "1s"},
                               "upstream": {"max_entry_bytes": "16m"}})
    expect_eq(len(corral.get(path).body), size, "the entry, stored")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(slow(30))
    sock.connect((corral.host, corral.port))
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {HOST}\r\n\r\n".encode())
    wait_for(lambda: corral.stats()["in_progress"]["requests"] == 1,
             what="the stalled client's request in progress")
    stalled_at = time.monotonic()
    wait_for(lambda: corral.stats()["in_progress"]["requests"] == 0, timeout=slow(10),
             what="the stalled client's connection closed by client_timeout")
    expect(time.monotonic() - stalled_at < slow(5),
           f"closed {time.monotonic() - stalled_at:.1f} s after it stopped taking bytes")
    got = 0
    try:
        while (chunk := sock.recv(1 << 20)):
            got += len(chunk)
    except ConnectionResetError:
        pass
    sock.close()
    expect(got < size, f"the stalled client got {got} bytes of {size}: cut short")
    conn = http.client.HTTPConnection(corral.host, corral.port, timeout=slow(30))
    conn.request("GET", path, headers={"Host": HOST})
    expect_eq(len(conn.getresponse().read()), size, "a whole answer on a keep-alive connection")
    idle_at = time.monotonic()
    conn.sock.settimeout(slow(10))
    expect_eq(conn.sock.recv(1), b"", "the idle keep-alive connection closed by Corral")
    expect(time.monotonic() - idle_at < slow(5),
           f"closed {time.monotonic() - idle_at:.1f} s into its idleness")
    conn.close()
