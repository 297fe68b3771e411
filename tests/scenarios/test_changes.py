# SPDX-License-Identifier: MIT
"""The change feed in Corral: a real PostgreSQL 15 (harness.postgres, run
as its own user), Redis, the origin and two instances of two workers.
A committed change soft-purges the tags of what it changed, fleet-wide,
and each affected entry is fetched again once while stale is served;
only the fleet's leader reads the slot, and a position is acknowledged
to PostgreSQL only once its purges are applied.

The origin stands in for an application on the database: its answers
carry the tags (Surrogate-Key) and a version ({n}, its count of the
path), so that "fresh again" is seen in the content a client gets.
"""

import time

from harness import (HOST, Background, PsqlError, corral_config, entry_is_fresh, expect,
                     expect_eq, free_port, scenario, wait_for)
from harness import feeds
from harness.feeds import DB

LONG = {"/": {"ttl": "1h", "stale_while_revalidate": "1h"}}	# only changes refresh


def tagged(origin, path, tags, body=None, hold=False):
    """path answers body (default: its path and version) tagged tags (held
    until released, with hold)."""
    origin.script(path, body=body or (path + " v{n}"), headers={"Surrogate-Key": tags},
                  hold=hold)


def warm(corral, paths):
    """Each path stored once, through corral (one origin fetch each)."""
    for p in paths:
        r = corral.get(p, headers={"Host": HOST})
        expect_eq(r.status, 200, f"GET {p}")


def fresh_with(fleet, path, body, what):
    """Waits until path is answered fresh (a hit) with body by every
    instance: the entry was fetched again after the change, and stored."""
    def all_fresh():
        for c in fleet:
            r = c.get(path, headers={"Host": HOST})
            if r.body != body or not feeds.is_fresh_hit(r.headers.get("Cache-Status", "")):
                return False
        return True
    wait_for(all_fresh, timeout=30, what=what)


def feed_fleet(env, routes=LONG, rules=None, n=2, workers=2, server=None, upstream=None,
               **keys):
    """PostgreSQL with the feed's database, Redis, the origin and n
    instances sharing one [changes orders] section; waits until one leads
    and streams."""
    pg = env.postgres()
    feeds.setup_database(pg)
    redis, origin = env.redis(), env.origin()
    text = feeds.section(env, pg, rules=rules, **keys)
    fleet = feeds.fleet(env, pg, redis, origin, n=n, workers=workers, routes=routes,
                        section_text=text, server=server, upstream=upstream)
    feeds.wait_streaming(fleet)
    return pg, redis, origin, fleet


def applied(fleet, n, what, name="orders"):
    """Waits until the leader has applied n commits in all (it counts the
    commits whose purges all went through)."""
    wait_for(lambda: sum(feeds.feed(c, name)["applied"] for c in fleet if c.running()) >= n,
             timeout=30, what=what)


@scenario(timeout=240)
def row_changes_refresh_each_tagged_entry_once_across_the_fleet(env):
    # An insert, an update and a delete, while 50 clients keep asking every
    # entry through both instances: each affected entry is fresh again with
    # the new content, fetched once fleet-wide; the others are not fetched.
    pg, redis, origin, fleet = feed_fleet(env)
    paths = {"/orders/1": "orders:1", "/orders/2": "orders:2", "/orders": "orders",
             "/customers/7": "customers:7"}
    for p, t in paths.items():
        tagged(origin, p, t)
    pg.sql("INSERT INTO orders VALUES (1, 7, 'a'), (2, 7, 'b')", db=DB)
    applied(fleet, 1, "the first insert applied")
    warm(fleet[0], paths)
    askers = feeds.Askers(fleet, list(paths), clients=50)
    try:
        askers.wait_rounds(2, "every client asked twice before the changes")
        steps = [("INSERT INTO orders VALUES (3, 8, 'c')", {"/orders": 2}),
                 ("UPDATE orders SET note = 'x' WHERE id = 1", {"/orders/1": 2}),
                 ("DELETE FROM orders WHERE id = 2", {"/orders/2": 2, "/orders": 3})]
        counts = {p: 1 for p in paths}
        for n, (sql, fetched) in enumerate(steps, start=2):
            pg.sql(sql, db=DB)
            counts.update(fetched)
            for p, v in fetched.items():
                fresh_with(fleet, p, f"{p} v{v}".encode(), f"{p} fresh again after {sql}")
            askers.wait_rounds(3, f"every client asked thrice after {sql}")
            for p in paths:
                expect_eq(origin.count(p), counts[p], f"origin fetches of {p} after {sql}")
    finally:
        askers.stop()
    stale = [a for a in askers.answers if "ttl=-" in a[4]]
    expect(stale, "stale answers while the entries were fetched again (a soft purge)")
    env.report(f"{len(askers.answers)} answers, {len(stale)} of them stale, "
               f"origin fetches {[origin.count(p) for p in paths]}")


