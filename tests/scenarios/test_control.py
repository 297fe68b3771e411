"""The control plane: the admin API's tokens and gates, refresh and warm-up
through the lock, entry inspection, and maintenance mode.

With [server] admin_token_file, every admin request but /health and the
dashboard's page carries "Authorization: Bearer TOKEN": a missing or wrong
token gets 401, a read token asking for a change 403. With or without
tokens, a change asked by another site (Origin, Referer) or through a name
that is not the admin listener's (DNS rebinding) is refused. POST /refresh
refreshes entries through the lock (one fetch per key in the fleet, stale
served meanwhile), POST /warm fetches what is not cached, GET /entry shows
what Redis holds for a URL, and POST /maintenance switches a route to
"avoid": stored entries served however stale, nothing sent to the origin,
503 for the rest, fleet-wide.
"""

import ipaddress
import os
import re
import signal
import socket
import threading
import urllib.parse

from harness import (HOST, PREFIX, Background, RawReply, closed_by_server, corral_config,
                     entry_key, expect, expect_eq, free_port, http_request, lock_key,
                     raw_exchange, scenario, wait_for)

FULL = "full-0123456789abcdef0123456789abcdef"
READ = "read-0123456789abcdef0123456789abcdef"
OTHER = "other-0123456789abcdef0123456789abcde"


def token_file(env, text, mode=0o600, name="tokens"):
    path = os.path.join(env.workdir, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


def ask(corral, method, target, token=None, headers=None, body=None):
    """One admin request with token (None: none) and headers."""
    sent = {"Host": f"{corral.admin_host}:{corral.admin_port}"}
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    sent.update(headers or {})
    return http_request(corral.admin_host, corral.admin_port, target, sent, method, body,
                        timeout=30)


def q(**params):
    return urllib.parse.urlencode(params)


def tokens_corral(env, redis, origin, routes=None, server=None):
    path = token_file(env, f"# operators\n{FULL}\n\n{READ} read\n")
    extra = {"server": dict({"admin_token_file": path}, **(server or {}))}
    return env.corral(redis, origin, routes=routes, extra=extra, admin_token=FULL), path


@scenario
def purge_needs_a_token_with_its_scope(env):
    redis, origin = env.redis(), env.origin()
    corral, _ = tokens_corral(env, redis, origin, routes={"/": {"ttl": "1h"}})
    expect_eq(corral.get("/t/1", {"Host": HOST}).status, 200, "filling /t/1")
    purge = "/purge?" + q(url=f"http://{HOST}/t/1")

    r = ask(corral, "POST", purge)
    expect_eq(r.status, 401, f"purge without a token: {r.text!r}")
    expect_eq(r.headers.get("WWW-Authenticate", "").split()[0], "Bearer",
              "401's WWW-Authenticate")
    expect(redis.exists(entry_key("/t/1")), "the entry survives a purge without a token")
    expect_eq(ask(corral, "POST", purge, token=OTHER).status, 401, "purge, a wrong token")
    r = ask(corral, "POST", purge, token=READ)
    expect_eq(r.status, 403, f"purge with a read token: {r.text!r}")
    expect(redis.exists(entry_key("/t/1")), "the entry survives a purge with a read token")
    r = ask(corral, "POST", purge, token=FULL)
    expect_eq((r.status, r.json().get("purged")), (200, 1), f"purge with a full token")
    expect(not redis.exists(entry_key("/t/1")), "the entry went with the full token")

    expect_eq(ask(corral, "GET", "/health").status, 200, "/health without a token")
    expect_eq(ask(corral, "GET", "/").status, 200, "the dashboard's page without a token")
    for path in ("/stats", "/metrics", "/stats.txt", "/entry?" + q(url=f"http://{HOST}/t/1")):
        expect_eq(ask(corral, "GET", path).status, 401, f"{path} without a token")
        expect_eq(ask(corral, "GET", path, token=READ).status, 200, f"{path}, read token")
    expect_eq(ask(corral, "POST", "/maintenance?" + q(route="/", mode="avoid"),
                  token=READ).status, 403, "maintenance with a read token")
    expect_eq(ask(corral, "GET", "/stats", headers={"Authorization": f"Basic {FULL}"}).status,
              401, "a token not sent as Bearer")
    log = corral.log()
    expect("admin: 401" in log and "admin: 403" in log, "refusals are logged")
    expect(FULL not in log and READ not in log and OTHER not in log,
           "no token in the log")


@scenario
def admin_connections_stay_capped_with_tokens(env):
    redis, origin = env.redis(), env.origin()
    corral, _ = tokens_corral(env, redis, origin, server={"admin_max_connections": "2"})
    idle = [socket.create_connection((corral.admin_host, corral.admin_port)) for _ in range(2)]
    try:
        wait_for(lambda: ask(corral, "GET", "/health").status == 503, timeout=10,
                 what="a third admin connection turned away")
    finally:
        for s in idle:
            s.close()
    wait_for(lambda: ask(corral, "GET", "/stats", token=READ).status == 200, timeout=10,
             what="admin connections accepted again once the idle ones closed")
    expect(corral.stats()["admin"]["refused"] >= 1, "refusals counted in /stats")


@scenario
def bad_token_files_refuse_to_start_and_keep_the_old_tokens(env):
    redis, origin = env.redis(), env.origin()
    loose = token_file(env, f"{FULL}\n", mode=0o644, name="loose")
    conf = env.config_file(f"[server]\nadmin_token_file = {loose}\n"
                           f"[redis]\naddress = {redis.address}\n"
                           f"[upstream]\nurl = {origin.url}\n", "loose.conf")
    p = env.run_corral("-t", "-c", conf)
    expect(p.returncode != 0, "a token file readable by others refuses to start")
    expect(loose in p.stderr and "by others" in p.stderr and f"{conf}:2:" in p.stderr,
           f"the reason, with file:line: {p.stderr!r}")
    bad = token_file(env, f"{FULL}\nshort\n{READ} write\n", name="bad")
    conf = env.config_file(f"[server]\nadmin_token_file = {bad}\n"
                           f"[redis]\naddress = {redis.address}\n"
                           f"[upstream]\nurl = {origin.url}\n", "bad.conf")
    p = env.run_corral("-t", "-c", conf)
    expect(p.returncode != 0, "bad token lines refuse to start")
    expect(f"{bad}:2:" in p.stderr and f"{bad}:3:" in p.stderr,
           f"every bad line named as file:line: {p.stderr!r}")
    expect(FULL not in p.stderr and READ not in p.stderr, "no token in the messages")

    corral, path = tokens_corral(env, redis, origin)
    token_file(env, f"{OTHER}\n", mode=0o644, name="tokens")	# loose again
    corral.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: "keeping the running configuration" in corral.log(), timeout=10,
             what="the reload refused")
    expect_eq(ask(corral, "GET", "/stats", token=FULL).status, 200, "the old token still works")
    expect_eq(ask(corral, "GET", "/stats", token=OTHER).status, 401,
              "the new token is not taken from a loose file")
    os.chmod(path, 0o600)
    corral.admin_token = OTHER
    corral.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: ask(corral, "GET", "/stats", token=OTHER).status == 200, timeout=10,
             what="the new token after a reload")
    expect_eq(ask(corral, "GET", "/stats", token=FULL).status, 401, "the old token is gone")


