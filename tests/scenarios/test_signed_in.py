# SPDX-License-Identifier: MIT
"""Signed-in traffic: what a response to a request with credentials may be
given to, the modes of cache_authorized side by side, fields spelled with
'_' that origins read as '-', and GraphQL bodies whose answer depends on
more than their query text."""

import json
import os

from harness import (Background, expect, expect_eq, hfm_key, release_once_joined, scenario,
                     stampede, wait_for)

SECRET = "signed-in-test-secret-0123456789abcdef"


def with_secret(env):
    path = os.path.join(env.workdir, "key.secret")
    with open(path, "w") as f:
        f.write(SECRET + "\n")
    os.chmod(path, 0o600)
    return {"server": {"key_secret_file": path}}


def user(i):
    return f"Bearer user-{i:02d}.token"


# -- cache_authorized = on: a response is shared only when the origin says so --------

@scenario
def cache_authorized_on_never_hands_one_users_answer_to_another(env):
    """RFC 9111 3.5: a response to a request with Authorization goes to
    another request only when it says public, s-maxage or must-revalidate.
    Express's default (no Cache-Control) says none: every waiter of the
    flight gets its own answer, and the key becomes hit-for-miss."""
    redis, origin = env.redis(), env.origin()
    origin.script("/orders", hold=True, body="orders of {h:Authorization}")
    corral = env.corral(redis, origin, routes={"/": {"cache_authorized": "on",
                                                     "lock_poll": "5s"}})
    n = 40
    burst = Background(stampede, [corral], n, "/orders",
                       headers=lambda i: {"Authorization": user(i)})
    release_once_joined(origin, "/orders", [corral], n)
    for i, r in enumerate(burst.result()):
        expect_eq((r.status, r.body.decode()), (200, f"orders of {user(i)}"),
                  f"user {i}'s answer")
        expect(not r.cache_status.hit and not r.cache_status.stored,
               f"user {i}'s answer is neither a hit nor stored: {r.cache_status.raw}")
    expect(redis.exists(hfm_key("/orders")), "the key is remembered as per-user (hit-for-miss)")
    # Hit-for-miss: the next burst goes upstream side by side, not one
    # lock holder at a time (a convoy would hold one request at the origin).
    origin.script("/orders", hold=True, body="orders of {h:Authorization}")
    burst = Background(stampede, [corral], 10, "/orders",
                       headers=lambda i: {"Authorization": user(i)})
    wait_for(lambda: origin.held("/orders") == 10,
             what="all 10 requests of the second burst at the origin at once")
    origin.release("/orders")
    for i, r in enumerate(burst.result()):
        expect_eq(r.body.decode(), f"orders of {user(i)}", f"second burst, user {i}")
    expect(corral.counters("/")["hit_for_miss"] >= 1, "the second burst passed by hit-for-miss")


