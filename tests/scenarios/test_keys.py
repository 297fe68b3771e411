# SPDX-License-Identifier: MIT
"""What a cache key is made of. By default the upstream's authority, path
and query, so that every name clients reach the fleet by shares one entry
(nginx's default proxy_cache_key); key_host = on keys on the client's Host
and sends it upstream; [server] hosts answers 421 to any other name."""

from harness import entry_key, expect, expect_eq, raw_exchange, scenario, stampede

UPSTREAM_KEYED = {"/": {"key_host": "off", "lock_poll": "5s"}}


def upstream_host(origin):
    return f"{origin.host}:{origin.port}"


@scenario
def instances_reached_by_different_names_share_one_entry(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/k/cold", delay_ms=300, body="v{n}")
    fleet = env.fleet(3, redis, origin, routes=UPSTREAM_KEYED)
    # Each client names the instance it talks to, as client-side balancing
    # or DNS per instance would.
    results = []
    for c in fleet:
        results += stampede([c], 20, "/k/cold", headers={"Host": f"{c.host}:{c.port}"})
    expect_eq(origin.count("/k/cold"), 1, "origin requests for one cold key, 3 names")
    expect_eq(sorted({r.status for r in results}), [200], "statuses")
    expect(redis.exists(entry_key("/k/cold", host=upstream_host(origin))),
           "the entry is keyed on the upstream's authority")


@scenario
def made_up_host_names_do_not_fragment_the_cache(env):
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, routes=UPSTREAM_KEYED)
    for i in range(50):
        r = corral.get("/k/one", {"Host": f"name{i}.example"})
        expect_eq(r.status, 200, f"request with Host name{i}.example")
    expect_eq(origin.count("/k/one"), 1, "origin fetches for 50 Host names")
    seen = origin.path_stats("/k/one")["headers"]
    expect_eq({k.lower(): v for k, v in seen.items()}.get("host"), upstream_host(origin),
              "the upstream receives its own Host")


@scenario
def key_host_keys_on_the_clients_host_and_sends_it(env):
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, routes={"/": {"key_host": "on"}})
    for name in ("a.example", "b.example", "a.example"):
        expect_eq(corral.get("/k/vh", {"Host": name}).status, 200, f"Host {name}")
    expect_eq(origin.count("/k/vh"), 2, "one fetch per virtual host")
    hosts = sorted({k.lower(): v for k, v in h.items()}.get("host")
                   for h in origin.path_stats("/k/vh")["requests"])
    expect_eq(hosts, ["a.example", "b.example"], "the Host each fetch sent upstream")
    expect(redis.exists(entry_key("/k/vh", host="a.example")), "keyed on a.example")


@scenario
def hosts_allow_list_answers_421_to_other_names(env):
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, routes=UPSTREAM_KEYED,
                        extra={"server": {"hosts": "app.test, *.example.com, api.test:8443"}})
    for host, want in (("app.test", 200), (f"APP.test:{corral.port}", 200),
                       (f"app.test:{other_port(corral.port)}", 421), ("x.example.com", 200),
                       ("a.b.example.com", 200), ("example.com", 421), ("api.test:8443", 200),
                       ("api.test", 421), ("evil.test", 421), ("app.test.evil", 421),
                       ("evilexample.com", 421), ("a.example.com.evil", 421)):
        r = corral.get("/k/h", {"Host": host})
        expect_eq(r.status, want, f"Host {host}")
    r = raw_exchange(corral.host, corral.port,
                     b"GET http://evil.test/k/h HTTP/1.1\r\nHost: evil.test\r\n"
                     b"Connection: close\r\n\r\n")
    expect_eq(r.status, 421, "an absolute-form target naming another host")
    expect_eq(origin.count("/k/h"), 1, "origin fetches: only the allowed names, once")


@scenario
def purge_by_path_reaches_upstream_keyed_entries(env):
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, routes=UPSTREAM_KEYED)
    for path in ("/k/p/1", "/k/p/2", "/k/q"):
        corral.get(path, {"Host": "any.example"})
    r = corral.purge(prefix="/k/p/")
    expect_eq(r.status, 200, f"purge by path prefix: {r.text!r}")
    r = corral.purge(url="http://whatever.example/k/q")
    expect_eq(r.status, 200, f"purge by URL: {r.text!r}")
    expect_eq(redis.entry_keys(), [], "entries left after the purges")


def host_get(corral, path, host, extra=b""):
    """One raw GET naming host as is (http.client would refuse some)."""
    return raw_exchange(corral.host, corral.port,
                        f"GET {path} HTTP/1.1\r\nHost: {host}\r\n".encode() + extra +
                        b"Connection: close\r\n\r\n")


def other_port(*taken):
    """A port that is none of taken (nor 80)."""
    return next(p for p in (8080, 8081, 9090, 1) if p not in taken + (80,))