@scenario(timeout=180)
def rollback_purges_nothing_three_touches_purge_once_messages_purge_their_tags(env):
    pg, redis, origin, fleet = feed_fleet(env)
    for p, t in {"/orders/1": "orders:1", "/a": "tag-a", "/b": "tag-b", "/c": "tag-c"}.items():
        tagged(origin, p, t)
    pg.sql("INSERT INTO orders VALUES (1, 7, 'a')", db=DB)
    applied(fleet, 1, "the insert applied")
    warm(fleet[0], ["/orders/1", "/a", "/b", "/c"])
    lead = feeds.leaders(fleet)[0]
    start = feeds.feed(lead)
    purges, jobs = start["tag_purges"], start["applied"]

    def settled(before, what):
        """The feed's figures once more than before commits (or messages)
        are applied: a commit counts as applied after all its purges, so
        its tag purges are all counted then."""
        wait_for(lambda: feeds.feed(lead)["applied"] > before, timeout=30, what=what)
        return feeds.feed(lead)

    # A rolled-back transaction, then a barrier: a message applied at once.
    pg.sql("BEGIN; UPDATE orders SET note = 'r' WHERE id = 1; "
           "SELECT pg_logical_emit_message(true, 'corral', 'tag-a'); ROLLBACK", db=DB)
    pg.sql("SELECT pg_logical_emit_message(false, 'corral', 'tag-c')", db=DB)
    wait_for(lambda: entry_is_fresh(redis, "/c") is False, timeout=30,
             what="the barrier's tag purged")
    expect(entry_is_fresh(redis, "/orders/1"), "a rolled-back update purged its row's entry")
    expect(entry_is_fresh(redis, "/a"), "a rolled-back transaction's message purged its tag")
    f = settled(jobs, "the barrier applied")
    expect_eq((f["applied"], f["tag_purges"]), (jobs + 1, purges + 1),
              "applied and tag purges after a rollback and the barrier")

    # One row touched three times in one transaction: one purge, at commit.
    pg.sql("BEGIN; UPDATE orders SET note = '1' WHERE id = 1; "
           "UPDATE orders SET note = '2' WHERE id = 1; "
           "UPDATE orders SET note = '3' WHERE id = 1; COMMIT", db=DB)
    wait_for(lambda: entry_is_fresh(redis, "/orders/1") is False, timeout=30,
             what="the row's entry purged at commit")
    f = settled(f["applied"], "the commit applied")
    expect_eq((f["applied"], f["tag_purges"]), (jobs + 2, purges + 2),
              "one commit, one tag purge for three touches")

    # A transaction's message purges exactly its tags, at commit.
    pg.sql("BEGIN; SELECT pg_logical_emit_message(true, 'corral', 'tag-b "
           "no-such-tag'); COMMIT", db=DB)
    wait_for(lambda: entry_is_fresh(redis, "/b") is False, timeout=30,
             what="the message's tag purged")
    f = settled(f["applied"], "the message's commit applied")
    expect_eq((f["applied"], f["tag_purges"]), (jobs + 3, purges + 4),
              "one commit, the message's two tags purged")
    expect(entry_is_fresh(redis, "/a"), "a tag no message named stays fresh")