@scenario
def token_file_from_a_systemd_credential_or_group_readable_is_taken(env):
    # DynamicUser=yes: the service cannot open a root-owned 0600 file, so
    # the unit hands it over with LoadCredential=; systemd's ACL on the
    # copy shows as the group's read bit (0440).
    os.environ.pop("CREDENTIALS_DIRECTORY", None)
    redis, origin = env.redis(), env.origin()
    creds = os.path.join(env.workdir, "credentials")
    os.makedirs(creds, mode=0o700)
    token_file(env, f"{FULL}\n", mode=0o440, name="credentials/admin-tokens")
    systemd = {"CREDENTIALS_DIRECTORY": creds}
    group = token_file(env, f"{READ} read\n", mode=0o640, name="group-readable")
    token_file(env, f"{OTHER}\n", name="next-to-conf")
    for name, token in (("admin-tokens", FULL), ("$CREDENTIALS_DIRECTORY/admin-tokens", FULL),
                        (group, READ), ("./next-to-conf", OTHER)):
        corral = env.corral(redis, origin, extra={"server": {"admin_token_file": name}},
                            env=systemd, admin_token=token)
        expect_eq(ask(corral, "GET", "/stats", token=token).status, 200,
                  f"/stats with the token of admin_token_file = {name}")
        expect_eq(ask(corral, "GET", "/stats").status, 401, f"{name}: /stats without a token")
        expect(token not in corral.log(), f"{name}: no token in the log")
        corral.stop()
    # ./NAME next to a configuration named by a relative path, as
    # corral -c corral.conf from its own directory.
    conf = env.config_file(f"[server]\nadmin_token_file = ./next-to-conf\n"
                           f"[redis]\naddress = {redis.address}\n"
                           f"[upstream]\nurl = {origin.url}\n", "relative.conf")
    p = env.run_corral("-t", "-c", os.path.basename(conf), cwd=os.path.dirname(conf))
    expect(p.returncode == 0, f"./next-to-conf beside a relative -c path: {p.stderr!r}")

    writable = token_file(env, f"{FULL}\n", mode=0o660, name="group-writable")
    for name, why in ((writable, f"{writable} may be written by its group (mode 0660)"),
                      ("admin-tokens", "admin-tokens is a credential name but "
                       "$CREDENTIALS_DIRECTORY is not set")):
        conf = env.config_file(f"[server]\nadmin_token_file = {name}\n"
                               f"[redis]\naddress = {redis.address}\n"
                               f"[upstream]\nurl = {origin.url}\n", "refused.conf")
        p = env.run_corral("-t", "-c", conf)
        expect(p.returncode != 0 and f"{conf}:2: admin_token_file: {why}" in p.stderr,
               f"admin_token_file = {name} refused, saying why: {p.stderr!r}")
        expect(FULL not in p.stderr, "no token in the message")


@scenario
def cross_site_and_rebinding_changes_are_refused(env):
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}})
    corral.get("/x/1", {"Host": HOST})
    purge = "/purge?" + q(url=f"http://{HOST}/x/1")
    own = f"http://{corral.admin_host}:{corral.admin_port}"
    for headers, what in (({"Origin": "http://evil.example"}, "a cross-site Origin"),
                          ({"Origin": "null"}, "an opaque Origin"),
                          ({"Referer": "http://evil.example/page"}, "a cross-site Referer"),
                          ({"Host": f"evil.example:{corral.admin_port}"}, "a rebinding Host"),
                          ({"Host": f"evil.example:{corral.admin_port}", "Origin":
                            f"http://evil.example:{corral.admin_port}"}, "a rebound page")):
        r = ask(corral, "POST", purge, headers=headers)
        expect_eq(r.status, 403, f"purge with {what}: {r.text!r}")
        expect(redis.exists(entry_key("/x/1")), f"the entry survives {what}")
    expect_eq(ask(corral, "GET", "/stats", headers={"Origin": "http://evil.example"}).status,
              200, "reads are not changes")
    r = ask(corral, "POST", purge, headers={"Origin": own, "Referer": own + "/"})
    expect_eq(r.status, 200, f"purge from the dashboard's own origin: {r.text!r}")
    r = ask(corral, "POST", "/purge?" + q(prefix=f"{HOST}/x/"), headers={"Host": "localhost"})
    expect_eq(r.status, 200, "Host: localhost is the listener's")

    allowed = env.corral(redis, origin, extra={"server": {"admin_allow": "::1, 127.0.0.0/8"}})
    expect_eq(ask(allowed, "GET", "/stats").status, 200, "admin_allow lets its addresses in")
    with open(allowed.config_path) as f:
        text = f.read()
    with open(allowed.config_path, "w") as f:
        f.write(text.replace("::1, 127.0.0.0/8", "192.0.2.0/24, 2001:db8::/32"))
    allowed.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: ask(allowed, "GET", "/stats").status == 403, timeout=10,
             what="admin_allow refusing another address after a reload")
    expect_eq(ask(allowed, "GET", "/health").status, 200, "/health stays open")
    expect("not in admin_allow" in allowed.log(), "the refusal logged")
    with open(allowed.config_path, "w") as f:
        f.write(text)
    allowed.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: ask(allowed, "GET", "/stats").status == 200, timeout=10,
             what="admin_allow letting 127.0.0.1 in again")


