"""The change feeds' scenarios: a database ready for a feed (a role, its
password file, tables, a publication), a [changes NAME] section for it,
and what the instances and the server say of the feed (leaders, states,
the slot's confirmed position). Imported as harness.feeds.
"""

import os
import time

from .keys import PREFIX	# noqa: F401 - the lease's key is PREFIX{leader:NAME}:lease
from .wait import START_TIMEOUT_S, expect, wait_for

DB = "app"
ROLE = "feeder"
PASSWORD = "feeder secret 1"	# a space in it: sent as a keyword, never in the string
PUBLICATION = "corral_pub"

# A table the default rule tags (orders:ID, orders), one with a rule of its
# own (items), and one a bulk change fills (rows).
SCHEMA = """
CREATE TABLE orders (id int PRIMARY KEY, customer_id int, note text);
CREATE TABLE items (id int PRIMARY KEY, order_id int, qty int);
CREATE TABLE rows (id int PRIMARY KEY, v int);
CREATE PUBLICATION corral_pub FOR TABLE orders, items, rows;
"""


def setup_database(pg, schema=SCHEMA, replication=True):
    """The feed's role (with REPLICATION unless told otherwise), the
    database and its tables; pg_hba admits the role's logical replication
    connections by their database, as docs/operations.md tells a DBA."""
    attr = "REPLICATION" if replication else "NOREPLICATION"
    pg.sql(f"CREATE ROLE {ROLE} LOGIN {attr} PASSWORD '{PASSWORD}'")
    pg.sql(f"CREATE DATABASE {DB}")
    pg.sql(schema, db=DB)
    pg.write_hba(["local all all trust", "local replication all trust",
                  f"host {DB} {ROLE} 127.0.0.1/32 scram-sha-256"])
    pg.reload_conf()


def password_file(env, name="pgpass"):
    """The role's password in a file only its owner may read."""
    path = os.path.join(env.workdir, name)
    with open(path, "w") as f:
        f.write(PASSWORD + "\n")
    os.chmod(path, 0o600)
    return path


def section(env, pg, name="orders", mode="replication", rules=None, **keys):
    """The INI text of [changes NAME] for pg's database: a short lease and
    status interval so that scenarios see hand-overs and acknowledgements
    within seconds; keys override (None leaves a key out)."""
    values = {"postgres": pg.conninfo(DB, ROLE), "password_file": password_file(env),
              "mode": mode, "lease": "2s", "status_interval": "500ms"}
    if mode == "replication":
        values["publication"] = PUBLICATION
    else:
        values["channel"] = "corral_tags"
    values.update(keys)
    lines = [f"[changes {name}]"]
    lines += [f"{k} = {v}" for k, v in values.items() if v is not None]
    lines += [f"tags.{table} = {tags}" for table, tags in (rules or {}).items()]
    return "\n".join(lines) + "\n"


def feed(corral, name="orders"):
    """The section's row in corral's /stats."""
    return corral.stats()["changes"][name]


def leaders(fleet, name="orders"):
    """The instances of fleet that say they lead name's feed."""
    return [c for c in fleet if c.running() and feed(c, name)["leader"]]


def wait_streaming(fleet, name="orders", timeout=START_TIMEOUT_S):
    """Waits until exactly one instance leads and its feed streams; it."""
    def one_streams():
        lead = leaders(fleet, name)
        return lead[0] if len(lead) == 1 and feed(lead[0], name)["state"] == "streaming" \
            else None
    return wait_for(one_streams, timeout=timeout, what=f"one leader of {name} streaming")


def slot_row(pg, slot="corral_orders"):
    """pg_replication_slots' active, active_pid and confirmed_flush_lsn
    (as an int) of slot, or None when there is none."""
    rows = pg.rows("SELECT active, coalesce(active_pid, 0), confirmed_flush_lsn "
                   f"FROM pg_replication_slots WHERE slot_name = '{slot}'")
    if not rows:
        return None
    active, pid, lsn = rows[0]
    return {"active": active == "t", "pid": int(pid), "confirmed": lsn_int(lsn)}


def lsn_int(text):
    """'16/B374D848' -> its 64-bit value (0 for '')."""
    if not text:
        return 0
    hi, lo = text.split("/")
    return (int(hi, 16) << 32) | int(lo, 16)


def commit_lsn(pg, sql):
    """Runs sql (one transaction, in the app database) and returns the
    server's WAL insert position right after its commit: no less than the
    commit's end, which is what a feed acknowledges."""
    out = pg.sql(f"{sql}; SELECT pg_current_wal_insert_lsn()", db=DB)
    return lsn_int(out.splitlines()[-1])