@scenario(timeout=180)
def a_purge_fences_a_refresh_held_at_the_origin_across_a_commit(env):
    # A refresh that fetched before the commit (its request reached the
    # origin, which holds the answer) must not store what it got as fresh
    # after the commit's purge: the purge takes its lock away, its store
    # is refused, and the next request fetches again.
    pg, redis, origin, fleet = feed_fleet(env, n=1, workers=1)
    corral = fleet[0]
    tagged(origin, "/orders/1", "orders:1")
    pg.sql("INSERT INTO orders VALUES (1, 7, 'a')", db=DB)
    applied(fleet, 1, "the insert applied")
    warm(corral, ["/orders/1"])					# v1, fresh
    pg.sql("UPDATE orders SET note = 'b' WHERE id = 1", db=DB)	# stale now
    applied(fleet, 2, "the first update applied")
    tagged(origin, "/orders/1", "orders:1", hold=True)
    r = corral.get("/orders/1", headers={"Host": HOST})
    expect_eq(r.body, b"/orders/1 v1", "stale served while the refresh runs")
    wait_for(lambda: origin.held("/orders/1") == 1, timeout=30,
             what="the refresh's fetch (v2) held at the origin")
    pg.sql("UPDATE orders SET note = 'c' WHERE id = 1", db=DB)	# after v2 was read
    applied(fleet, 3, "the second update's purge applied")
    origin.release("/orders/1")
    wait_for(lambda: feeds.feed(corral)["applied"] >= 3 and
             corral.counters()["lock_lost"] >= 1, timeout=30,
             what="the held refresh's store refused (its lock was fenced)")
    expect(not entry_is_fresh(redis, "/orders/1"),
           "what was fetched before the commit was stored as fresh after it")
    fresh_with(fleet, "/orders/1", b"/orders/1 v3", "fetched again after the commit")
    expect_eq(origin.count("/orders/1"), 3, "origin fetches: v1, the fenced v2, v3")