@scenario(timeout=240)
def soft_prefix_purge_by_a_token_under_load_is_served_from_cache(env):
    redis, origin = env.redis(), env.origin()
    origin.script("*", delay_ms=20, body="{path} v{n}")
    corral, _ = tokens_corral(env, redis, origin,
                              routes={"/": {"ttl": "1h", "stale_while_revalidate": "1h"}})
    paths = [f"/sp/{i}" for i in range(100)]
    for p in paths:
        expect_eq(corral.get(p, {"Host": HOST}).status, 200, f"filling {p}")
    barrier = threading.Barrier(501)
    results = [None] * 500

    def client(i):
        barrier.wait()
        results[i] = corral.get(paths[i % 100], {"Host": HOST})

    threads = [threading.Thread(target=client, args=(i,), daemon=True) for i in range(500)]
    for t in threads:
        t.start()
    r = ask(corral, "POST", "/purge?" + q(prefix=f"http://{HOST}/sp/", soft="1"), token=FULL)
    expect_eq((r.status, r.json().get("purged")), (200, 100), f"soft prefix purge: {r.text!r}")
    barrier.wait()
    for t in threads:
        t.join(60)
    expect(all(r is not None for r in results), "every request answered")
    expect_eq([r.cache_status.raw for r in results if not r.cache_status.hit], [],
              "requests not served from the cache")
    wait_for(lambda: all(origin.count(p) == 2 for p in paths), timeout=60,
             what="each entry refreshed once")
    expect_eq(max(origin.count(p) for p in paths), 2, "origin requests per entry")


def refresh_done(corral):
    c = corral.stats()["control"]
    return c["jobs"] == 0 and corral.stats()["in_progress"]["refreshes"] == 0


@scenario(timeout=240)
def refresh_of_100_entries_under_load_across_two_instances(env):
    redis, origin = env.redis(), env.origin()
    origin.script("*", delay_ms=300, body="{path} v{n}")
    routes = {"/": {"ttl": "1h", "stale_while_revalidate": "1h"}}
    a = env.corral(redis, origin, routes=routes)
    b = env.corral(redis, origin, routes=routes)
    env.wait_subscribed(redis, 2)
    paths = [f"/rf/{i}" for i in range(100)]
    for i, p in enumerate(paths):
        expect_eq((a, b)[i % 2].get(p, {"Host": HOST}).status, 200, f"filling {p}")
    for c in (a, b):	# both near caches hold every entry
        for p in paths:
            c.get(p, {"Host": HOST})
    stop = threading.Event()
    answers = []

    def load(c):
        i = 0
        while not stop.is_set():
            answers.append(c.get(paths[i % 100], {"Host": HOST}))
            i += 7

    loaders = [Background(load, c) for c in (a, b, a, b)]
    r = a.admin("POST", "/refresh?" + q(prefix=f"{HOST}/rf/"), timeout=60)
    expect_eq((r.status, r.json().get("scheduled")), (200, 100), f"refresh: {r.text!r}")
    wait_for(lambda: all(origin.count(p) >= 2 for p in paths), timeout=90,
             what="every entry refreshed")
    wait_for(lambda: refresh_done(a), timeout=30, what="the refresh job to end")
    stop.set()
    for l in loaders:
        l.result()
    expect(len(answers) > 100, f"requests during the refresh: {len(answers)}")
    expect_eq([r.cache_status.raw for r in answers if not r.cache_status.hit], [],
              "requests not answered from the cache during the refresh")
    expect_eq(max(origin.count(p) for p in paths), 2, "origin fetches per key: fill + refresh")
    for c in (a, b):
        r = c.get(paths[3], {"Host": HOST})
        expect_eq((r.text, r.cache_status.hit, r.cache_status.stale),
                  (f"{paths[3]} v2", True, False), f"{c.name} serves the refreshed entry")
    r = b.admin("POST", "/refresh?" + q(url=f"http://{HOST}{paths[5]}"))
    expect_eq((r.status, r.json().get("scheduled")), (200, 1), f"refresh of one URL: {r.text!r}")
    wait_for(lambda: origin.count(paths[5]) == 3, timeout=30, what="the URL refreshed")


