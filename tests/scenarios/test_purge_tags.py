"""Surrogate keys and soft purge: entries are filed under the tags the
origin names (Surrogate-Key, Cache-Tag); POST /purge?tag=T reaches every
entry with that tag in the fleet. A soft purge (the default for tags, or
&soft=1) marks entries stale instead of deleting them, so a popular tag can
be purged under load without a stampede: every request is answered at once
and each entry is refreshed once."""

import threading

from harness import entry_key, expect, expect_eq, scenario, wait_for, HOST

ENTRIES = 100
REQUESTS = 500


def purge(corral, **params):
    """The number purged; the purge must succeed."""
    r = corral.purge(**params)
    expect_eq(r.status, 200, f"purge {params}: {r.text!r}")
    return r.json()["purged"]


@scenario
def soft_purge_of_a_popular_tag_causes_no_stampede(env):
    redis, origin = env.redis(), env.origin()
    origin.script("*", delay_ms=20, body="{path} v{n}",
                  headers={"Surrogate-Key": "all  item-{n}", "Cache-Tag": "catalog"})
    routes = {"/": {"ttl": "1h", "stale_while_revalidate": "1h"}}
    a, b = env.fleet(2, redis, origin, routes=routes)
    paths = [f"/tg/{i}" for i in range(ENTRIES)]
    for i, p in enumerate(paths):
        expect_eq((a, b)[i % 2].get(p, {"Host": HOST}).status, 200, f"filling {p}")

    barrier = threading.Barrier(REQUESTS + 1)
    results = [None] * REQUESTS

    def client(i):
        barrier.wait()
        results[i] = (a, b)[i % 2].get(paths[i % ENTRIES], {"Host": HOST})

    threads = [threading.Thread(target=client, args=(i,), daemon=True)
               for i in range(REQUESTS)]
    for t in threads:
        t.start()
    expect_eq(purge(a, tag="all"), ENTRIES, "entries purged (soft) under the tag")
    barrier.wait()	# the requests arrive while the refreshes start
    for t in threads:
        t.join(60)
    expect(all(r is not None for r in results), "every request answered")
    expect_eq(sorted({r.status for r in results}), [200], "statuses")
    waited = [r.cache_status.raw for r in results if not r.cache_status.hit]
    expect_eq(waited, [], "requests that were not served from the cache at once")
    expect(sum(1 for r in results if r.cache_status.stale) >= ENTRIES,
           "the purged entries were served stale")
    wait_for(lambda: all(origin.count(p) == 2 for p in paths), timeout=30,
             what="every entry refreshed once")
    expect_eq(max(origin.count(p) for p in paths), 2,
              "origin requests per entry: the fill and one refresh")
    r = a.get(paths[0], {"Host": HOST})
    expect(r.cache_status.hit and not r.cache_status.stale,
           f"fresh again after its refresh: {r.cache_status.raw!r}")


@scenario
def hard_tag_and_soft_url_purges(env):
    redis, origin = env.redis(), env.origin()
    origin.script("*", body="{path} v{n}", headers={"Cache-Tag": "red, blue"})
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}})
    for p in ("/c/1", "/c/2"):
        corral.get(p, {"Host": HOST})
    expect_eq(purge(corral, tag="blue", soft="0"), 2, "entries deleted under blue")
    expect_eq(redis.entry_keys(), [], "entries left after a hard purge")
    expect_eq(purge(corral, tag="blue"), 0, "a purged tag names nothing")
    expect_eq(purge(corral, tag="nothing"), 0, "an unknown tag")
    r = corral.get("/c/1", {"Host": HOST})
    expect_eq((r.text, r.cache_status.stored), ("/c/1 v2", True), "fetched again")

    expect_eq(purge(corral, url=f"http://{HOST}/c/1", soft="1"), 1, "a soft URL purge")
    expect(redis.exists(entry_key("/c/1")), "a soft purge keeps the entry")
    r = corral.get("/c/1", {"Host": HOST})
    expect_eq((r.text, r.cache_status.stale), ("/c/1 v2", True), "served stale after it")
    wait_for(lambda: origin.count("/c/1") == 3, what="its one refresh")
    expect_eq(purge(corral, url=f"http://{HOST}/c/1", soft="1"), 1, "softened again")
    expect_eq(purge(corral, url=f"http://{HOST}/c/1", soft="1"), 0,
              "an entry already stale is left as it is")