@scenario(timeout=240)
def leader_killed_another_leads_within_the_lease_and_nothing_is_lost(env):
    # kill -9 of the leading instance while commits stream: the other
    # leads within the lease and resumes from the slot's confirmed
    # position; every commit's entry ends stale (made = applied), and no
    # position was ever confirmed before its purge.
    pg, redis, origin, fleet = feed_fleet(env)
    n = 60
    origin.script("/items/*", body="{path} v{n}")
    for i in range(n):
        tagged(origin, f"/items/{i}", f"items:{i}")
    pg.sql("INSERT INTO items SELECT g, 1, 0 FROM generate_series(0, %d) g" % (n - 1), db=DB)
    applied(fleet, 1, "the insert applied")
    warm(fleet[0], [f"/items/{i}" for i in range(n)])
    lsns, violations, done = {}, [], []

    def sample():
        # One pass more once done is set: the last commits may be
        # confirmed in one step just before it (a new leader catching up).
        checked = set()
        while True:
            last = bool(done)
            row = feeds.slot_row(pg)
            confirmed = row["confirmed"] if row else 0
            for i, lsn in list(lsns.items()):
                if i in checked or lsn > confirmed:
                    continue
                if entry_is_fresh(redis, f"/items/{i}"):
                    violations.append((i, lsn, confirmed))
                checked.add(i)
            if last:
                return len(checked)
            time.sleep(0.02)	# a sampling period, not a wait for a condition

    def commit_all():
        for i in range(n):
            lsns[i] = feeds.commit_lsn(pg, f"UPDATE items SET qty = {i + 1} WHERE id = {i}")

    sampler = Background(sample)
    leader = feeds.wait_streaming(fleet)
    committer = Background(commit_all)
    wait_for(lambda: len(lsns) >= n // 3, timeout=60, what="a third of the commits made")
    killed_at = time.monotonic()
    feeds.kill_instance(leader)
    survivor = [c for c in fleet if c is not leader][0]
    wait_for(lambda: feeds.feed(survivor)["leader"], timeout=30,
             what="the survivor leading")
    took = time.monotonic() - killed_at
    committer.result(120)
    wait_for(lambda: all(entry_is_fresh(redis, f"/items/{i}") is False for i in range(n)),
             timeout=60, what="every committed change applied")
    wait_for(lambda: (feeds.slot_row(pg) or {}).get("confirmed", 0) >= max(lsns.values()),
             timeout=60, what="the last commit confirmed")
    done.append(1)
    checked = sampler.result()
    expect(not violations, f"positions confirmed before their purges: {violations[:3]}")
    expect_eq(checked, n, "commits whose confirmation was checked against their entry")
    expect(took <= 3 * 2.0, f"the survivor led {took:.1f} s after the kill (lease 2 s)")
    env.report(f"the survivor led {took:.2f} s after kill -9 (lease 2 s); "
               f"{n} commits made, {n} applied")


@scenario(timeout=180)
def redis_stopped_for_10_s_nothing_acknowledged_then_everything_applied(env):
    # While Redis is away no purge can be applied, so nothing is
    # acknowledged (PostgreSQL's pg_stat_replication: the commit was
    # received, written, not flushed); /health says the feed lags; once
    # Redis is back the commit's purge is applied and acknowledged.
    pg, redis, origin, fleet = feed_fleet(env, lease="30s", max_lag="1")
    tagged(origin, "/orders/1", "orders:1")
    pg.sql("INSERT INTO orders VALUES (1, 7, 'a')", db=DB)
    applied(fleet, 1, "the insert applied")
    warm(fleet[0], ["/orders/1"])
    wait_for(lambda: all(feeds.health(c).startswith("ok ") for c in fleet), timeout=30,
             what="/health ok before the outage")
    leader = feeds.leaders(fleet)[0]
    redis.cmd("SAVE")	# its entries come back with it
    stopped_at = time.monotonic()
    redis.stop()
    lsn = feeds.commit_lsn(pg, "UPDATE orders SET note = 'b' WHERE id = 1")
    wait_for(lambda: (feeds.walsender(pg) or {}).get("write", 0) >= lsn, timeout=30,
             what="a status update after the commit was received")
    ws = feeds.walsender(pg)
    expect(ws["flush"] < lsn, f"acknowledged ({ws}) before its purge (commit ends by {lsn})")
    expect((feeds.slot_row(pg) or {})["confirmed"] < lsn, "the slot confirmed the commit")
    wait_for(lambda: "changes=lagging (orders:" in feeds.health(leader), timeout=30,
             what="/health degraded: the slot holds more than max_lag")
    expect(feeds.health(leader).startswith("degraded "), "/health's first word while lagging")
    time.sleep(max(0.0, 10 - (time.monotonic() - stopped_at)))	# the outage's length
    redis.start(port=redis.port)
    wait_for(lambda: entry_is_fresh(redis, "/orders/1") is False, timeout=60,
             what="the commit's purge applied once Redis is back")
    wait_for(lambda: (feeds.slot_row(pg) or {}).get("confirmed", 0) >= lsn, timeout=60,
             what="the commit acknowledged once applied")
    wait_for(lambda: all(feeds.health(c).startswith("ok ") and "changes=up" in feeds.health(c)
                         for c in fleet), timeout=60, what="/health ok again")


@scenario(timeout=180)
def postgres_restarted_the_feed_goes_down_and_comes_back_by_itself(env):
    pg, redis, origin, fleet = feed_fleet(env)
    tagged(origin, "/orders/1", "orders:1")
    pg.sql("INSERT INTO orders VALUES (1, 7, 'a')", db=DB)
    applied(fleet, 1, "the insert applied")
    warm(fleet[0], ["/orders/1"])
    leader = feeds.leaders(fleet)[0]
    pg.stop()
    wait_for(lambda: all("changes=down (orders:" in feeds.health(c) for c in fleet),
             timeout=30, what="/health changes=down on both instances")
    expect(feeds.health(fleet[0]).startswith("degraded "), "/health's first word while down")
    retries = feeds.feed(leader)["reconnects"]
    wait_for(lambda: feeds.feed(leader)["reconnects"] >= retries + 2, timeout=30,
             what="the feed retrying")
    pg.start()
    feeds.wait_streaming(fleet, timeout=60)
    pg.sql("UPDATE orders SET note = 'b' WHERE id = 1", db=DB)
    wait_for(lambda: entry_is_fresh(redis, "/orders/1") is False, timeout=30,
             what="a change after the restart applied")
    downs = [line for line in leader.log().splitlines() if "changes orders: down:" in line]
    expect(1 <= len(downs) <= 2, f"one log line per state change, not per retry: {downs}")
    # The section removed: the leader gives the lease up, the slot is
    # left (its data is the DBA's), and the log names the command that
    # drops it.
    for c in fleet:
        with open(c.config_path) as f:
            text = f.read()
        with open(c.config_path, "w") as f:
            f.write(text[:text.index("[changes orders]")])
        c.proc.send_signal(1)	# SIGHUP
    wait_for(lambda: "pg_drop_replication_slot('corral_orders')" in leader.log(), timeout=30,
             what="the log naming the command that drops the slot")
    wait_for(lambda: not feeds.slot_row(pg)["active"], timeout=30,
             what="nobody reading the slot once the section is gone")


@scenario(timeout=180)
def dropped_slot_is_recreated_and_the_broad_tags_purged_once(env):
    pg, redis, origin, fleet = feed_fleet(env, rules={"orders": "orders:{id} orders"},
                                          broad_tags="catalog")
    for p, t in {"/orders": "orders", "/catalog": "catalog", "/orders/1": "orders:1",
                 "/other": "other"}.items():
        tagged(origin, p, t)
    pg.sql("INSERT INTO orders VALUES (1, 7, 'a')", db=DB)
    applied(fleet, 1, "the insert applied")
    warm(fleet[0], ["/orders", "/catalog", "/orders/1", "/other"])
    broad = sum(feeds.feed(c)["broad_purges"] for c in fleet)

    def drop():
        try:
            pg.sql("SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots "
                   "WHERE slot_name = 'corral_orders' AND active_pid IS NOT NULL")
            pg.sql("SELECT pg_drop_replication_slot('corral_orders')")
            return True
        except PsqlError:	# still active: its reader came back first
            return False
    wait_for(drop, timeout=30, what="the slot dropped under the feed")
    wait_for(lambda: feeds.slot_row(pg) is not None, timeout=60, what="the slot created again")
    wait_for(lambda: entry_is_fresh(redis, "/orders") is False and
             entry_is_fresh(redis, "/catalog") is False, timeout=30,
             what="the broad tags (the rule's and broad_tags) purged")
    expect(entry_is_fresh(redis, "/other"), "a tag that is not broad stays fresh")
    lead = feeds.wait_streaming(fleet)
    expect_eq(sum(feeds.feed(c)["broad_purges"] for c in fleet), broad + 1,
              "broad purges: one, for the slot created again")
    expect(lead.log().count("created replication slot corral_orders") >= 1,
           "the warning in the log")
    pg.sql("UPDATE orders SET note = 'b' WHERE id = 1", db=DB)
    wait_for(lambda: entry_is_fresh(redis, "/orders/1") is False, timeout=30,
             what="changes applied from the new slot")


@scenario(timeout=240)
def missing_publication_and_replication_right_explained_until_the_dba_fixes_them(env):
    pg = env.postgres()
    feeds.setup_database(pg)
    pg.sql("DROP PUBLICATION corral_pub", db=DB)
    redis, origin = env.redis(), env.origin()
    text = feeds.section(env, pg)
    fleet = feeds.fleet(env, pg, redis, origin, section_text=text, routes=LONG)
    wait_for(lambda: all("does not exist" in feeds.health(c) for c in fleet), timeout=30,
             what="/health: the publication is missing")
    h = feeds.health(fleet[0])
    expect(h.startswith("degraded ") and "CREATE PUBLICATION corral_pub" in h,
           f"/health names the fix: {h}")
    t = env.run_corral("-t", "-c", fleet[0].config_path)
    expect_eq(t.returncode, 0, f"corral -t with a database not ready: {t.stderr}")
    expect("warning: [changes orders]: " in t.stderr and "CREATE PUBLICATION" in t.stderr,
           f"corral -t names the fix: {t.stderr}")
    pg.sql("CREATE PUBLICATION corral_pub FOR TABLE orders, items, rows", db=DB)
    feeds.wait_streaming(fleet, timeout=60)
    # The role loses its REPLICATION right: refused, explained, and back
    # once it has it again.
    pg.sql(f"ALTER ROLE {feeds.ROLE} NOREPLICATION")
    pg.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_replication")
    wait_for(lambda: all(f"ALTER ROLE {feeds.ROLE} REPLICATION" in feeds.health(c)
                         for c in fleet), timeout=30,
             what="/health names the missing right and its fix")
    t = env.run_corral("-t", "-c", fleet[0].config_path)
    expect(f"ALTER ROLE {feeds.ROLE} REPLICATION" in t.stderr, f"corral -t: {t.stderr}")
    pg.sql(f"ALTER ROLE {feeds.ROLE} REPLICATION")
    feeds.wait_streaming(fleet, timeout=60)
    wait_for(lambda: all(feeds.health(c).startswith("ok ") for c in fleet), timeout=30,
             what="/health ok on both instances once fixed")


@scenario(timeout=120)
def corral_t_checks_a_section_and_what_its_server_lacks(env):
    pg = env.postgres(settings={"wal_level": "replica"})
    feeds.setup_database(pg)
    redis, origin = env.redis(), env.origin()
    base = corral_config(redis, origin, free_port(), free_port())
    path = env.config_file(base + feeds.section(env, pg))
    t = env.run_corral("-t", "-c", path)
    expect_eq(t.returncode, 0, f"corral -t: {t.stderr}")
    expect("wal_level is replica" in t.stderr and "wal_level = logical" in t.stderr,
           f"corral -t names wal_level's fix: {t.stderr}")
    with open(feeds.password_file(env, "loose")) as f:
        secret = f.read()
    loose = env.config_file(secret, "loose-pw")
    bad = base + feeds.section(env, pg, password_file=loose,
                               postgres=pg.conninfo(DB, feeds.ROLE) + " password=x")
    t = env.run_corral("-t", "-c", env.config_file(bad, "bad.conf"))
    expect_eq(t.returncode, 1, "corral -t of a bad section")
    for what in ("postgres holds a password", "password_file: ", "by others"):
        expect(what in t.stderr, f"corral -t says {what!r}: {t.stderr}")
    bad = base + feeds.section(env, pg) + "tags.orders = orders:{id\n"
    t = env.run_corral("-t", "-c", env.config_file(bad, "bad2.conf"))
    expect_eq(t.returncode, 1, "corral -t of a bad rule")
    expect("tags.orders: rule for orders: template" in t.stderr, f"corral -t: {t.stderr}")
    bad = base + feeds.section(env, pg, postgres="host='127.0.0.1")
    t = env.run_corral("-t", "-c", env.config_file(bad, "bad3.conf"))
    expect_eq(t.returncode, 1, "corral -t of a bad connection string")
    expect("the connection string does not parse" in t.stderr, f"corral -t: {t.stderr}")


@scenario(timeout=180)
def one_leader_and_a_leader_that_loses_its_lease_stops_reading_at_once(env):
    pg, redis, origin, fleet = feed_fleet(env)
    # Over three leases (a second leader would take the lease within one
    # claim, a third of a lease), one instance leads, once.
    until = time.monotonic() + 3 * 2.0
    while time.monotonic() < until:
        lead = feeds.leaders(fleet)
        expect_eq(len(lead), 1, "instances leading")
        time.sleep(0.1)	# a sampling period over a window the bound rules on
    expect_eq(sum(feeds.feed(c)["leaderships"] for c in fleet), 1, "leaderships")
    leader = lead[0]
    follower = [c for c in fleet if c is not leader][0]
    expect_eq(feeds.feed(follower)["leader_instance"], feeds.feed(leader)["leader_instance"],
              "the follower names the leader")
    # Another value takes the lease: the leader stops reading at its
    # next claim (a third of a lease), not when its own time runs out.
    lease = f"{feeds.PREFIX}{{leader:orders}}:lease"
    redis.cmd("SET", lease, "intruder elsewhere:1:1", "PX", "4000")
    taken = time.monotonic()
    wait_for(lambda: not feeds.slot_row(pg)["active"] and not feed_leads(leader), timeout=10,
             what="the leader stopping once its lease is another's")
    stopped = time.monotonic() - taken
    expect(stopped < 2.0, f"the leader read {stopped:.1f} s after losing its lease (2 s)")
    expect(not feeds.leaders(fleet), "nobody leads while the intruder holds the lease")
    feeds.wait_streaming(fleet, timeout=30)
    env.report(f"a leader that lost its lease stopped reading {stopped:.2f} s later")


def feed_leads(c):
    return feeds.feed(c)["leader"]


@scenario(timeout=180)
def notify_mode_purges_payload_tags_and_the_broad_tags_after_a_reconnect(env):
    pg = env.postgres()
    feeds.setup_database(pg, replication=False)
    redis, origin = env.redis(), env.origin()
    for p, t in {"/a": "tag-a", "/orders": "orders", "/b": "tag-b"}.items():
        tagged(origin, p, t)
    text = feeds.section(env, pg, mode="notify", broad_tags="orders")
    fleet = feeds.fleet(env, pg, redis, origin, section_text=text, routes=LONG)
    leader = feeds.wait_streaming(fleet)
    warm(fleet[0], ["/a", "/orders", "/b"])
    pg.sql("NOTIFY corral_tags, 'tag-a'", db=DB)
    wait_for(lambda: entry_is_fresh(redis, "/a") is False, timeout=30,
             what="the notification's tag purged")
    expect(entry_is_fresh(redis, "/orders") and entry_is_fresh(redis, "/b"),
           "only the notified tag purged")
    broad = feeds.feed(leader)["broad_purges"]
    pg.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
           "WHERE application_name = 'corral' AND pid <> pg_backend_pid()")
    wait_for(lambda: entry_is_fresh(redis, "/orders") is False, timeout=30,
             what="the broad tags purged after the reconnect")
    expect(feeds.feed(leader)["broad_purges"] > broad, "a broad purge counted")
    expect("notifications sent meanwhile are lost" in leader.log(), "said in the log")
    expect(entry_is_fresh(redis, "/b"), "a tag neither notified nor broad stays fresh")