@scenario
def warm_fetches_what_is_not_cached(env):
    redis, origin = env.redis(), env.origin()
    origin.script("*", body="{path} v{n}")
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}})
    for p in ("/w/0", "/w/1"):
        corral.get(p, {"Host": HOST})
    urls = "".join(f"http://{HOST}/w/{i}\n" for i in range(6)) + "\n# a comment\nnot-a-url\n"
    r = corral.admin("POST", "/warm", body=urls.encode())
    expect_eq(r.status, 200, f"warm: {r.text!r}")
    expect_eq({k: r.json()[k] for k in ("urls", "cached", "scheduled", "invalid")},
              {"urls": 7, "cached": 2, "scheduled": 4, "invalid": 1}, "warm's answer")
    wait_for(lambda: all(redis.exists(entry_key(f"/w/{i}")) for i in range(6)), timeout=30,
             what="the URLs not cached stored")
    expect_eq([origin.count(f"/w/{i}") for i in range(6)], [1] * 6, "one fetch each")
    big = "".join(f"http://{HOST}/many/{i}\n" for i in range(1001)).encode()
    expect_eq(corral.admin("POST", "/warm", body=big).status, 413, "over 1000 URLs")
    # A URL is an http(s) one, its path as a request's: dot segments resolved.
    urls = (f"ftp://{HOST}/w/ftp\nfile:///w/file\njavascript://{HOST}/w/js\n"
            f"http://{HOST}/x/../w/dots\nHTTPS://{HOST}/w/./up\n")
    r = corral.admin("POST", "/warm", body=urls.encode())
    expect_eq({k: r.json()[k] for k in ("urls", "scheduled", "invalid")},
              {"urls": 5, "scheduled": 2, "invalid": 3}, f"warm of other schemes: {r.text}")
    wait_for(lambda: origin.count("/w/dots") == 1 and origin.count("/w/up") == 1, timeout=30,
             what="the dotted URLs fetched resolved")
    expect_eq(sorted(p for p in origin.stats()["paths"] if "." in p or "ftp" in p or
                     "file" in p or "js" in p), [], "no dot segment or other scheme sent")
    r = corral.admin("POST", "/refresh?" + q(url=f"gopher://{HOST}/w/0"))
    expect_eq(r.status, 400, f"refresh of a gopher URL: {r.text!r}")


@scenario
def the_admin_listener_reads_one_host_from_one_line(env):
    """Two Host, Origin or Referer lines, or an absolute-form target
    naming another host, are refused: which would count?"""
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin)
    own = f"{corral.admin_host}:{corral.admin_port}"

    def raw(target, lines):
        return raw_exchange(corral.admin_host, corral.admin_port,
                            f"GET {target} HTTP/1.1\r\n{lines}Connection: close\r\n\r\n"
                            .encode())
    expect_eq(raw("/stats", f"Host: {own}\r\n").status, 200, "one Host naming it")
    for target, lines, what in (
            ("/stats", f"Host: {own}\r\nHost: evil.example\r\n", "two Host lines"),
            ("/stats", f"Host: evil.example\r\nHost: {own}\r\n", "two Host lines, ours last"),
            ("/stats", f"Host: {own}\r\nOrigin: http://{own}\r\nOrigin: http://evil\r\n",
             "two Origin lines"),
            ("/stats", f"Host: {own}\r\nReferer: http://{own}/\r\nReferer: http://evil/\r\n",
             "two Referer lines"),
            ("http://evil.example/stats", f"Host: {own}\r\n", "an absolute target elsewhere"),
            (f"https://{own}/stats", f"Host: {own}\r\n", "an https absolute target")):
        expect_eq(raw(target, lines).status, 403, what)
    expect_eq(raw(f"http://{own}/stats", "Host: evil.example\r\n").status, 200,
              "an absolute target naming it rules over Host (RFC 9112 3.2.2)")


def name_of_this_machine():
    """(name, address): a name of this machine that another admin rule
    would not accept (not an address, localhost or a name under
    .localhost) and that resolves to one address this machine can listen
    on; None if it has none (tests/unit/test_auth.c holds the rule then)."""
    names = (socket.gethostname(), socket.getfqdn(), "ip6-localhost", "localhost.localdomain")
    for name in names:
        low = name.lower().rstrip(".")
        if not low or low == "localhost" or low.endswith(".localhost"):
            continue
        try:
            ipaddress.ip_address(name)
            continue
        except ValueError:
            pass
        try:
            addrs = {ai[4][0] for ai in socket.getaddrinfo(name, None, type=socket.SOCK_STREAM)}
        except OSError:
            continue
        if len(addrs) != 1:
            continue
        addr = addrs.pop()
        try:
            with socket.socket(socket.AF_INET6 if ":" in addr else socket.AF_INET) as probe:
                probe.bind((addr, 0))
        except OSError:
            continue
        return name, addr
    return None


@scenario
def the_admin_listen_name_is_a_host_of_the_listener(env):
    """admin_listen = NAME:PORT: Host NAME:PORT (any case) is the listener,
    a name that starts with NAME or holds it is not."""
    found = name_of_this_machine()
    if found is None:
        print("no name of this machine resolves to one address it can listen on: "
              "the rule is held by tests/unit/test_auth.c alone here")
        return
    name, addr = found
    redis, origin = env.redis(), env.origin()
    port = free_port()
    corral = env.corral(config=corral_config(redis, origin, free_port(), port).replace(
        f"admin_listen = 127.0.0.1:{port}", f"admin_listen = {name}:{port}"))
    expect_eq(corral.admin_host, name, "the admin listener's host in the harness")
    for host in (f"{name}:{port}", f"{name.upper()}:{port}", name):
        r = ask(corral, "GET", "/stats", headers={"Host": host})
        expect_eq(r.status, 200, f"/stats with Host {host!r} (admin_listen = {name}:{port})")
    r = ask(corral, "POST", "/purge?" + q(url=f"http://{HOST}/x"),
            headers={"Host": f"{name}:{port}", "Origin": f"http://{name}:{port}"})
    expect_eq(r.status, 200, f"a purge from the listener's own origin: {r.text!r}")
    for host in (f"{name}x:{port}", f"x{name}:{port}", f"{name}.evil.example:{port}",
                 f"{name[:-1] or 'x'}:{port}"):
        r = ask(corral, "GET", "/stats", headers={"Host": host})
        expect_eq(r.status, 403, f"/stats with Host {host!r}")