def fleet(env, pg, redis, origin, n=2, workers=2, routes=None, section_text=None, server=None,
          upstream=None):
    """n instances of workers processes each, sharing redis, origin and the
    feed section_text (feeds.section()'s by default); waits until every
    process holds its Redis subscription."""
    from .corral import corral_config	# noqa: PLC0415
    from .wait import free_port	# noqa: PLC0415
    text = section_text if section_text is not None else section(env, pg)
    before = redis.subscribers()
    out = []
    for _ in range(n):
        extra = {"server": dict({"workers": str(workers)}, **(server or {}))}
        if upstream:
            extra["upstream"] = upstream
        config = corral_config(redis, origin, free_port(), free_port(), routes, extra) + \
            "\n" + text
        out.append(env.corral(config=config))
    env.wait_subscribed(redis, before + n * workers)
    return out


class Askers:
    """clients threads that keep asking paths (in turn) of the instances of
    fleet (in turn), each on a kept-alive connection, until stop(); every
    answer is kept as (time.time() when read, instance index, path, status,
    Cache-Status, body)."""

    def __init__(self, fleet, paths, clients=50):
        import http.client	# noqa: PLC0415
        import threading	# noqa: PLC0415
        from .keys import HOST	# noqa: PLC0415
        self.answers, self.errors = [], []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.rounds = [0] * clients

        def ask(i):
            target = fleet[i % len(fleet)]
            conn = None
            k = i
            while not self.stopping.is_set():
                path = paths[k % len(paths)]
                k += 1
                try:
                    if conn is None:
                        conn = http.client.HTTPConnection(target.host, target.port, timeout=30)
                    conn.request("GET", path, headers={"Host": HOST})
                    resp = conn.getresponse()
                    body = resp.read()
                    with self.lock:
                        self.answers.append((time.time(), i % len(fleet), path, resp.status,
                                             resp.getheader("Cache-Status") or "", body))
                except Exception as e:	# noqa: BLE001 - kept, checked by the scenario
                    with self.lock:
                        self.errors.append(repr(e))
                    if conn is not None:
                        conn.close()
                    conn = None
                self.rounds[i] += 1
        self.threads = [threading.Thread(target=ask, args=(i,), daemon=True)
                        for i in range(clients)]
        for t in self.threads:
            t.start()

    def since(self, t):
        with self.lock:
            return [a for a in self.answers if a[0] >= t]

    def wait_rounds(self, n, what):
        """Waits until every client has asked n more times."""
        start = list(self.rounds)
        wait_for(lambda: all(r >= s + n for r, s in zip(self.rounds, start)),
                 timeout=START_TIMEOUT_S * 4, what=what)

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join(60)
        expect(not self.errors, f"clients failed: {self.errors[:3]}")


def is_fresh_hit(cache_status):
    """A Cache-Status of a fresh hit (not stale, not fetched)."""
    return "hit" in cache_status and "ttl=-" not in cache_status and "fwd=" not in cache_status


def kill_instance(corral):
    """kill -9 of an instance: its master and every worker at once."""
    import signal	# noqa: PLC0415
    from .corral import children	# noqa: PLC0415
    pids = [corral.proc.pid] + children(corral.proc.pid)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    corral.proc.wait()
    corral.stopped = True


def walsender(pg):
    """pg_stat_replication's write_lsn and flush_lsn of the feed's session
    (as ints), or None while it has none."""
    rows = pg.rows("SELECT coalesce(write_lsn::text, ''), coalesce(flush_lsn::text, '') "
                   "FROM pg_stat_replication WHERE application_name = 'corral'")
    if not rows:
        return None
    return {"write": lsn_int(rows[0][0]), "flush": lsn_int(rows[0][1])}


def health(corral):
    """The first line of corral's /health."""
    return corral.admin("GET", "/health").body.decode().strip()


def ask_all(fleet, paths, threads=16):
    """GETs every path once, spread over threads on kept-alive connections
    and over the instances of fleet; the (path, status, Cache-Status)
    answers."""
    import http.client	# noqa: PLC0415
    import threading	# noqa: PLC0415
    from .keys import HOST	# noqa: PLC0415
    out, errors = [], []

    def run(k):
        target = fleet[k % len(fleet)]
        conn = http.client.HTTPConnection(target.host, target.port, timeout=60)
        try:
            for path in paths[k::threads]:
                conn.request("GET", path, headers={"Host": HOST})
                resp = conn.getresponse()
                resp.read()
                out.append((path, resp.status, resp.getheader("Cache-Status") or ""))
        except Exception as e:	# noqa: BLE001 - reported below
            errors.append(repr(e))
        finally:
            conn.close()
    ts = [threading.Thread(target=run, args=(k,), daemon=True) for k in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(600)
    expect(not errors, f"clients failed: {errors[:3]}")
    return out
