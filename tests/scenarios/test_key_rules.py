# SPDX-License-Identifier: MIT
"""What a cache key is made of, beyond the URL: query rules that drop
cache-busters (key_ignore_query) or keep only some names (key_query),
request headers (key_headers), the credential (cache_authorized =
per-credential, keyed on an HMAC of the token), and POST queries
(cache_post, graphql). Each still costs the fleet one origin fetch per key,
and no answer is ever served to another credential."""

import hashlib
import hmac
import json
import os
import struct

from harness import HOST, PREFIX, expect, expect_eq, raw_exchange, scenario, stampede, wait_for

SECRET = "k3y-rules-test-secret-0123456789abcdef"
TOKEN_A = "Bearer tokenAAAA.aaaa.1111"
TOKEN_B = "Bearer tokenBBBB.bbbb.2222"

BUSTED = {"/": {"key_ignore_query": "_, utm_*, fbclid", "lock_poll": "5s"}}
PER_CREDENTIAL = {"/": {"cache_authorized": "per-credential", "lock_poll": "5s"}}
GRAPHQL = {"/graphql": {"cache_post": "on", "graphql": "on", "lock_poll": "5s"},
           "/": {}}
QUERY = {"query": "query Me($id: ID!) { user(id: $id) { name } }",
         "operationName": "Me", "variables": {"id": "7"}}


def secret_file(env, text=SECRET, mode=0o600):
    path = os.path.join(env.workdir, "key.secret")
    with open(path, "w") as f:
        f.write(text + "\n")
    os.chmod(path, mode)
    return path


def with_secret(env):
    return {"server": {"key_secret_file": secret_file(env)}}


def gql(doc, **more):
    return json.dumps(dict(doc, **more)).encode()


def post(c, path, body, headers=None):
    h = {"Content-Type": "application/json"}
    h.update(headers or {})
    return c.get(path, h, method="POST", body=body)


def origin_total(origin, prefix):
    return sum(s["count"] for p, s in origin.stats()["paths"].items() if p.startswith(prefix))


# -- query rules ------------------------------------------------------------------------