@scenario
def entry_shows_what_redis_holds_field_by_field(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/e/stored", body="stored body", headers={"Cache-Tag": "red, blue"})
    origin.script("/e/stale", body="stale")
    origin.script("/e/locked", hold=True)
    routes = {"/": {"ttl": "1h", "stale_while_revalidate": "1h", "lock_ttl": "30s"}}
    corral = env.corral(redis, origin, routes=routes)

    def entry(path):
        r = corral.admin("GET", "/entry?" + q(url=f"http://{HOST}{path}"))
        expect_eq(r.status, 200, f"/entry {path}: {r.text!r}")
        return r.json()

    corral.get("/e/stored", {"Host": HOST})
    e = entry("/e/stored")
    expect_eq((e["key"], e["stored"], e["status"], e["state"], e["size"]),
              (f"{HOST}/e/stored", True, 200, "fresh", len("stored body")), "a stored entry")
    expect_eq(sorted(e["tags"]), ["blue", "red"], "its tags")
    expect(e["stored_at_ms"] <= e["fresh_until_ms"] <= e["stale_until_ms"], f"its times: {e}")
    expect_eq(e["fresh_until_ms"] - e["stored_at_ms"], 3600 * 1000, "fresh for the route's ttl")
    expect_eq((e["lock"], e["backoff"], e["hit_for_miss"], e["variants"]),
              (None, None, None, []), "no lock, backoff, hit-for-miss or variants")

    corral.get("/e/stale", {"Host": HOST})
    corral.admin("POST", "/purge?" + q(url=f"http://{HOST}/e/stale", soft="1"))
    e = entry("/e/stale")
    expect_eq((e["stored"], e["state"]), (True, "stale"), "a softly purged entry")
    expect(e["fresh_until_ms"] < e["stale_until_ms"], f"stale until later: {e}")

    slow = Background(corral.get, "/e/locked", {"Host": HOST})
    wait_for(lambda: origin.held("/e/locked") == 1, timeout=10, what="the fetch held")
    e = entry("/e/locked")
    expect_eq(e["stored"], False, "a key being fetched is not stored yet")
    lock = e["lock"]
    expect(lock is not None and lock["holder"] == "this process", f"the lock: {e}")
    expect(0 <= lock["age_ms"] < 30000 and 0 < lock["expires_in_ms"] <= 30000,
           f"its age and expiry: {lock}")
    token = redis.get(lock_key("/e/locked"))
    expect(token and str(token) not in str(e), "never the lock's token")
    origin.release("/e/locked")
    slow.result()

    e = entry("/e/missing")
    expect_eq((e["stored"], e["lock"], e["status"]), (False, None, None), "a missing key")
    redis.cmd("SET", f"corral:{{{HOST}/e/missing}}:backoff", "503", "PX", "60000")
    redis.cmd("SET", f"corral:{{{HOST}/e/missing}}:hfm", "1", "PX", "60000")
    e = entry("/e/missing")
    expect_eq(e["backoff"]["failure"], "503", f"the backoff: {e}")
    expect(0 < e["hit_for_miss"]["remaining_ms"] <= 60000, f"hit-for-miss: {e}")
    expect_eq(corral.admin("GET", "/entry?url=relative").status, 400, "a relative URL")


@scenario
def entry_of_a_key_another_instance_is_fetching_names_that_holder(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/e/held", hold=True, body="held")
    routes = {"/": {"ttl": "1h", "lock_ttl": "30s"}}
    a = env.corral(redis, origin, routes=routes)
    b = env.corral(redis, origin, routes=routes)
    url = "/entry?" + q(url=f"http://{HOST}/e/held")

    slow = Background(b.get, "/e/held", {"Host": HOST})
    wait_for(lambda: origin.held("/e/held") == 1, timeout=10, what="b's fetch held")
    ea, eb = a.admin("GET", url).json(), b.admin("GET", url).json()
    expect_eq((ea["stored"], ea["key"]), (False, f"{HOST}/e/held"), f"a's /entry: {ea}")
    lock = ea["lock"]
    expect(lock is not None and lock["holder"] == "another process",
           f"a names another process as the holder: {ea}")
    expect_eq(eb["lock"]["holder"], "this process", f"b holds it: {eb}")
    expect_eq(lock["holder_id"], eb["lock"]["holder_id"], "both name the same holder")
    expect(0 <= lock["age_ms"] < 30000 and 0 < lock["expires_in_ms"] <= 30000,
           f"its age and expiry, by a's lock_ttl: {lock}")
    token = redis.get(lock_key("/e/held"))
    expect(token and str(token) not in str(ea), "never the lock's token")
    origin.release("/e/held")
    expect_eq(slow.result().status, 200, "b's request")
    ea = a.admin("GET", url).json()
    expect_eq((ea["stored"], ea["lock"], ea["size"]), (True, None, len("held")),
              f"a's /entry once b stored it: {ea}")


@scenario
def entry_of_a_url_maps_to_the_key_its_request_got_under_key_rules(env):
    redis, origin = env.redis(), env.origin()
    origin.script("*", body="{path} v{n}")
    routes = {"/kr/": {"ttl": "1h", "key_ignore_query": "_, utm_*, fbclid"},
              "/": {"ttl": "1h"}}
    corral = env.corral(redis, origin, routes=routes)
    r = corral.get("/kr/a?id=7&_=123&utm_source=mail", {"Host": HOST})
    expect_eq((r.status, r.cache_status.stored), (200, True), "the request stored")
    stored = [k for k in redis.cmd("KEYS", f"{PREFIX}*:entry")]
    expect_eq(len(stored), 1, f"one entry in Redis: {stored}")

    def entry(path):
        r = corral.admin("GET", "/entry?" + q(url=f"http://{HOST}{path}"))
        expect_eq(r.status, 200, f"/entry {path}: {r.text!r}")
        return r.json()

    for path in ("/kr/a?id=7&_=123&utm_source=mail", "/kr/a?fbclid=x&id=7",
                 "/kr/a?utm_medium=y&id=7&_=9"):
        e = entry(path)
        expect_eq((e["route"], e["stored"], e["size"]), ("/kr/", True, len("/kr/a?id=7&_=123&"
                                                                          "utm_source=mail v1")),
                  f"/entry {path}: {e}")
        expect_eq(f"{PREFIX}{{{e['key']}}}:entry", stored[0], f"{path}: the key of the request")
    e = entry("/kr/a?id=8&_=123")
    expect_eq(e["stored"], False, f"another id is another key: {e}")
    expect(e["key"] != entry("/kr/a?id=7")["key"], "its key differs")
    # Outside the route, the rules do not apply.
    corral.get("/a?id=7&_=1", {"Host": HOST})
    expect_eq(entry("/a?id=7&_=2")["stored"], False, "/a?id=7&_=2 under / (no key rules)")
    expect_eq(entry("/a?id=7&_=1")["stored"], True, "/a?id=7&_=1 under /")


def maint(corral, route, mode):
    r = corral.admin("POST", "/maintenance?" + q(route=route, mode=mode))
    expect_eq(r.status, 200, f"maintenance {route} {mode}: {r.text!r}")
    return r.json()


@scenario(timeout=180)
def maintenance_serves_what_is_stored_and_spares_the_origin(env):
    redis, origin = env.redis(), env.origin()
    origin.script("*", body="{path} v{n}", etag="\"v1\"")	# validators: kept a minute
    routes = {"/": {"ttl": "1s", "stale_while_revalidate": "1s"}}
    a = env.corral(redis, origin, routes=routes)
    for p in ("/m/1", "/m/2", "/other/1"):
        a.get(p, {"Host": HOST})
    maint(a, "/m/", "avoid")
    wait_for(lambda: a.stats()["maintenance"] == [{"route": "/m/", "mode": "avoid",
                                                   "since_ms": a.stats()["maintenance"][0]
                                                   ["since_ms"]}],
             timeout=10, what="the mode in /stats")
    expect("maintenance=/m/" in a.admin("GET", "/health").text, "the mode in /health")
    wait_for(lambda: not redis.exists(lock_key("/m/1")) and
             a.admin("GET", "/entry?" + q(url=f"http://{HOST}/m/1")).json()["state"] ==
             "expired", timeout=30, what="/m/1 past stale (still kept)")
    before = origin.count()
    fetches = a.stats()["total"]["upstream_fetches"]
    for _ in range(5):
        r = a.get("/m/1", {"Host": HOST})
        expect_eq((r.status, r.text), (200, "/m/1 v1"), "a stored entry however stale")
        r = a.get("/m/new", {"Host": HOST})
        expect_eq(r.status, 503, "a key not stored")
        expect(r.headers.get("Retry-After"), "with Retry-After")
        r = a.get("/m/post", {"Host": HOST}, method="POST", body=b"x")
        expect_eq(r.status, 503, "a POST under the route")
    expect_eq(origin.count(), before, "nothing reached the origin")
    expect_eq(a.stats()["total"]["upstream_fetches"], fetches, "no upstream fetch counted")
    r = a.get("/other/1", {"Host": HOST})
    wait_for(lambda: origin.count("/other/1") >= 2, timeout=30,
             what="another route refreshed as usual")

    b = env.corral(redis, origin, routes=routes)
    wait_for(lambda: [m["route"] for m in b.stats()["maintenance"]] == ["/m/"], timeout=10,
             what="a new instance picking the mode up")
    expect_eq(b.get("/m/new2", {"Host": HOST}).status, 503, "the new instance avoids too")
    maint(b, "/m/", "normal")
    wait_for(lambda: a.stats()["maintenance"] == [], timeout=10, what="the mode off on a")
    r = a.get("/m/new", {"Host": HOST})
    expect_eq((r.status, r.cache_status.stored), (200, True), "fetched again once normal")
    r = a.get("/m/1", {"Host": HOST})
    expect_eq((r.status, r.cache_status.hit, origin.count("/m/1")), (200, False, 2),
              "an expired entry fetched again once normal")

    maint(a, "/", "avoid")
    origin.stop()
    r = b.get("/m/new", {"Host": HOST})
    expect_eq(r.status, 200, "stored, with the origin stopped")
    expect_eq(b.get("/nothing", {"Host": HOST}).status, 503, "not stored, origin stopped")
    expect_eq(b.stats()["total"]["upstream_errors"], 0, "no upstream error: nothing was sent")
    maint(a, "/", "normal")


@scenario
def maintenance_news_heard_during_a_read_is_read_again_once(env):
    """A change heard while the modes are being read makes one more read
    once that one ends: not none (the change would be missed), and not one
    after another for ever."""
    redis, origin = env.redis(), env.origin()
    proxy = env.redis_proxy(redis)
    a = env.corral(redis, origin)
    b = env.corral(proxy, origin, wait_redis=True)
    env.wait_subscribed(redis, 2)
    proxy.hold_replies_after(b"HGETALL")
    maint(a, "/m/", "avoid")
    wait_for(lambda: proxy.held_bytes() > 0, what="b's read of the modes, held")
    heard = proxy.published()
    maint(a, "/n/", "avoid")
    wait_for(lambda: proxy.published() > heard, what="b to hear of the second change")
    b.stats(), b.stats()	# two turns of its loop: the news is read
    expect_eq(b.stats()["maintenance"], [], "b's modes while its read is held")
    proxy.release()
    wait_for(lambda: sorted(m["route"] for m in b.stats()["maintenance"]) == ["/m/", "/n/"],
             timeout=10, what="b to read again, and see both routes")
    sent = b.stats()["redis"]["commands"]
    for _ in range(5):
        expect_eq(b.stats()["redis"]["commands"], sent,
                  "b's Redis commands once it has read both: no read after read")
    expect_eq(b.get("/n/x", {"Host": HOST}).status, 503, "b avoids the second route")
    # One log line per route b saw go into maintenance, none for another.
    said = re.findall(r"maintenance: (.*) avoids the origin", b.log())
    expect_eq(sorted(said), ["/m/", "/n/"], "b's log lines of routes avoiding the origin")


@scenario
def maintenance_covers_every_spelling_of_its_route(env):
    redis, origin = env.redis(), env.origin()
    origin.script("*", body="{path} v{n}")
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}})
    # Kept plain, like the paths it is matched against.
    expect_eq(maint(corral, "/%6D//", "avoid")["route"], "/m/", "the route, kept plain")
    wait_for(lambda: [m["route"] for m in corral.stats()["maintenance"]] == ["/m/"],
             timeout=10, what="the mode in /stats")
    expect_eq(maint(corral, "/%70ag%65%30/", "avoid")["route"], "/page0/",
              "escapes at the start, middle and end of a segment, decoded")
    maint(corral, "/page0/", "normal")
    expect_eq(maint(corral, "/report", "avoid")["route"], "/report", "a route without '/'")
    # Each is /m/new to an origin that decodes %XX (once, or twice), merges
    # slashes, drops a segment's ;parameters (Tomcat, Jetty), reads a
    # path in any case or without a segment's trailing dots (IIS), a '\'
    # as a '/', or an overlong UTF-8 '/' as one (older Java and IIS).
    for target in ("/m/new", "/%6D/new", "/%6d/new", "//m/new", "/%2Fm/new", "/x/..%2Fm/new",
                   "/%2E/m/new", "/m%2Fnew", "/m;a=1/new", "/m;/new", "/M/new", "/%4D/new",
                   "/m./new", "/m../new", "/m%2E/new", "/m\\new", "/m%5Cnew", "/%256D/new",
                   "/%25256d/new", "/%c0%afm/new", "/x%c0%af..%c0%afm/new", "/m%c0%afnew", "/m%c0%ae/new",
                   "/m%e0%80%afnew", "/report", "/repor%74", "/REPORT/x", "/report;v=2",
                   "/m/ne%77", "/m%2f", "/%c1%ad/new", "/%e0%81%ad/new", "/m%c1%9cnew"):
        r = corral.get(target, {"Host": HOST})
        expect_eq(r.status, 503, f"GET {target} under maintenance of /m/ and /report")
        r = corral.get(target, {"Host": HOST}, method="POST", body=b"x")
        expect_eq(r.status, 503, f"POST {target} under maintenance of /m/ and /report")
    expect_eq(origin.stats()["paths"], {}, "what reached the origin")
    # Paths only near the routes still reach the origin.
    for target in ("/mm/new", "/m.x/new", "/%6Dx/new", "/n/new", "/m_/new", "/repo",
                   "/%72xeport"):
        expect_eq(corral.get(target, {"Host": HOST}).status, 200, f"{target}: another route")
    maint(corral, "/report", "normal")
    maint(corral, "/m/", "normal")
    wait_for(lambda: corral.stats()["maintenance"] == [], timeout=10, what="the mode off")
    expect_eq(corral.get("/%6D/new", {"Host": HOST}).status, 200, "/%6D/new once normal")
    # "//m/new" is a path, not the authority "m" and the path "/new" (the
    # origin, Python's http.server, reads it as /m/new, as nginx does).
    r = corral.get("//m/new", {"Host": HOST})
    expect(r.status == 200 and r.text in ("//m/new v1", "/m/new v1"),
           f"//m/new once normal: {r!r}")
    expect_eq(origin.count("/new"), 0, "/new asked for //m/new")


