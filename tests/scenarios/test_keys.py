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
    for host, want in (("app.test", 200), ("APP.test:8080", 200), ("x.example.com", 200),
                       ("a.b.example.com", 200), ("example.com", 421), ("api.test:8443", 200),
                       ("api.test", 421), ("evil.test", 421), ("app.test.evil", 421)):
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