@scenario(timeout=120)
def change_feed_module_against_postgres(env):
    # changes/ on its own, through its probe: every case of
    # tests/changes/test_feed.py against one PostgreSQL 15.
    import os
    import subprocess
    import sys
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    probe = os.path.join(os.path.dirname(here), "build", "asan", "tools", "changes_probe")
    done = subprocess.run([sys.executable, os.path.join(here, "changes", "test_feed.py"),
                           "--probe", probe], capture_output=True, text=True, timeout=600)
    failed = [line for line in done.stdout.splitlines() if line.startswith("FAIL")]
    expect(done.returncode == 0 and not failed,
           f"tests/changes/test_feed.py: {failed or done.stderr[-2000:]}")
    env.report(f"{done.stdout.count('PASS ')} cases of the change feed module passed")


@scenario(timeout=420)
def bulk_update_of_100000_rows_goes_through_the_budget_client_misses_first(env):
    # 10,000 cached entries of a 100,000-row table, one UPDATE of every
    # row: the transaction's tags collapse to the table's (over 10,000
    # distinct tags), one batched purge makes every entry stale, and the
    # refreshes the clients then cause rank below their cold misses:
    # max_requests = 8, never more at the origin.
    rows, cached, backlog = 100000, 10000, 200
    pg, redis, origin, fleet = feed_fleet(env, upstream={"max_requests": "8"})
    origin.script("/rows/*", body="{path} v{n}", headers={"Surrogate-Key": "rows:{last}"})
    origin.script("/fresh/*", body="{path} v{n}")
    pg.sql(f"INSERT INTO rows SELECT g, 0 FROM generate_series(1, {rows}) g", db=DB)
    applied(fleet, 1, "the insert applied")
    paths = [f"/rows/{i}" for i in range(1, cached + 1)]
    warmed = feeds.ask_all(fleet, paths)
    expect(all(s == 200 for _, s, _ in warmed), "every entry stored")
    for prefix in ("/rows/*", "/fresh/*"):
        origin.script(prefix, delay_ms=100)
    before = sum(feeds.feed(c)["applied"] for c in fleet)
    committed = time.monotonic()
    pg.sql("UPDATE rows SET v = v + 1", db=DB)
    applied(fleet, before + 1, "the bulk update's purges applied")
    took = time.monotonic() - committed
    lead = feeds.leaders(fleet)[0]
    expect(all(entry_is_fresh(redis, p) is False for p in paths[::97]),
           "every entry of the table stale")
    expect(feeds.feed(lead)["purged"] >= cached, "the entries the purge reached")
    # A backlog of refreshes: each stale answer starts one, and they queue.
    backlog_paths = paths[:backlog]
    stale = feeds.ask_all(fleet, backlog_paths)
    expect(all("ttl=-" in cs for _, _, cs in stale), "stale answers at once")
    queued = lambda: sum(c.stats()["origin_budget"]["queue_length"] for c in fleet)  # noqa: E731
    wait_for(lambda: queued() >= backlog // 2, timeout=30, what="the refreshes queued")
    misses = feeds.ask_all(fleet, [f"/fresh/{i}" for i in range(4)], threads=4)
    expect(all(s == 200 and "fwd=miss" in cs for _, s, cs in misses), f"cold misses: {misses}")
    wait_for(lambda: queued() == 0, timeout=60, what="the backlog drained")
    st = origin.stats()
    arrivals = {p: v["arrivals"][-1] for p, v in st["paths"].items()}
    for i in range(4):
        seq = arrivals[f"/fresh/{i}"]
        overtaken = sum(1 for p in backlog_paths if arrivals.get(p, 0) > seq)
        expect(overtaken >= backlog // 4, f"/fresh/{i} reached the origin before only "
               f"{overtaken} of the {backlog} refreshes queued ahead of it")
    expect(origin.stats()["max_active"] <= 8,
           f"the origin saw {origin.stats()['max_active']} requests at once (max_requests 8)")
    env.report(f"100,000-row UPDATE: {cached} entries stale {took:.2f} s after COMMIT "
               f"({feeds.feed(lead)['tag_purges']} tag purges in all); origin peak "
               f"{origin.stats()['max_active']} at once")