@scenario
def changes_from_another_port_or_scheme_of_this_host_are_refused(env):
    # A page the public listener serves (origin HTML) is another origin
    # than the admin listener's, on the same host name.
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}})
    corral.get("/o/1", {"Host": HOST})
    purge = "/purge?" + q(url=f"http://{HOST}/o/1")
    name, port = corral.admin_host, corral.admin_port
    for headers, what in (({"Origin": f"http://{name}:{corral.port}"}, "the public port's page"),
                          ({"Referer": f"http://{name}:{corral.port}/page.html"},
                           "the public port's page (Referer)"),
                          ({"Origin": f"https://{name}:{port}"}, "https on the admin port"),
                          ({"Origin": f"http://{name}"}, "port 80 of this host"),
                          ({"Host": f"localhost:{port}", "Origin": f"http://localhost:{port + 1}"},
                           "another port of localhost")):
        r = ask(corral, "POST", purge, headers=headers)
        expect_eq(r.status, 403, f"purge from {what}: {r.text!r}")
        expect(redis.exists(entry_key("/o/1")), f"the entry survives a purge from {what}")
    expect("another origin" in corral.log(), "the refusal logged")
    r = ask(corral, "POST", purge, headers={"Origin": f"HTTP://{name}:{port}",
                                            "Referer": f"http://{name}:{port}/"})
    expect_eq(r.status, 200, f"purge from the listener's own origin: {r.text!r}")


