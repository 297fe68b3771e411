"""The change feeds' scenarios: a database ready for a feed (a role, its
password file, tables, a publication), a [changes NAME] section for it,
and what the instances and the server say of the feed (leaders, states,
the slot's confirmed position). Imported as harness.feeds.
"""

import os

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
