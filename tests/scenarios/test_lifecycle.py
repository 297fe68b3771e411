# SPDX-License-Identifier: MIT
"""Stopping and reloading a running Corral: SIGTERM lets work in progress
finish (and past shutdown_timeout releases every lock it holds, so the fleet
need not wait out lock_ttl); SIGHUP applies a new configuration without
dropping connections, and refuses a bad one."""

import http.client
import socket
import time

from harness import (Background, entry_key, expect, expect_eq, lock_key, scenario,
                     wait_for, wait_until_stale, HOST)

PATH = "/users/1"


def connect_refused(corral):
    try:
        socket.create_connection((corral.host, corral.port), timeout=1).close()
    except OSError:
        return True
    return False


@scenario
def graceful_stop_finishes_requests_in_progress(env):
    redis, origin = env.redis(), env.origin()
    origin.script(PATH, hold=True)
    corral = env.corral(redis, origin, extra={"server": {"shutdown_timeout": "10s"}})

    client = Background(corral.get, PATH, {"Host": HOST})
    wait_for(lambda: origin.held(PATH) == 1, what="the fetch to reach the origin")
    stopping = Background(corral.stop)	# SIGTERM; raises unless it exits 0 cleanly
    wait_for(lambda: connect_refused(corral), timeout=5,
             what="corral to stop accepting connections after SIGTERM")
    expect(not client.done() and corral.running(),
           "connections refused while the request is in progress, not only once corral exits")
    origin.release(PATH)

    r = client.result()
    expect_eq(r.status, 200, "the request in progress at SIGTERM")
    expect(r.cache_status.stored, f"it was fetched and stored: {r.cache_status.raw!r}")
    stopping.result(timeout=15)
    expect(redis.exists(entry_key(PATH)), "the entry is in Redis")
    expect_eq(redis.keys("*:lock"), [], "locks left behind")


@scenario
def graceful_stop_with_only_a_refresh_running_waits_for_it(env):
    # No client in flight: only a stale hit's background refresh holds the
    # lock. The stop waits for it, so the entry is refreshed and no lock is
    # left for the fleet to wait out (lock_ttl 30 s).
    redis, origin = env.redis(), env.origin()
    routes = {"/": {"ttl": "1s", "stale_while_revalidate": "60s", "lock_ttl": "30s"}}
    corral = env.corral(redis, origin, routes=routes,
                        extra={"server": {"shutdown_timeout": "10s"}})
    expect(corral.get(PATH, {"Host": HOST}).cache_status.stored, "primed")
    wait_until_stale(redis, PATH, 60_000, by_ms=200)
    origin.script(PATH, hold=True)
    r = corral.get(PATH, {"Host": HOST})
    expect_eq((r.status, r.cache_status.stale), (200, True), "a stale hit")
    wait_for(lambda: origin.held(PATH) == 1, what="its refresh at the origin")
    expect_eq(corral.stats()["in_progress"]["requests"], 0, "clients in flight")

    stopping = Background(corral.stop)
    wait_for(lambda: "stop: no longer accepting" in corral.log(), what="the drain to begin")
    expect(redis.exists(lock_key(PATH)), "the refresh holds its lock while the stop waits")
    origin.release(PATH)
    stopping.result(timeout=15)
    expect_eq(redis.keys("*:lock"), [], "locks left behind")
    expect(redis.pttl(entry_key(PATH)) > 60_000, "the entry was refreshed (PTTL back to 61 s)")
    expect_eq(origin.count(PATH), 2, "origin fetches")


@scenario
def stop_past_deadline_releases_locks_for_the_fleet(env):
    redis, origin = env.redis(), env.origin()
    origin.script(PATH, hold=True)
    # lock_ttl 30 s: without the release, the other instance would wait it out.
    routes = {"/": {"lock_ttl": "30s", "lock_wait": "20s", "lock_poll": "10s"}}
    a = env.corral(redis, origin, routes=routes,
                   extra={"server": {"shutdown_timeout": "500ms"}})
    b = env.corral(redis, origin, routes=routes)

    on_a = Background(a.get, PATH, {"Host": HOST})
    wait_for(lambda: redis.exists(lock_key(PATH)), what="a to take the lock")
    token = redis.get(lock_key(PATH))
    on_b = Background(b.get, PATH, {"Host": HOST})
    wait_for(lambda: b.counters()["lock_busy"] >= 1, what="b to find the lock held")

    t0 = time.monotonic()
    a.stop()	# drains for 500 ms, then releases; raises unless it exits 0
    r = on_a.result()
    expect_eq((r.status, r.cache_status.detail), (503, "unavailable"),
              "a's client past shutdown_timeout")
    wait_for(lambda: redis.get(lock_key(PATH)) not in (None, token), timeout=5,
             what="b to take the lock a released (its poll is 10 s, lock_ttl 30 s)")
    took_over = time.monotonic() - t0
    origin.release(PATH)
    r = on_b.result()
    expect_eq(r.status, 200, "b's waiting client")
    expect(took_over < 5, f"b took over {took_over:.1f} s after a's stop began")
    expect_eq(b.counters()["locks_acquired"], 1, "b's locks_acquired")