@scenario
def reads_through_a_name_that_is_not_the_listeners_are_refused(env):
    # DNS rebinding: a page whose name now points at the admin address
    # reads /stats, /metrics and /entry as its own, without a token.
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}},
                        extra={"server": {"admin_hosts": "admin.example"}})
    corral.get("/r/1", {"Host": HOST})
    port = corral.admin_port
    reads = ("/stats", "/stats.txt", "/metrics", "/maintenance", "/",
             "/entry?" + q(url=f"http://{HOST}/r/1"))
    for path in reads:
        for method in ("GET", "HEAD"):
            r = ask(corral, method, path, headers={"Host": f"evil.example:{port}"})
            expect_eq(r.status, 403, f"{method} {path} through a rebound name")
        expect_eq(ask(corral, "GET", path, headers={"Host": f"admin.example:{port}"}).status,
                  200, f"{path} through a name of admin_hosts")
        expect_eq(ask(corral, "GET", path, headers={"Host": "localhost"}).status, 200,
                  f"{path} through localhost")
    r = raw_exchange(corral.admin_host, port, b"GET /stats HTTP/1.0\r\n\r\n")
    expect_eq(r.status, 403, f"/stats without a Host: {r!r}")
    r = ask(corral, "GET", "/health", headers={"Host": f"evil.example:{port}"})
    expect_eq(r.status, 200, "/health stays open to any name, for load balancers")
    expect("admin: 403 GET /stats from 127.0.0.1: Host must name this listener" in corral.log(),
           "the refusal logged, with the peer")