@scenario
def cache_authorized_on_shares_what_the_origin_says_is_public(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/*", hold=True, body="catalogue n={n}")
    routes = {"/": {"cache_authorized": "on", "lock_poll": "5s"}}
    corral = env.corral(redis, origin, routes=routes)
    for path, cc in (("/public", "public"), ("/s-maxage", "s-maxage=60"),
                     ("/revalidate", "max-age=60, must-revalidate")):
        origin.script(path, hold=True, body="catalogue n={n}", headers={"Cache-Control": cc})
        burst = Background(stampede, [corral], 20, path,
                           headers=lambda i: {"Authorization": user(i)})
        release_once_joined(origin, path, [corral], 20)
        bodies = {r.body for r in burst.result()}
        expect_eq(bodies, {b"catalogue n=1"}, f"{cc}: one answer for 20 users")
        expect_eq(origin.count(path), 1, f"{cc}: one origin fetch")
        r = corral.get(path, {"Authorization": user(99)})
        expect(r.cache_status.hit, f"{cc}: stored and hit: {r.cache_status.raw}")


@scenario
def cache_authorized_on_never_streams_a_private_answer_to_the_waiters(env):
    """A long response streams to every waiter as it arrives, so the rule
    is asked of its head, before any body goes out."""
    redis, origin = env.redis(), env.origin()
    origin.script("/export", hold=True, size=256 * 1024)
    corral = env.corral(redis, origin, routes={"/": {"cache_authorized": "on",
                                                     "lock_poll": "5s"}})
    burst = Background(stampede, [corral], 8, "/export",
                       headers=lambda i: {"Authorization": user(i)})
    release_once_joined(origin, "/export", [corral], 8)
    results = burst.result()
    expect_eq(origin.count("/export"), 8, "each user's export fetched for that user")
    expect(all(not r.cache_status.collapsed for r in results),
           f"no user got another's stream: {[r.cache_status.raw for r in results]}")


# -- cache_authorized = anonymous: one answer for all, fetched without credentials ----

@scenario
def anonymous_mode_shares_one_fetch_made_without_credentials(env):
    """Single-page apps send their token on every call, public endpoints
    too. anonymous keys and fetches as if none was sent: the origin
    cannot personalise what is shared, and gets one request."""
    redis, origin = env.redis(), env.origin()
    origin.script("/catalogue", hold=True,
                  body="auth=[{h:Authorization}] cookie=[{h:Cookie}] key=[{h:X-API-Key}] n={n}")
    routes = {"/catalogue": {"cache_authorized": "anonymous", "credential_header": "X-API-Key",
                             "lock_poll": "5s"}, "/": {}}
    fleet = env.fleet(2, redis, origin, routes=routes)
    n = 40
    burst = Background(stampede, fleet, n, "/catalogue", headers=lambda i: {
        "Authorization": user(i), "Cookie": f"sid=s{i}", "X-API-Key": f"k{i}"})
    release_once_joined(origin, "/catalogue", fleet, n)
    for i, r in enumerate(burst.result()):
        expect_eq((r.status, r.body.decode()), (200, "auth=[] cookie=[] key=[] n=1"),
                  f"client {i}: the anonymous answer")
    expect_eq(origin.count("/catalogue"), 1, "one origin fetch for 40 signed-in clients")
    sent = {k.lower() for k in origin.path_stats("/catalogue")["headers"]}
    expect(not sent & {"authorization", "cookie", "x-api-key"},
           f"the fetch's own headers carry no credential: {sorted(sent)}")
    for c in fleet:
        r = c.get("/catalogue", {"Authorization": user(77)})
        expect(r.cache_status.hit, f"a later signed-in request hits: {r.cache_status.raw}")
        r = c.get("/catalogue")
        expect(r.cache_status.hit, f"an anonymous request hits the same: {r.cache_status.raw}")
    # The other route keeps the default: credentials pass, uncached.
    r = fleet[0].get("/other", {"Authorization": user(1)})
    expect_eq(r.cache_status.fwd, "bypass", "cache_authorized = off elsewhere")


@scenario
def anonymous_mode_never_stores_an_answer_that_sets_a_cookie(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/home", body="n={n}", headers={"Set-Cookie": "session=new"})
    corral = env.corral(redis, origin, routes={"/": {"cache_authorized": "anonymous"}})
    for i in range(2):
        r = corral.get("/home", {"Authorization": user(i)})
        expect_eq(r.text, f"n={i + 1}", f"request {i}: fetched, not shared")
    expect_eq(redis.entry_keys(), [], "nothing stored")


# -- a field spelled with '_' -----------------------------------------------------

@scenario
def a_credential_spelled_with_underscores_never_reaches_the_origin(env):
    """wsgiref (like Puma and Rails's server) reads X_API_Key as X-API-Key:
    Corral must not key it as anonymous and then send it."""
    redis, origin = env.redis(), env.wsgi_origin()
    routes = {"/": {"cache_authorized": "per-credential", "credential_header": "X-API-Key",
                    "ttl": "30s"}}
    corral = env.corral(redis, origin, routes=routes, extra=with_secret(env))
    r = corral.get("/me", {"X_API_Key": "victim"})
    expect("victim" not in r.text, f"the origin never heard X_API_Key: {r.text!r}")
    r = corral.get("/me")
    expect_eq(r.text.split(" n=")[0], "key= tenant= auth=",
              "an anonymous client gets the anonymous answer")
    r = corral.get("/me", {"X-API-Key": "victim"})
    expect_eq(r.text.split(" n=")[0], "key=victim tenant= auth=",
              "the field spelled right is the credential")
    for name in ("x_api_key", "X_API-KEY", "x-api_key"):
        r = corral.get("/me", {name: "victim2"})
        expect("victim2" not in r.text, f"{name} never reaches the origin: {r.text!r}")


@scenario
def a_keyed_field_spelled_with_underscores_cannot_poison_the_unkeyed_entry(env):
    redis, origin = env.redis(), env.wsgi_origin()
    routes = {"/": {"key_headers": "X-Tenant-ID", "ttl": "30s"}}
    corral = env.corral(redis, origin, routes=routes)
    r = corral.get("/report", {"X_Tenant_ID": "victim-corp"})
    expect("victim-corp" not in r.text, f"the origin never heard X_Tenant_ID: {r.text!r}")
    r = corral.get("/report")
    expect("victim-corp" not in r.text, f"the next client without the field: {r.text!r}")
    r = corral.get("/report", {"X-Tenant-ID": "acme"})
    expect("tenant=acme" in r.text, f"the field spelled right is keyed and sent: {r.text!r}")


# -- GraphQL: every member that can change the answer is keyed ----------------------

GQL_ROUTES = {"/graphql": {"cache_post": "on", "graphql": "on", "lock_poll": "5s",
                           "ttl": "1s", "stale_while_revalidate": "60s"}, "/": {}}
QUERY = {"query": "query Me($id: ID!) { user(id: $id) { name } }", "variables": {"id": "7"}}


def gql_post(c, body):
    return c.get("/graphql", {"Content-Type": "application/json"}, method="POST",
                 body=json.dumps(body).encode())


@scenario
def graphql_bodies_that_name_a_document_get_keys_of_their_own(env):
    """Persisted-operation servers run the document a body names, not its
    text: a body with documentId (or doc_id, id, extensions) beside the
    plain query's text must not share the plain query's entry."""
    redis, origin = env.redis(), env.origin()
    origin.script("/graphql", body="n={n}")
    corral = env.corral(redis, origin, routes=GQL_ROUTES)
    expect_eq(gql_post(corral, QUERY).text, "n=1", "the plain query")
    extras = ({"documentId": "evil"}, {"doc_id": "evil"}, {"id": "evil"},
              {"extensions": {"persistedQuery": {"version": 1, "sha256Hash": "ab" * 32}}})
    for i, extra in enumerate(extras):
        r = gql_post(corral, dict(QUERY, **extra))
        expect_eq(r.text, f"n={i + 2}", f"{list(extra)[0]}: a key of its own")
        r = gql_post(corral, dict(QUERY, **extra))
        expect(r.cache_status.hit, f"{list(extra)[0]} again: its own entry hits")
    r = gql_post(corral, QUERY)
    expect_eq(r.text, "n=1", "the plain query still has its own entry")
    # Its stale refresh resends its own body, not another requester's.
    wait_for(lambda: gql_post(corral, QUERY).cache_status.stale, what="the plain entry stale")
    wait_for(lambda: origin.count("/graphql") == len(extras) + 2,
             what="the stale entry's refresh")
    sent = origin.path_stats("/graphql")["texts"][-1]
    expect("evil" not in sent and "sha256Hash" not in sent,
           f"the refresh sent the plain query's own body: {sent!r}")


@scenario
def graphql_answers_with_errors_are_never_stored(env):
    """A 200 whose body carries errors (bad variables, a resolver that
    failed, permission denied) is a failure: its waiters share it, as
    they share a 503, but it is never stored."""
    redis, origin = env.redis(), env.origin()
    errors = '{"data": null, "errors": [{"message": "bad variables n={n}"}]}'
    origin.script("/graphql", hold=True, body=errors)
    corral = env.corral(redis, origin, routes=GQL_ROUTES)
    burst = Background(stampede, [corral], 5, "/graphql", method="POST",
                       headers={"Content-Type": "application/json"},
                       body=json.dumps(QUERY).encode())
    release_once_joined(origin, "/graphql", [corral], 5)
    expect_eq({r.body.decode() for r in burst.result()}, {errors.replace("{n}", "1")},
              "the waiters share the one fetch's answer")
    expect_eq(redis.entry_keys(), [], "no answer with errors stored")
    r = gql_post(corral, QUERY)
    expect_eq((r.text, r.cache_status.hit), (errors.replace("{n}", "2"), False),
              "the next request fetches again")
    expect_eq(r.cache_status.detail, "graphql-errors", "Cache-Status says why it was not stored")
    for body in ('{"data": {"user": {"name": "n{n}"}}, "errors": []}',
                 '{"errors": null, "data": {"user": {"name": "n{n}"}}}'):
        origin.script("/graphql", body=body)
        expect(gql_post(corral, dict(QUERY, variables={"id": body[2]})).cache_status.stored,
               f"no errors: stored ({body})")


@scenario
def a_graphql_get_that_is_a_mutation_is_passed(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/graphql*", body="n={n}")
    corral = env.corral(redis, origin, routes=GQL_ROUTES)
    from urllib.parse import quote
    mutation = "/graphql?query=" + quote("mutation { deleteAll }")
    for i in range(2):
        r = corral.get(mutation)
        expect_eq((r.text, r.cache_status.fwd), (f"n={i + 1}", "method"),
                  f"GET mutation {i}: passed, never cached")
    m = quote("mutation { deleteAll }")
    q = quote("{ me { name } }")
    for target in (f"/graphql?Query={m}", f"/graphql?%71uery={m}", f"/graphql?a=1;query={m}",
                   f"/graphql?query={q}&query={m}", f"/graphql?query={m}&variables=%7B%7D",
                   f"/graphql?query=mutation+%7B+deleteAll+%7D"):
        r = corral.get(target)
        expect_eq(r.cache_status.fwd, "method", f"{target}: passed")
    query = "/graphql?query=" + q + "&variables=%7B%7D"
    corral.get(query)
    expect(corral.get(query).cache_status.hit, "a GET query is cached")
    bad = "/graphql?query=" + quote("{ unclosed")
    corral.get(bad)
    expect(not corral.get(bad).cache_status.hit, "a GET with a query we cannot read is passed")


# -- writes that readers see ----------------------------------------------------------

def one_connection(corral):
    import http.client
    return http.client.HTTPConnection(corral.host, corral.port, timeout=30)


def exchange(conn, method, path, headers=None, body=None):
    from harness import Headers, Response
    h = {"Host": "app.test"}
    h.update(headers or {})
    conn.request(method, path, body=body, headers=h)
    r = conn.getresponse()
    return Response(r.status, Headers(r.getheaders()), r.read(), 0)


@scenario
def a_read_right_after_a_write_on_one_connection_never_gets_the_old_entry(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/items/1", body="v{n}")
    corral = env.corral(redis, origin, routes={"/": {"ttl": "60s"}},
                        extra={"server": {"workers": "2"}})
    conn = one_connection(corral)
    stale = []
    for i in range(20):
        before = exchange(conn, "GET", "/items/1")
        w = exchange(conn, "POST", "/items/1", body=b"x")
        after = exchange(conn, "GET", "/items/1")
        if after.cache_status.hit or after.body == before.body:
            stale.append((i, before.body, after.body, after.cache_status.raw))
    expect_eq(stale, [], "reads right after a write that got the old entry")


@scenario
def a_write_invalidates_every_stored_response_of_its_target(env):
    """RFC 9111 4.4: every credential's entry of the URL, and every cached
    POST body's, goes with its plain entry, before the write is answered."""
    redis, origin = env.redis(), env.origin()
    origin.script("/*", body="{method} {h:Authorization} n={n}")
    routes = {"/orders": {"cache_authorized": "per-credential", "ttl": "60s"},
              "/search": {"cache_post": "on", "ttl": "60s"}, "/": {"ttl": "60s"}}
    fleet = env.fleet(2, redis, origin, routes=routes, extra=with_secret(env))
    a, b = {"Authorization": user(1)}, {"Authorization": user(2)}
    for c in fleet:
        for who in (a, b, {}):
            c.get("/orders", who)
    expect_eq(origin.count("/orders"), 3, "one entry per credential, and the plain one")
    conn = one_connection(fleet[0])
    w = exchange(conn, "POST", "/orders", a, b"new order")
    expect_eq(w.status, 200, "the write")
    for who, name in ((a, "A"), (b, "B"), ({}, "anonymous")):
        r = exchange(conn, "GET", "/orders", who)
        expect(not r.cache_status.hit, f"{name}'s entry went with the write: "
                                       f"{r.cache_status.raw} {r.text}")
    r = fleet[1].get("/orders", a)
    expect(r.cache_status.hit, f"the other instance has A's new entry: {r.cache_status.raw}")
    # Cached POST bodies: a PUT of the same target drops them all.
    for q in (b"q=1", b"q=2"):
        fleet[1].get("/search", {"Content-Type": "text/plain"}, method="POST", body=q)
        expect(fleet[0].get("/search", {"Content-Type": "text/plain"}, method="POST",
                            body=q).cache_status.hit, f"{q!r} cached")
    conn = one_connection(fleet[1])
    expect_eq(exchange(conn, "PUT", "/search", {}, b"x").status, 200, "the PUT")
    for q in (b"q=1", b"q=2"):
        r = exchange(conn, "POST", "/search", {"Content-Type": "text/plain"}, q)
        expect(not r.cache_status.hit, f"{q!r} went with the PUT: {r.cache_status.raw}")
    # A failed write invalidates nothing.
    fleet[0].get("/search", {"Content-Type": "text/plain"}, method="POST", body=b"q=1")
    origin.script("/search", status=500, body="no")
    expect_eq(fleet[0].get("/search", method="DELETE").status, 500, "the failed DELETE")
    r = fleet[0].get("/search", {"Content-Type": "text/plain"}, method="POST", body=b"q=1")
    expect(r.cache_status.hit, f"a failed write drops nothing: {r.cache_status.raw}")