@scenario
def a_clients_host_never_reaches_a_shared_entry(env):
    """The default key ignores the client's Host, so the origin must not
    hear of it: a page an origin builds from X-Forwarded-Host (Django's
    USE_X_FORWARDED_HOST, Rails, Express's trust proxy) would otherwise
    be made for one client's name and served to every other."""
    redis, origin = env.redis(), env.origin()
    origin.script("/k/page", body="link=//{h:X-Forwarded-Host}/next host={h:Host}")
    corral = env.corral(redis, origin, routes=UPSTREAM_KEYED)
    r = host_get(corral, "/k/page", "evil.example")
    expect_eq(r.status, 200, "the poisoning request")
    for name in ("app.test", "www.app.test"):
        r = host_get(corral, "/k/page", name)
        expect(r.cache_status.hit, f"{name}'s request is a hit: {r.cache_status.raw!r}")
        expect(b"evil" not in r.body, f"{name} got a page built for evil.example: {r.body!r}")
        expect_eq(r.body.decode(), f"link=///next host={upstream_host(origin)}",
                  f"the page {name} gets: no X-Forwarded-Host, the upstream's Host")
    expect_eq(origin.count("/k/page"), 1, "origin fetches: one entry for every name")


@scenario
def without_key_host_the_origin_hears_the_canonical_name(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/k/*", body="link=//{h:X-Forwarded-Host}/ fwd={h:Forwarded}")
    corral = env.corral(redis, origin, routes=UPSTREAM_KEYED,
                        extra={"server": {"hosts": "*.app.test, app.test, www.app.test",
                                          "trusted_proxies": "127.0.0.0/8"}})
    # A trusted proxy vouches for who asked, not for a name the key ignores.
    spoof = b"X-Forwarded-Host: evil.example\r\nForwarded: for=203.0.113.9;host=evil.example" \
            b";proto=https, host=\"evil.example\"\r\n"
    r = host_get(corral, "/k/first", "www.app.test", spoof)
    expect_eq((r.status, r.body.decode()),
              (200, "link=//app.test/ fwd=for=203.0.113.9;proto=https"),
              "the first plain name of hosts, and Forwarded without its host pairs")
    r = host_get(corral, "/k/first", "x.app.test")
    expect(r.cache_status.hit, f"another name's request is a hit: {r.cache_status.raw!r}")
    corral.stop()
    corral = env.corral(redis, origin, routes=UPSTREAM_KEYED,
                        extra={"server": {"hosts": "app.test",
                                          "canonical_host": "WWW.App.Test:8443"}})
    r = host_get(corral, "/k/canonical", "app.test")
    expect_eq((r.status, r.body.decode()), (200, "link=//www.app.test:8443/ fwd="),
              "canonical_host, in normal form, over hosts")


@scenario
def a_host_with_a_bad_port_is_refused_before_the_origin(env):
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, routes=UPSTREAM_KEYED,
                        extra={"server": {"hosts": "app.test, *.example.com, api.test:*"}})
    other = other_port(corral.port)
    for host, want in (("app.test:", 400), ("app.test:evil", 400), ("app.test:80x", 400),
                       ("app.test:8080:1", 400), ("app.test:99999", 400), ("app.test:0", 400),
                       (":8080", 400), ("app.test%2e", 400), ("app..test", 400),
                       ("app.test:1", 421), (f"app.test:{other}", 421),
                       ("evilexample.com", 421), (f"x.example.com:{other}", 421),
                       ("app.test", 200), ("app.test:80", 200), ("APP.test:0080", 200),
                       (f"app.test:{corral.port}", 200), (f"x.example.com:{corral.port}", 200),
                       ("api.test:1", 200), (f"api.test:{other}", 200)):
        r = host_get(corral, "/k/port", host)
        expect_eq(r.status, want, f"Host {host}")
    expect_eq(origin.count("/k/port"), 1, "origin fetches: the allowed names, once")


@scenario
def key_host_keys_only_the_ports_the_listener_serves(env):
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, routes={"/": {"key_host": "on"}})
    ports = [corral.port, 80] + [p for p in range(20000, 20050) if p != corral.port][:48]
    statuses = {}
    for p in ports:
        statuses[p] = host_get(corral, "/k/ports", f"a.example:{p}").status
    for host in ("a.example", "A.EXAMPLE:080", f"A.example:{corral.port}"):
        expect_eq(host_get(corral, "/k/ports", host).status, 200, f"Host {host}")
    expect_eq(origin.count("/k/ports"), 2, "origin fetches: one per allowed port")
    expect_eq(sorted(redis.entry_keys()),
              sorted([entry_key("/k/ports", host="a.example"),
                      entry_key("/k/ports", host=f"a.example:{corral.port}")]),
              "the keys made: the name, and the name with the listener's port")
    expect_eq((statuses[corral.port], statuses[80]), (200, 200),
              "the listener's port, and 80 (as none)")
    expect_eq(sorted({s for p, s in statuses.items() if p not in (80, corral.port)}), [421],
              "the other 48 ports")