@scenario
def refusals_are_logged_twenty_a_second_and_the_rest_counted(env):
    """A flood of refused admin requests costs at most 20 log lines a
    second; the next second's first line says how many were not logged."""
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin)
    hidden = re.compile(r"admin: (\d+) more refusals not logged")
    sent = 0
    while not hidden.search(corral.log()) and sent < 5000:
        ask(corral, "GET", "/stats", headers={"Host": "evil.example"})
        sent += 1
    log = corral.log().splitlines()
    at = next((i for i, line in enumerate(log) if hidden.search(line)), None)
    expect(at is not None, f"no second of {sent} refusals had more than 20 of them")
    seconds = {}
    for line in log[:at]:
        if "admin: 403 GET /stats from" in line:
            seconds[line[:19]] = seconds.get(line[:19], 0) + 1	# its second
    busiest = max(seconds.values())
    expect_eq(busiest, 20, f"refusals logged in the busiest second ({seconds})")
    expect(int(hidden.search(log[at]).group(1)) >= 1, f"the count: {log[at]!r}")


@scenario
def bearer_token_must_stand_alone_in_one_authorization_field(env):
    redis, origin = env.redis(), env.origin()
    corral, _ = tokens_corral(env, redis, origin)
    for value in (f"Bearer {FULL} junk", f"Bearer {FULL} {FULL}", f"Bearer\t{FULL}",
                  f"Bearer{FULL}", "Bearer ", f"Token {FULL}", f"{FULL}"):
        r = ask(corral, "GET", "/stats", headers={"Authorization": value})
        expect_eq(r.status, 401, f"Authorization: {value!r}")
    for value in (f"bearer {FULL}", f"BEARER   {FULL}"):
        r = ask(corral, "GET", "/stats", headers={"Authorization": value})
        expect_eq(r.status, 200, f"Authorization: {value!r} (RFC 6750: any case, 1*SP)")
    host = f"{corral.admin_host}:{corral.admin_port}"
    r = raw_exchange(corral.admin_host, corral.admin_port,
                     f"GET /stats HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {FULL}\r\n"
                     f"Authorization: Bearer {OTHER}\r\nConnection: close\r\n\r\n".encode())
    expect_eq(r.status, 401, f"two Authorization fields: {r!r}")
    log = corral.log()
    expect(FULL not in log and OTHER not in log, "no token in the log")


OUTSIDE_MAX = 8		# admin connections a worker keeps for peers outside admin_allow
OUTSIDER = "127.0.0.2"	# a loopback address outside admin_allow = 127.0.0.1/32


def ask_from(corral, source, path):
    """GET path on the admin listener from the address source: a RawReply."""
    addr = (corral.admin_host, corral.admin_port)
    with socket.create_connection(addr, 10, source_address=(source, 0)) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: {addr[0]}:{addr[1]}\r\n"
                  "Connection: close\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    return RawReply(data, "eof")



@scenario
def idle_connections_from_outside_admin_allow_never_lock_the_operators_out(env):
    idle = 400
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, extra={"server": {"admin_allow": "127.0.0.1/32",
                                                         "admin_max_connections": "16"}})
    expect_eq(ask_from(corral, OUTSIDER, "/stats").status, 403, "/stats from outside")
    expect_eq(ask_from(corral, OUTSIDER, "/health").status, 200, "/health from outside")
    socks, got, closed = [], {}, set()
    try:
        for _ in range(idle):
            s = socket.create_connection((corral.admin_host, corral.admin_port), 10,
                                         source_address=(OUTSIDER, 0))
            s.setblocking(False)
            socks.append(s)
        wait_for(lambda: closed_by_server(socks, got, closed) >= idle - OUTSIDE_MAX,
                 timeout=20, what=f"corral to turn away {idle - OUTSIDE_MAX} connections from "
                 "outside admin_allow")
        expect_eq(len(closed), idle - OUTSIDE_MAX, "connections from outside turned away")
        expect(all(got.get(s, b"").startswith(b"HTTP/1.1 503 ") and
                   b"outside admin_allow" in got[s] for s in closed),
               f"each with a 503: {set(got.get(s, b'')[-60:] for s in closed)}")
        for i in range(20):	# more than admin_max_connections, one after another
            r = corral.admin("GET", "/stats")
            expect_eq(r.status, 200, f"/stats {i} from 127.0.0.1 with {idle} held from outside")
        a = r.json()["admin"]
        expect_eq((a["outside"], a["refused"]), (OUTSIDE_MAX, idle - OUTSIDE_MAX),
                  f"/stats admin: {a}")
        expect_eq(ask_from(corral, OUTSIDER, "/health").status, 503,
                  "/health from outside, its connections all held")
        expect_eq(ask_from(corral, "127.0.0.1", "/health").status, 200,
                  "/health from 127.0.0.1 meanwhile")
    finally:
        for s in socks:
            s.close()
    wait_for(lambda: ask_from(corral, OUTSIDER, "/health").status == 200, timeout=10,
             what="/health from outside once its connections closed")
    expect("outside admin_allow" in corral.log(), "the log says why")
