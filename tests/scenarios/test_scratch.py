"""scratch: a first run of the feed in corral."""
import time
from harness import *
from harness import feeds

@scenario
def scratch_feed(env):
    pg = env.postgres()
    feeds.setup_database(pg)
    redis, origin = env.redis(), env.origin()
    origin.script("/orders/*", body="v{n}", headers={"Surrogate-Key": "orders:{n}"})
    origin.script("/orders/1", body="one-v1", headers={"Surrogate-Key": "orders:1"})
    extra = feeds.section(env, pg)
    a = env.corral(redis, origin, extra=extra)
    b = env.corral(redis, origin, extra=extra)
    lead = feeds.wait_streaming([a, b])
    print("leader", lead.name, feeds.feed(lead))
    r = a.get("/orders/1", headers={"Host": HOST})
    print(r.status, r.body)
    r = a.get("/orders/1", headers={"Host": HOST})
    print(r.status, r.headers.get("Cache-Status"))
    pg.sql("INSERT INTO orders VALUES (1, 7, 'x')", db=feeds.DB)
    wait_for(lambda: entry_is_fresh(redis, "/orders/1") is False, timeout=10, what="stale")
    print(feeds.feed(a), feeds.feed(b))
    print(a.get("/health").body if False else a.admin("GET", "/health").body)
    print(feeds.slot_row(pg))