@scenario
def reload_applies_new_routes_without_dropping_connections(env):
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}})
    conn = http.client.HTTPConnection(corral.host, corral.port, timeout=10)

    def get(path):
        conn.request("GET", path, headers={"Host": HOST})
        resp = conn.getresponse()
        resp.read()
        return resp.status, resp.getheader("Cache-Status")

    expect_eq(get("/a")[0], 200, "before the reload")
    with open(corral.config_path, "a") as f:
        f.write("\n[route /short/]\nkey_host = on\nttl = 2s\nstale_while_revalidate = 3s\n")
    corral.proc.send_signal(1)	# SIGHUP
    wait_for(lambda: "/short/" in corral.stats()["routes"], what="the new route in /stats")

    status, cs = get("/short/x")	# the same keep-alive connection
    expect_eq(status, 200, "after the reload, on the connection opened before it")
    expect("stored" in cs, f"stored under the new route: {cs!r}")
    pttl = redis.pttl(entry_key("/short/x"))
    expect(0 < pttl <= 5000, f"entry PTTL {pttl} ms: the new route's 2 s + 3 s")
    expect_eq(get("/a")[1].split(";")[1].strip(), "hit", "the old route still hits")
    expect_eq(corral.counters("/short/")["requests"], 1, "the new route's requests")
    expect_eq(corral.counters("/")["requests"], 2, "the old route kept its figures")
    conn.close()


@scenario
def reload_applies_client_limits_to_new_connections(env):
    # client_timeout 30 s (the default), then 1 s by a reload: a client
    # that connects after it and sends nothing is closed within seconds.
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin)
    with open(corral.config_path) as f:
        text = f.read()
    with open(corral.config_path, "w") as f:
        f.write(text.replace("[server]\n", "[server]\nclient_timeout = 1s\n", 1))
    corral.proc.send_signal(1)	# SIGHUP
    wait_for(lambda: "reload: " in corral.log() and " loaded" in corral.log(),
             what="the reload")
    t0 = time.monotonic()
    with socket.create_connection((corral.host, corral.port), 10) as s:
        s.settimeout(10)
        try:
            end = s.recv(100)
        except socket.timeout:
            end = None
    took = time.monotonic() - t0
    expect(end is not None and took < 5,
           f"an idle client closed after {took:.1f} s (client_timeout 1 s by the reload)")
    expect_eq(corral.get(PATH, {"Host": HOST}).status, 200, "and a client that asks is served")


@scenario
def reload_with_errors_keeps_the_running_configuration(env):
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}})
    expect_eq(corral.get(PATH, {"Host": HOST}).status, 200, "before the reload")

    with open(corral.config_path, "a") as f:
        f.write("\n[route /bad/]\nttl = soon\nlock_ttl = 1ms\n")
    corral.proc.send_signal(1)	# SIGHUP
    wait_for(lambda: "keeping the running configuration" in corral.log(),
             what="the reload to be refused in the log")
    log = corral.log()
    for want in ("ttl: \"soon\" is not a duration", "lock_ttl: 1ms is below the minimum"):
        expect(want in log, f"the log names the error {want!r}")
    expect(corral.running(), "corral still runs")
    expect_eq(list(corral.stats()["routes"]), ["/"], "routes after the refused reload")
    r = corral.get(PATH, {"Host": HOST})
    expect_eq((r.status, r.cache_status.hit), (200, True), "still serving from the cache")


@scenario
def max_connections_holds_new_clients_until_one_closes(env):
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, extra={"server": {"max_connections": "2"}})
    first = [http.client.HTTPConnection(corral.host, corral.port, timeout=5)
             for _ in range(2)]
    for i, conn in enumerate(first):
        conn.request("GET", f"/c/{i}", headers={"Host": HOST})
        expect_eq(conn.getresponse().read() != b"", True, f"connection {i} served")
    wait_for(lambda: corral.stats()["connections"] == 2, what="two connections counted")

    third = http.client.HTTPConnection(corral.host, corral.port, timeout=10)
    waiting = Background(lambda: (third.request("GET", "/c/3", headers={"Host": HOST}),
                                  third.getresponse().status)[1])
    time.sleep(0.5)	# a bounded wait: the claim is that nothing happens
    expect(not waiting.done(), "the third client is not served at max_connections")
    first[0].close()
    expect_eq(waiting.result(), 200, "the third client once a connection closed")
    expect("stopped accepting" in corral.log() and "resumed accepting" in corral.log(),
           "the log says accepting stopped and resumed")
    first[1].close()
    third.close()
