"""What a successful write's answer purges beyond its own target (RFC
9111 4.4): the tags the origin names in the route's purge_header field,
and on a graphql route the objects a mutation returns, whose Type:id
tags every stored query response was filed under. Soft purges,
fleet-wide: each entry is served stale while one refresh runs."""

import json

from harness import (HOST, entry_is_fresh, expect, expect_eq, scenario, wait_for)

LONG = {"ttl": "1h", "stale_while_revalidate": "1h", "lock_poll": "5s"}


def tagged(origin, path, tags):
    origin.script(path, body=path + " v{n}", headers={"Surrogate-Key": tags})


def fresh_everywhere(fleet, path):
    """Is path answered as a fresh hit by every instance?"""
    statuses = [c.get(path, headers={"Host": HOST}).headers.get("Cache-Status", "")
                for c in fleet]
    return all("hit" in s and "ttl=-" not in s for s in statuses)


@scenario
def purge_header_of_a_successful_write_soft_purges_its_tags_fleet_wide(env):
    redis, origin = env.redis(), env.origin()
    fleet = env.fleet(2, redis, origin,
                      routes={"/": dict(LONG, purge_header="Corral-Purge")})
    for p, t in {"/orders/42": "orders:42", "/orders": "orders",
                 "/customers/9": "customers:9"}.items():
        tagged(origin, p, t)
        expect_eq(fleet[0].get(p, headers={"Host": HOST}).status, 200, f"GET {p}")
    origin.script("/orders/42/pay", status=500,
                  headers={"Corral-Purge": "orders:42 orders"})
    r = fleet[1].get("/orders/42/pay", headers={"Host": HOST}, method="POST", body=b"x")
    expect_eq(r.status, 500, "a failed write")
    expect(entry_is_fresh(redis, "/orders/42") and entry_is_fresh(redis, "/orders"),
           "a failed write's answer purges nothing")
    origin.script("/orders/42/pay", status=200,
                  headers={"Corral-Purge": "orders:42, orders"})
    r = fleet[1].get("/orders/42/pay", headers={"Host": HOST}, method="POST", body=b"x")
    expect_eq(r.status, 200, "a successful write")
    for p in ("/orders/42", "/orders"):	# soft: there, and stale
        wait_for(lambda p=p: entry_is_fresh(redis, p) is False, timeout=30,
                 what=f"{p} stale in Redis")
        r = fleet[0].get(p, headers={"Host": HOST})	# the other instance
        expect("ttl=-" in r.headers.get("Cache-Status", ""),
               f"{p} served stale by the instance the write did not go through: "
               f"{r.headers.get('Cache-Status')}")
    expect(entry_is_fresh(redis, "/customers/9"), "a tag the answer did not name")
    for p in ("/orders/42", "/orders"):
        wait_for(lambda p=p: fresh_everywhere(fleet, p), timeout=30, what=f"{p} fresh again")
    expect_eq((origin.count("/orders/42"), origin.count("/orders"),
               origin.count("/customers/9")), (2, 2, 1), "origin fetches")
    expect_eq(sum(c.counters()["write_tag_purges"] for c in fleet), 2, "tag purges counted")


ROUTES = {"/graphql": dict(LONG, cache_post="on", graphql="on"), "/": {}}


def gql(query):
    return json.dumps({"query": query}).encode()


def ask(c, query, answer):
    """POSTs query; the origin answers with answer (echoed from X-Answer)."""
    return c.get("/graphql", headers={"Host": HOST, "Content-Type": "application/json",
                                     "X-Answer": json.dumps(answer)},
                 method="POST", body=gql(query))


def order(i, typename="Order"):
    return {"__typename": typename, "id": i, "total": i * 10}


QUERIES = {
    "q42": ("{ order(id: 42) { id total } }", {"data": {"order": order(42)}}),
    "list": ("{ orders { id } }", {"data": {"orders": [order(41), order(42)]}}),
    "q7": ("{ order(id: 7) { id } }", {"data": {"order": order(7)}}),
    "customer": ('{ customer(id: "9") { orders { id } } }',
                 {"data": {"customer": {"__typename": "Customer", "id": "9",
                                        "orders": [order(7)]}}}),
    "big": ("{ items { id } }", {"data": {"items": [order(i, "Item")
                                                   for i in range(100, 170)]}}),
}


def status_of(c, name):
    q, a = QUERIES[name]
    return ask(c, q, a).headers.get("Cache-Status", "")