@scenario
def cache_busted_requests_for_one_page_cost_one_fetch(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/page*", delay_ms=300, body="page {path}")
    fleet = env.fleet(2, redis, origin, routes=BUSTED)
    results = stampede(fleet, 30, lambda i: f"/page?id=7&_={1712345678 + i}&utm_source=s{i}"
                       f"&fbclid=f{i}")
    expect_eq(origin_total(origin, "/page"), 1, "origin requests for 30 cache-busted requests")
    first = results[0].body
    expect(first.startswith(b"page /page?id=7&_="), f"the answer: {first!r}")
    expect_eq({r.body for r in results}, {first}, "every client's body")
    expect(all(r.cache_status.params.get("key") == "query-rules" for r in results),
           f"Cache-Status names the rule: {results[0].cache_status.raw}")
    sent = [p for p in origin.stats()["paths"] if p.startswith("/page")]
    expect(len(sent) == 1 and "_=" in sent[0] and "utm_source=" in sent[0],
           f"the request sent upstream keeps its query as the client sent it: {sent}")
    # Another id is another page; another buster is the same one.
    expect_eq(fleet[0].get("/page?id=8&_=1").text, "page /page?id=8&_=1", "another id")
    expect_eq(origin_total(origin, "/page"), 2, "origin requests after another id")
    r = fleet[1].get("/page?_=99&id=7&fbclid=x")
    expect_eq((r.body, r.cache_status.hit), (first, True), "another buster: a hit")
    # A purge by URL applies the same rules: any buster names the page.
    p = fleet[0].purge(url=f"http://{HOST}/page?id=7&_=5")
    expect_eq((p.status, p.json()["purged"]), (200, 1), "purge by a busted URL")
    r = fleet[1].get("/page?id=7&_=6")
    expect_eq((r.text, r.cache_status.fwd), ("page /page?id=7&_=6", "miss"),
              "after the purge: fetched")
    expect_eq(origin_total(origin, "/page"), 3, "origin requests after the purge")


@scenario
def a_semicolon_cannot_cloak_a_parameter_the_key_ignores(env):
    """Origins that split on ';' read ?id=1&utm_x=a;id=666 as id=666: the
    piece is kept in the key, so that answer is never served for id=1."""
    redis, origin = env.redis(), env.origin()
    origin.script("/page*", body="page {path}")
    corral = env.corral(redis, origin, routes=BUSTED)
    expect_eq(corral.get("/page?id=1").text, "page /page?id=1", "id=1")
    r = corral.get("/page?id=1&utm_x=a;id=666")
    expect_eq((r.text, r.cache_status.hit), ("page /page?id=1&utm_x=a;id=666", False),
              "a ';' piece that is not all ignored: its own key")
    r = corral.get("/page?id=1&utm_x=b;_=5")
    expect_eq((r.text, r.cache_status.hit), ("page /page?id=1", True),
              "a ';' piece all ignored: id=1's entry")
    expect_eq(origin_total(origin, "/page"), 2, "origin requests")


@scenario
def key_query_keeps_only_the_names_listed(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/q*", body="q {path}")
    corral = env.corral(redis, origin, routes={"/": {"key_query": "id, page"}})
    expect_eq(corral.get("/q?id=1&x=1").text, "q /q?id=1&x=1", "first")
    expect_eq(corral.get("/q?x=2&id=1&session=z").text, "q /q?id=1&x=1",
              "unlisted names are ignored")
    expect_eq(corral.get("/q?id=1&page=2").text, "q /q?id=1&page=2", "a listed name counts")
    expect_eq(corral.get("/q?id=2").text, "q /q?id=2", "another id")
    expect_eq(origin_total(origin, "/q"), 3, "origin requests")
    # Names PHP, ASP.NET or a loose parser read as id are keyed, not dropped.
    for extra in ("ID=9", "id%5B%5D=9", "id[]=9", "%20id=9", "id%00=9", "Id=9"):
        r = corral.get(f"/q?id=1&{extra}")
        expect(r.text != "q /q?id=1&x=1", f"?id=1&{extra} is not ?id=1's entry: "
                                          f"{r.cache_status.raw} {r.text}")


@scenario
def key_headers_key_on_normalised_header_values(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/h", body="lang={h:Accept-Language} v{n}")
    corral = env.corral(redis, origin, routes={"/": {"key_headers": "Accept-Language, X-Tenant"}})
    expect_eq(corral.get("/h", {"Accept-Language": "en-US"}).text, "lang=en-US v1", "en")
    r = corral.get("/h", {"accept-language": "  en-US  "})
    expect_eq((r.text, r.cache_status.hit, r.cache_status.params.get("key")),
              ("lang=en-US v1", True, "headers"), "the same value, padded: a hit")
    expect_eq(corral.get("/h", {"Accept-Language": "fr"}).text, "lang=fr v2", "fr: its own")
    expect_eq(corral.get("/h", {"Accept-Language": "en-US", "X-Tenant": "t1"}).text,
              "lang=en-US v3", "a tenant: its own")
    expect_eq(origin.count("/h"), 3, "origin requests")
    # A value too long to key whole (past 1 KiB) is never keyed cut: not cached.
    long = "t" * 1100
    for i, tenant in enumerate((long + "A", long + "B")):
        r = corral.get("/h", {"Accept-Language": "en-US", "X-Tenant": tenant})
        expect_eq((r.text, r.cache_status.hit), (f"lang=en-US v{4 + i}", False),
                  f"a tenant of {len(tenant)} bytes ending in {tenant[-1]}")


# -- per-credential caching -------------------------------------------------------------

@scenario
def twenty_clients_per_token_cost_one_fetch_per_token(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/me", delay_ms=400, body="user={h:Authorization} n={n}")
    fleet = env.fleet(2, redis, origin, routes=PER_CREDENTIAL, extra=with_secret(env))
    token = [TOKEN_A if i % 4 < 2 else TOKEN_B for i in range(40)]
    results = stampede(fleet, 40, "/me", headers=lambda i: {"Authorization": token[i]})
    expect_eq(origin.count("/me"), 2, "origin requests for 20 clients with A, 20 with B")
    for i, r in enumerate(results):
        expect(r.status == 200 and r.body.startswith(f"user={token[i]} ".encode()),
               f"client {i} ({token[i]}) got its own token's answer: {r.body!r}")
        expect_eq(r.cache_status.params.get("key"), "credential", f"client {i}'s key rule")
    for c in fleet:
        r = c.get("/me", {"Authorization": TOKEN_A})
        expect(r.cache_status.hit and r.text.startswith(f"user={TOKEN_A} "),
               f"a later request with A is a hit with A's answer: {r.cache_status.raw} {r.text}")
    # No token in a Redis key, /stats, a log line or a response head.
    secrets = ("tokenAAAA", "tokenBBBB")
    keys = redis.keys("*")
    expect(keys and not any(s in k for k in keys for s in secrets), f"Redis keys: {keys}")
    for c in fleet:
        stats = json.dumps(c.stats())
        expect(not any(s in stats for s in secrets), "no token in /stats")
        expect(not any(s in c.log() for s in secrets), "no token in the log")
        expect(c.counters("/")["key_credential_hits"] >= 1, "per-rule hits in /stats")
        r = c.get("/me", {"Authorization": TOKEN_B})
        head = "".join(f"{k}: {v}\n" for k, v in r.headers.pairs)
        expect(not any(s in head for s in secrets), f"no token in the reply head: {head}")
    stores = sum(c.counters("/")["key_credential_stores"] for c in fleet)
    expect_eq(stores, 2, "entries stored under per-credential keys")


@scenario
def a_request_without_a_token_is_never_served_a_tokens_answer(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/me", body="user={h:Authorization} n={n}")
    corral = env.corral(redis, origin, routes=PER_CREDENTIAL, extra=with_secret(env))
    expect_eq(corral.get("/me", {"Authorization": TOKEN_A}).text, f"user={TOKEN_A} n=1", "A")
    expect_eq(corral.get("/me").text, "user= n=2", "anonymous: its own entry")
    expect_eq(corral.get("/me", {"Authorization": TOKEN_A + "x"}).text,
              f"user={TOKEN_A}x n=3", "a changed token: a new key")
    expect_eq(corral.get("/me").text, "user= n=2", "anonymous again: a hit")


@scenario
def a_credential_cookie_is_keyed_and_is_the_only_cookie_sent(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/me", body="n={n}")
    routes = {"/": {"cache_authorized": "per-credential", "credential_cookie": "sid"}}
    corral = env.corral(redis, origin, routes=routes, extra=with_secret(env))
    for cookie in ("track=a; sid=s1", "track=b; sid=s1", "sid=s1; track=z", "sid=s1"):
        r = corral.get("/me", {"Cookie": cookie})
        expect_eq((r.text, r.cache_status.params.get("key")), ("n=1", "credential"),
                  f"Cookie: {cookie}")
    expect_eq(origin.path_stats("/me")["headers"].get("Cookie"), "sid=s1",
              "the fetch sends only the cookie the key holds")
    # A value that differs at its end, its start or its middle: its own.
    for n, sid in enumerate(("s2", "t1", "s11", "s21"), start=2):
        expect_eq(corral.get("/me", {"Cookie": f"sid={sid}"}).text, f"n={n}",
                  f"sid={sid}: its own entry")
    r = corral.get("/me", {"Cookie": "track=c"})
    expect_eq(r.text, "n=6", "no sid: the URL's own entry")
    expect("Cookie" not in origin.path_stats("/me")["headers"], "and no cookie sent")
    # A name that starts or ends with sid, or holds it, is another cookie.
    for cookie in ("sidebar=s1", "xsid=s1", "sid_x=s1; track=d", "sidsid=s1"):
        r = corral.get("/me", {"Cookie": cookie})
        expect_eq((r.text, r.cache_status.hit, r.cache_status.params.get("key")),
                  ("n=6", True, None), f"{cookie}: no sid, the URL's own entry")
    origin.script("/you", body="n={n}")
    r = corral.get("/you", {"Cookie": "sidebar=s1; xsid=s2"})
    expect_eq((r.text, r.cache_status.params.get("key")), ("n=1", None),
              "a miss with sidebar and xsid: not keyed as the credential")
    expect("Cookie" not in origin.path_stats("/you")["headers"],
           f"cookies sent that are not sid: {origin.path_stats('/you')['headers']}")
    expect_eq(corral.get("/you").text, "n=1", "the URL's own entry, without any cookie")


@scenario
def purge_by_url_drops_every_credentials_entry(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/me", body="user={h:Authorization} n={n}")
    corral = env.corral(redis, origin, routes=PER_CREDENTIAL, extra=with_secret(env))
    for t in (TOKEN_A, TOKEN_B):
        corral.get("/me", {"Authorization": t})
    expect_eq(origin.count("/me"), 2, "one fetch per token")
    p = corral.purge(url=f"http://{HOST}/me")
    expect_eq((p.status, p.json()["purged"]), (200, 2), "purge by URL: both credentials")
    for t in (TOKEN_A, TOKEN_B):
        r = corral.get("/me", {"Authorization": t})
        expect_eq(r.cache_status.fwd, "miss", f"{t[:12]} after the purge")
    expect_eq(origin.count("/me"), 4, "fetched again per token")


@scenario
def an_operators_refresh_never_fetches_a_credentials_entry_without_it(env):
    """POST /refresh reaches per-credential entries by prefix: they are
    purged softly and left to their own credential's next request, never
    fetched with no credential and stored under that credential's key."""
    redis, origin = env.redis(), env.origin()
    origin.script("/me", body="user={h:Authorization} n={n}")
    corral = env.corral(redis, origin, routes=PER_CREDENTIAL, extra=with_secret(env))
    expect_eq(corral.get("/me", {"Authorization": TOKEN_A}).text, f"user={TOKEN_A} n=1", "A")
    expect_eq(corral.get("/me").text, "user= n=2", "anonymous")
    r = corral.admin("POST", f"/refresh?prefix={HOST}/me", timeout=30)
    expect_eq(r.status, 200, f"refresh: {r.text}")
    answer = r.json()
    expect_eq((answer["scheduled"], answer["skipped"]), (1, 1),
              f"the anonymous entry refreshed, A's left stale: {answer}")
    wait_for(lambda: origin.count("/me") == 3, what="the anonymous entry refreshed")
    r = corral.get("/me", {"Authorization": TOKEN_A})
    expect(r.text.startswith(f"user={TOKEN_A} "),
           f"A is still served A's answer after the refresh: {r.text}")
    wait_for(lambda: origin.count("/me") == 4, what="A's own stale refresh")
    # Fetched, then stored: until the store ends A is answered stale.
    wait_for(lambda: corral.get("/me", {"Authorization": TOKEN_A}).text ==
             f"user={TOKEN_A} n=4", what="A refreshed by its own request")
    expect_eq(origin.count("/me"), 4, "no other fetch of A's")
    expect_eq(corral.get("/me").text, "user= n=3", "anonymous: the operator's refresh")


@scenario
def hit_for_miss_is_kept_per_credential(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/me", body="user={h:Authorization} n={n}", headers={"Cache-Control": "private"})
    corral = env.corral(redis, origin, routes=PER_CREDENTIAL, extra=with_secret(env))
    for i in range(3):
        r = corral.get("/me", {"Authorization": TOKEN_A})
        expect_eq(r.text, f"user={TOKEN_A} n={i + 1}", f"A's request {i}: never stored")
    expect_eq(corral.counters("/")["hit_for_miss"], 2, "A's key remembered as uncacheable")
    origin.script("/me", body="user={h:Authorization} n={n}", headers={})
    r = corral.get("/me", {"Authorization": TOKEN_B})
    expect_eq((r.text, r.cache_status.stored), (f"user={TOKEN_B} n=4", True),
              "B's key is its own: stored")


@scenario
def a_token_on_a_route_without_per_credential_keeps_todays_behaviour(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/p/*", body="user={h:Authorization} n={n}",
                  headers={"Cache-Control": "public"})
    corral = env.corral(redis, origin, routes={"/p/shared/": {"cache_authorized": "on"},
                                               "/p/": {}})
    for i in range(3):
        r = corral.get("/p/off", {"Authorization": TOKEN_A})
        expect_eq((r.cache_status.fwd, r.cache_status.params.get("key")), ("bypass", None),
                  f"cache_authorized = off: passed {i}")
    expect_eq(origin.count("/p/off"), 3, "off: every request fetched")
    for t in (TOKEN_A, TOKEN_B):
        corral.get("/p/shared/x", {"Authorization": t})
    expect_eq(origin.count("/p/shared/x"), 1, "on: one entry for every token, as before")


@scenario
def twenty_clients_per_api_key_cost_one_fetch_per_key(env):
    """credential_header = X-API-Key: the key holds that header's digest,
    and an Authorization the key does not hold is never sent upstream."""
    redis, origin = env.redis(), env.origin()
    origin.script("/me", delay_ms=400,
                  body="key={h:X-API-Key} auth={h:Authorization} n={n}")
    routes = {"/": {"cache_authorized": "per-credential", "credential_header": "X-API-Key",
                    "lock_poll": "5s"}}
    fleet = env.fleet(2, redis, origin, routes=routes, extra=with_secret(env))
    key = ["key-AAAA-1111" if i % 4 < 2 else "key-BBBB-2222" for i in range(40)]
    results = stampede(fleet, 40, "/me", headers=lambda i: {
        "X-API-Key": key[i], "Authorization": f"Bearer other-{i}"})
    expect_eq(origin.count("/me"), 2, "origin requests for 20 clients with A, 20 with B")
    for i, r in enumerate(results):
        expect(r.status == 200 and r.body.startswith(f"key={key[i]} auth= ".encode()),
               f"client {i} ({key[i]}) got its own key's answer, fetched without "
               f"Authorization: {r.body!r}")
        expect_eq(r.cache_status.params.get("key"), "credential", f"client {i}'s key rule")
    r = fleet[1].get("/me", {"X-API-Key": "key-AAAA-1111"})
    expect(r.cache_status.hit and r.text.startswith("key=key-AAAA-1111 "),
           f"a later request with A is a hit with A's answer: {r.cache_status.raw} {r.text}")
    # Without the key: the URL's own entry, and no Authorization sent.
    r = fleet[0].get("/me", {"Authorization": "Bearer tokenAAAA"})
    expect_eq((r.text, r.cache_status.params.get("key")), ("key= auth= n=3", None),
              "Authorization alone: the URL's entry, fetched without it")
    r = fleet[1].get("/me", {"Authorization": "Bearer tokenBBBB"})
    expect_eq(r.text, "key= auth= n=3", "another Authorization: the same URL entry")
    keys = redis.keys("*")
    expect(not any(s in k for k in keys for s in ("key-AAAA", "key-BBBB", "token")),
           f"no credential in a Redis key: {keys}")


@scenario
def per_credential_needs_a_private_secret_file(env):
    routes = {"/": {"cache_authorized": "per-credential"}}
    cfg = env.config_file(
        f"[server]\nlisten = 127.0.0.1:1\nadmin_listen = 127.0.0.1:2\n[route /]\n"
        f"cache_authorized = per-credential\n", "nosecret.conf")
    p = env.run_corral("-t", "-c", cfg)
    expect(p.returncode != 0 and "key_secret_file" in p.stderr,
           f"per-credential without a secret is refused: {p.stderr}")
    loose = secret_file(env, mode=0o644)
    cfg = env.config_file(
        f"[server]\nlisten = 127.0.0.1:1\nadmin_listen = 127.0.0.1:2\n"
        f"key_secret_file = {loose}\n[route /]\ncache_authorized = per-credential\n",
        "loose.conf")
    p = env.run_corral("-t", "-c", cfg)
    expect(p.returncode != 0 and "readable by others" in p.stderr,
           f"a secret others may read is refused: {p.stderr}")
    del routes


# -- Vary on a credential ---------------------------------------------------------------

def unkeyed_variant_id(spec, headers):
    """The variant id a request once had: FNV-1a (proxy_vary.c's start) of
    the Vary names and the raw values, a credential's included."""
    h = 1469598103934665603

    def fnv(h, data):
        for b in data:
            h = ((h ^ b) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
        return h
    for name in (n.strip() for n in spec.split(",")):
        if not name or name.lower() == "accept-encoding":
            continue
        h = fnv(fnv(h, name.lower().encode()), b"\0")
        for k, v in headers.items():
            if k.lower() == name.lower():
                h = fnv(fnv(h, v.encode()), b",")
        h = fnv(h, b"\1")
    return "%016x" % h


def variant_id(spec, headers, secret=""):
    """A variant id as proxy_vary.c makes it: 128 bits of HMAC-SHA-256,
    keyed with the key secret (none: empty), over the label, then each
    name ('N' and the name lower-cased) and its values ('V', the value),
    each part prefixed with its length (8 bytes, little-endian)."""
    m = hmac.new(secret.encode(), digestmod=hashlib.sha256)

    def part(data):
        m.update(struct.pack("<Q", len(data)) + data)
    part(b"variant")
    for name in (n.strip() for n in spec.split(",")):
        if not name or name.lower() == "accept-encoding":
            continue
        part(b"N" + name.lower().encode())
        for k, v in headers.items():
            if k.lower() == name.lower():
                part(b"V")
                part(v.encode())
    return m.hexdigest()[:32]


@scenario
def vary_on_a_credential_keeps_no_unkeyed_hash_of_it_in_redis(env):
    """Vary: Authorization makes a variant per token. With a key secret its
    id holds the token's HMAC, never a hash anyone can test guesses
    against; on a per-credential route the key holds the token's digest
    already, and no variant is made."""
    redis, origin = env.redis(), env.origin()
    origin.script("/v/*", body="user={h:Authorization} n={n}",
                  headers={"Vary": "Authorization", "Cache-Control": "public"})
    routes = {"/v/on/": {"cache_authorized": "on"},
              "/v/pc/": {"cache_authorized": "per-credential"}}
    corral = env.corral(redis, origin, routes=routes, extra=with_secret(env))
    for path in ("/v/on/x", "/v/pc/x"):
        for i, t in enumerate((TOKEN_A, TOKEN_B)):
            r = corral.get(path, {"Authorization": t})
            expect_eq(r.text, f"user={t} n={i + 1}", f"{path}: {t[:12]}'s own answer")
        for i, t in enumerate((TOKEN_A, TOKEN_B)):
            r = corral.get(path, {"Authorization": t})
            expect_eq((r.text, r.cache_status.hit), (f"user={t} n={i + 1}", True),
                      f"{path}: {t[:12]} again: a hit on its own")
        expect_eq(origin.count(path), 2, f"{path}: one fetch per token")
    keys = redis.keys("*")
    tokens = [{"Authorization": t} for t in (TOKEN_A, TOKEN_B)]
    ids = [unkeyed_variant_id("Authorization", h) for h in tokens] + \
        [variant_id("Authorization", h) for h in tokens]
    expect(not any(i in k for k in keys for i in ids),
           f"no unkeyed hash of a token in a Redis key: {ids} in {keys}")
    on = [k.rpartition(":")[2] for k in keys if k.startswith(f"{PREFIX}{{{HOST}/v/on/x}}:entry:")]
    expect_eq(sorted(on), sorted(variant_id("Authorization", h, SECRET) for h in tokens),
              "the shared route's variant per token, keyed with the secret")
    expect(not any("/v/pc/x" in k and not k.endswith("}:entry") for k in keys),
           f"the per-credential route makes no variants: {keys}")


# -- POST queries -----------------------------------------------------------------------

@scenario
def identical_graphql_queries_cost_one_fetch_and_mutations_always_go(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/graphql", delay_ms=300, body="gql n={n}")
    fleet = env.fleet(2, redis, origin, routes=GRAPHQL)
    body = gql(QUERY)
    results = stampede(fleet, 30, "/graphql", method="POST", body=body,
                       headers={"Content-Type": "application/json"})
    expect_eq(origin.count("/graphql"), 1, "origin requests for 30 identical queries")
    expect_eq(sorted({r.body for r in results}), [b"gql n=1"], "every client's body")
    expect_eq(results[0].cache_status.params.get("key"), "graphql", "the key rule")
    expect_eq(origin.path_stats("/graphql")["texts"], [body.decode()], "the body sent, once")
    # The same query written otherwise (spacing) is the same key; one with
    # extensions (which a server may act on: tracing, a persisted query)
    # is a key of its own.
    r = post(fleet[1], "/graphql", json.dumps(QUERY, indent=2).encode())
    expect_eq((r.text, r.cache_status.hit), ("gql n=1", True), "same query, other JSON text")
    r = post(fleet[1], "/graphql", gql(QUERY, extensions={"trace": 1}))
    expect_eq(r.text, "gql n=2", "same query with extensions: another fetch")
    r = post(fleet[0], "/graphql", gql(QUERY, variables={"id": "8"}))
    expect_eq(r.text, "gql n=3", "other variables: another fetch")
    expect_eq(origin.count("/graphql"), 3, "origin requests after another query")
    mutation = gql({"query": "mutation { like(id: 7) { n } }"})
    for i in range(3):
        r = post(fleet[i % 2], "/graphql", mutation)
        expect_eq((r.text, r.cache_status.fwd), (f"gql n={4 + i}", "method"),
                  f"mutation {i}: sent every time")
    expect_eq(origin.count("/graphql"), 6, "origin requests after 3 mutations")
    expect_eq(sum(c.counters("/graphql")["key_graphql_stores"] for c in fleet), 3,
              "stored queries")
    expect_eq(sum(c.counters("/graphql")["post_passed"] for c in fleet), 3, "mutations passed")


@scenario
def plain_post_is_keyed_on_a_hash_of_its_body(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/rpc/report", body="report n={n}")
    corral = env.corral(redis, origin, routes={"/rpc/": {"cache_post": "on",
                                                         "max_body_bytes": "1k"}})
    for i in range(3):
        r = post(corral, "/rpc/report", b'{"from": 1, "to": 2}')
        expect_eq(r.text, "report n=1", f"identical POST {i}")
    expect_eq(r.cache_status.params.get("key"), "post", "the key rule")
    expect_eq(post(corral, "/rpc/report", b'{"to": 2, "from": 1}').text, "report n=2",
              "another body: another key (no normalisation)")
    expect_eq(corral.get("/rpc/report").text, "report n=3", "a GET is not the POST's entry")
    big = b'{"pad": "' + b"x" * 2000 + b'"}'
    for i in range(2):
        r = post(corral, "/rpc/report", big)
        expect_eq(r.cache_status.fwd, "method", f"a body over max_body_bytes passes {i}")
    expect_eq(origin.count("/rpc/report"), 5, "origin requests")
    # At max_body_bytes (1 KiB) exactly, a body is keyed; one byte more, passed.
    at = b'{"pad": "' + b"y" * (1024 - 11) + b'"}'
    expect_eq(len(at), 1024, "the body at the bound")
    for i in range(2):
        r = post(corral, "/rpc/report", at)
        expect_eq((r.text, r.cache_status.hit), ("report n=6", i == 1), f"1024 bytes, {i}")
    past = at[:-2] + b'y"}'
    for i in range(2):
        r = post(corral, "/rpc/report", past)
        expect_eq(r.cache_status.fwd, "method", f"1025 bytes passes, {i}")
    expect_eq(origin.count("/rpc/report"), 8, "origin requests")
    keys = [k for k in redis.keys("*") if "rpc/report" in k]
    expect(not any("from" in k for k in keys), f"no body in a Redis key: {keys}")


@scenario
def a_post_is_keyed_on_its_one_content_type_with_its_parameters_values_as_sent(env):
    """Media type and parameter names are case-insensitive, a boundary is
    not (RFC 9110 8.3.1, RFC 2046); two Content-Type lines, which an
    origin may read either of, are not cached."""
    from harness import raw_exchange
    redis, origin = env.redis(), env.origin()
    origin.script("/rpc/form", body="form n={n}")
    corral = env.corral(redis, origin, routes={"/rpc/": {"cache_post": "on"}})
    body = b"--abc\r\n\r\nx\r\n--abc--\r\n"

    def send(*ctypes):
        head = b"".join(b"Content-Type: " + c.encode() + b"\r\n" for c in ctypes)
        return raw_exchange(corral.host, corral.port,
                            b"POST /rpc/form HTTP/1.1\r\nHost: " + HOST.encode() + b"\r\n" +
                            head + b"Content-Length: %d\r\nConnection: close\r\n\r\n" %
                            len(body) + body)
    expect_eq(send("multipart/form-data; boundary=abc").body, b"form n=1", "the first")
    r = send("Multipart/Form-Data; Boundary=abc")
    expect_eq((r.body, r.cache_status.hit), (b"form n=1", True),
              "media type and parameter name in another case: the same key")
    expect_eq(send("multipart/form-data; boundary=AbC").body, b"form n=2",
              "a boundary in another case: another key")
    for i in range(2):
        r = send("multipart/form-data; boundary=abc", "text/plain")
        expect_eq((r.body, r.cache_status.fwd), (b"form n=%d" % (3 + i), "method"),
                  f"two Content-Type lines: passed ({i})")
    # A POST that passes is a write of unknown safety: it invalidated the
    # target's entries (RFC 9111 4.4).
    r = send("multipart/form-data; boundary=abc")
    expect_eq((r.body, r.cache_status.stored), (b"form n=5", True),
              "one line again: fetched and stored anew")


def expect_body_replayed(origin, corral, stored):
    """A refresh of a cached POST sent the stored body again, as a POST, and
    its answer replaced the entry."""
    expect_eq(origin.path_stats("/graphql")["texts"], [stored.decode()] * 2,
              "the origin got the stored body both times")
    expect_eq(origin.path_stats("/graphql")["methods"], {"POST": 2}, "methods")
    wait_for(lambda: post(corral, "/graphql", stored).text == "gql n=2", 30,
             what="the refreshed entry")


@scenario
def a_stale_post_entry_refreshes_in_the_background_with_its_stored_body(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/graphql", body="gql n={n}")
    corral = env.corral(redis, origin, routes={
        "/graphql": {"cache_post": "on", "graphql": "on", "ttl": "1s",
                     "stale_while_revalidate": "60s"}})
    stored = gql(QUERY)
    expect_eq(post(corral, "/graphql", stored).text, "gql n=1", "priming query")
    # The same query in other words: served stale, the refresh sends the
    # body stored with the entry.
    other = json.dumps(dict(reversed(list(QUERY.items()))), indent=1).encode()
    r = wait_for(lambda: (lambda x: x if x.cache_status.stale else None)(
        post(corral, "/graphql", other)), 30, what="a stale hit")
    expect_eq(r.text, "gql n=1", "the stale answer")
    wait_for(lambda: origin.count("/graphql") == 2, 30, what="the background refresh")
    expect_body_replayed(origin, corral, stored)


@scenario
def a_post_entry_is_refreshed_without_validators(env):
    """If-None-Match and If-Modified-Since mean nothing to a POST (RFC 9110
    13.1: the origin answers 412, not 304): its refresh is unconditional,
    even when the stored response has an ETag and a Last-Modified."""
    redis, origin = env.redis(), env.origin()
    origin.script("/graphql", body="gql n={n}", etag='"v1"',
                  last_modified="Wed, 01 Jan 2025 00:00:00 GMT")
    corral = env.corral(redis, origin, routes={
        "/graphql": {"cache_post": "on", "graphql": "on", "ttl": "1s",
                     "stale_while_revalidate": "60s"}})
    body = gql(QUERY)
    expect_eq(post(corral, "/graphql", body).text, "gql n=1", "priming query")
    wait_for(lambda: post(corral, "/graphql", body).cache_status.stale, 30,
             what="a stale hit")
    wait_for(lambda: origin.count("/graphql") == 2, 30, what="the background refresh")
    sent = origin.path_stats("/graphql")["requests"][-1]
    expect(not any(k.lower() in ("if-none-match", "if-modified-since") for k in sent),
           f"the refresh carries no validators: {sent}")
    expect_eq(origin.path_stats("/graphql")["statuses"], {"200": 2}, "both answered whole")
    wait_for(lambda: post(corral, "/graphql", body).text == "gql n=2", 30,
             what="the refreshed entry")


@scenario
def an_early_refresh_of_a_post_entry_sends_its_stored_body(env):
    """XFetch refreshes a hot entry before it goes stale: for a cached POST
    with the body stored with the entry, not the body of the hit that
    drew the refresh."""
    redis, origin = env.redis(), env.origin()
    origin.script("/graphql", delay_ms=200, body="gql n={n}")
    corral = env.corral(redis, origin, routes={
        "/graphql": {"cache_post": "on", "graphql": "on", "ttl": "10s",
                     "early_refresh": "on", "early_refresh_beta": "100"}})
    stored = gql(QUERY)
    expect_eq(post(corral, "/graphql", stored).text, "gql n=1", "priming query")
    other = json.dumps(dict(reversed(list(QUERY.items()))), indent=1).encode()

    def drew():
        r = post(corral, "/graphql", other)
        expect((r.text, r.cache_status.hit, r.cache_status.stale) == ("gql n=1", True, False),
               f"a fresh hit on the stored answer: {r.cache_status.raw} {r.text}")
        return corral.counters("/graphql")["early_refreshes"] >= 1
    wait_for(drew, 8, what="a hit that draws an early refresh")
    wait_for(lambda: origin.count("/graphql") == 2, 30, what="the early refresh")
    expect_body_replayed(origin, corral, stored)


@scenario
def the_access_log_names_the_rule_that_made_the_key(env):
    log = os.path.join(env.workdir, "access.log")
    redis, origin = env.redis(), env.origin()
    origin.script("/*", body="n={n}")
    routes = {"/me": {"cache_authorized": "per-credential"},
              "/graphql": {"cache_post": "on", "graphql": "on"},
              "/page": {"key_ignore_query": "_"}, "/": {}}
    corral = env.corral(redis, origin, routes=routes,
                        extra={"server": {"access_log": log, "key_secret_file": secret_file(env)}})
    corral.get("/me", {"Authorization": TOKEN_A})
    post(corral, "/graphql", gql(QUERY))
    corral.get("/page?_=1")
    corral.get("/plain")

    def lines():
        with open(log) as f:
            got = f.read().splitlines()
        return got if len(got) >= 4 else None
    got = wait_for(lines, what="four access log lines")
    want = [("/me", "key=credential"), ("/graphql", "key=graphql"),
            ("/page?_=1", "key=query-rules")]
    for (uri, key), line in zip(want, got):
        expect(f" {uri} HTTP/1.1" in line and line.endswith(f" {key}"),
               f"{uri}: the line ends in {key}: {line}")
    expect(" /plain HTTP/1.1" in got[3] and " key=" not in got[3],
           f"the URL's own key: no key= field: {got[3]}")
    expect(not any("tokenAAAA" in line for line in got), "no token in the log")


@scenario
def graphql_member_names_that_parsers_read_otherwise_are_passed(env):
    """A member name escaped ("qu\\u0065ry") or in another case ("QUERY")
    is the query to some servers, whichever comes last: such a body is
    passed every time, never stored or coalesced."""
    redis, origin = env.redis(), env.origin()
    origin.script("/graphql", body="gql n={n}")
    corral = env.corral(redis, origin, routes=GRAPHQL)
    bodies = [b'{"query":"{ a }","qu\\u0065ry":"mutation { x }"}',
              b'{"query":"{ a }","QUERY":"mutation { x }"}',
              b'{"query":"{ a }","v\\u0061riables":{"id":"7"}}']
    n = 0
    for body in bodies:
        for i in range(2):
            n += 1
            r = post(corral, "/graphql", body)
            expect_eq((r.text, r.cache_status.fwd), (f"gql n={n}", "method"),
                      f"{body!r} {i}: sent, not cached")
    expect_eq(origin.path_stats("/graphql")["texts"],
              [b.decode() for b in bodies for _ in range(2)], "each body sent as it came")
    counters = corral.counters("/graphql")
    expect_eq((counters["key_graphql_stores"], counters["post_passed"]), (0, n),
              "nothing stored, every one passed")
    expect(not [k for k in redis.keys("*") if "graphql" in k],
           f"nothing in Redis for them: {redis.keys('*')}")


@scenario
def graphql_post_with_a_query_string_or_another_type_is_passed(env):
    """express-graphql reads ?query= ahead of the body, and a body sent as
    another type may be read otherwise: only application/json (charset
    utf-8) without a query string is keyed on its body."""
    redis, origin = env.redis(), env.origin()
    origin.script("/graphql*", body="gql n={n}")
    corral = env.corral(redis, origin, routes=GRAPHQL)
    body = gql(QUERY)
    for i in range(2):
        r = post(corral, "/graphql?query=mutation%7Bx%7D", body)
        expect_eq(r.cache_status.fwd, "method", f"with a query string {i}: passed")
    for ctype in ("text/plain", "application/graphql", "application/json; charset=utf-16",
                  "application/x-www-form-urlencoded", "application/json, text/plain"):
        r = post(corral, "/graphql", body, {"Content-Type": ctype})
        expect_eq(r.cache_status.fwd, "method", f"as {ctype}: passed")
    r = corral.get("/graphql", {}, method="POST", body=body)
    expect_eq(r.cache_status.fwd, "method", "no Content-Type: passed")
    twice = (f"POST /graphql HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\n"
             f"Content-Type: application/json\r\nContent-Type: text/plain\r\n"
             f"Content-Length: {len(body)}\r\n\r\n").encode() + body
    r = raw_exchange(corral.host, corral.port, twice)
    expect_eq((r.status, r.cache_status.fwd), (200, "method"), "two Content-Types: passed")
    expect_eq(origin_total(origin, "/graphql"), 9, "every one sent")
    for i in range(2):
        r = post(corral, "/graphql", body, {"Content-Type": "Application/JSON; charset=UTF-8"})
        expect_eq((r.text, r.cache_status.hit), ("gql n=8", i == 1),
                  f"application/json with a charset {i}: cached")
    expect_eq(origin_total(origin, "/graphql"), 10, "one fetch for those")
    expect_eq(corral.counters("/graphql")["post_passed"], 9, "the others passed")