@scenario
def graphql_mutation_refreshes_every_query_holding_its_objects_and_no_other(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/graphql", body="{h:X-Answer}", headers={"Content-Type": "application/json"})
    fleet = env.fleet(2, redis, origin, routes=ROUTES)
    for name, (q, a) in QUERIES.items():
        expect_eq(ask(fleet[0], q, a).status, 200, f"query {name} stored")
    # The bound: a response of 70 Items is filed under its first 64
    # (Item:100 ... Item:163) and Item:+ (and Item: it holds a list).
    sets = set(redis.keys("*{tag:Item*}:members"))
    expect(f"{_tag('Item:163')}" in sets and f"{_tag('Item:164')}" not in sets and
           _tag("Item:+") in sets and _tag("Item") in sets,
           f"a response's tags stop at 64 objects: {sorted(sets)[:8]}...")
    # A mutation that errors purges nothing.
    r = ask(fleet[1], "mutation { pay(id: 7) { id } }",
            {"errors": [{"message": "denied"}], "data": {"pay": order(7)}})
    expect_eq(r.status, 200, "an erring mutation answered")
    expect(all(feeds_fresh(fleet, n) for n in QUERIES), "nothing purged by an erring mutation")
    # Order 42 changes: the queries holding it go stale everywhere, the
    # others stay fresh, and the endpoint's other queries are not dropped.
    fetched = origin.count("/graphql")
    r = ask(fleet[1], "mutation { pay(id: 42) { id } }", {"data": {"pay": order(42)}})
    expect_eq(r.status, 200, "the mutation answered")
    for name in ("q42", "list"):	# seen on the instance the mutation did not pass
        wait_for(lambda n=name: "ttl=-" in status_of(fleet[0], n), timeout=30,
                 what=f"query {name} (holds Order 42) stale")
    for name in ("q7", "customer", "big"):
        expect(feeds_fresh(fleet, name), f"query {name} (no Order 42) still fresh")
    wait_for(lambda: feeds_fresh(fleet, "q42") and feeds_fresh(fleet, "list"), timeout=30,
             what="the queries holding Order 42 fresh again")
    expect_eq(origin.count("/graphql") - fetched, 3,
              "origin requests: the mutation and one refresh per query holding Order 42")
    # An Item past a response's 64 tagged ones reaches it through Item:+.
    ask(fleet[1], "mutation { pay(id: 169) { id } }", {"data": {"pay": order(169, "Item")}})
    wait_for(lambda: "ttl=-" in status_of(fleet[0], "big"), timeout=30,
             what="the 70-Item response stale after a change of its 70th")
    expect(feeds_fresh(fleet, "q7"), "other queries untouched")


def _tag(tag):
    return f"corral:{{tag:{tag}}}:members"


def feeds_fresh(fleet, name):
    """Is query name answered as a fresh hit by every instance?"""
    return all(("hit" in s and "ttl=-" not in s) for s in (status_of(c, name) for c in fleet))


@scenario
def graphql_purge_lists_refreshes_the_lists_of_a_mutated_type_only_when_on(env):
    origin = env.origin()
    origin.script("/graphql", body="{h:X-Answer}", headers={"Content-Type": "application/json"})
    lists = {"/graphql": dict(LONG, cache_post="on", graphql="on", graphql_purge_lists="on"),
             "/": {}}
    for on, routes in ((False, ROUTES), (True, lists)):
        redis = env.redis()
        fleet = env.fleet(2, redis, origin, routes=routes)
        for name, (q, a) in QUERIES.items():
            expect_eq(ask(fleet[0], q, a).status, 200, f"lists {on}: query {name} stored")
        # Order 99, held by no stored query: only a list of Orders can
        # hold it (a new one), and only with the setting on is it purged.
        r = ask(fleet[1], "mutation { add { id } }", {"data": {"add": order(99)}})
        expect_eq(r.status, 200, f"lists {on}: the mutation answered")
        expect_eq(sum(c.counters()["write_tag_purges"] for c in fleet), 3 if on else 2,
                  f"lists {on}: tags purged (Order:99, Order:+, and Order with lists on)")
        if on:
            for name in ("list", "customer"):	# Orders within a list
                wait_for(lambda n=name, f=fleet: "ttl=-" in status_of(f[0], n), timeout=30,
                         what=f"query {name} (a list of Orders) stale")
        for name in ("q42", "q7", "big") + (() if on else ("list", "customer")):
            expect(feeds_fresh(fleet, name), f"lists {on}: query {name} still fresh")
        for c in fleet:
            c.stop()
