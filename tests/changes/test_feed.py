#!/usr/bin/env python3
"""The change feed (changes/) against a real PostgreSQL 15: a private
cluster (postgres.py) and the probe (tests/tools/changes_probe.c), which
runs the feed on a libevent loop and prints each commit's LSN and tags.

    make build/asan/tools/changes_probe
    python3 tests/changes/test_feed.py [--probe build/asan/tools/changes_probe] [-k word]...

Prints "PASS name" or "FAIL name: why" per scenario; exits 1 if any
failed. Standard library only; runs as root (PostgreSQL then runs as the
postgres user) or as any user who may run initdb.
"""

import argparse
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))	# tests/, for harness
sys.path.insert(0, HERE)

from harness.postgres import PostgresServer, PsqlError  # noqa: E402
from harness.wait import expect, expect_eq, free_port, sanitizer_report, slow, tail, wait_for  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
DEFAULT_PROBE = os.path.join(ROOT, "build/asan/tools/changes_probe")
DB = "app"
ROLE = "feeder"
PASSWORD = "feeder secret 1"	# a space in it: passed as a keyword, not in the string
PUBLICATION = "corral_pub"
STATUS_INTERVAL_MS = 300	# so "not acknowledged" is seen over several updates
LINE_TIMEOUT_S = 20		# one probe line
RESTART_TIMEOUT_S = 60		# reconnecting after a restart (backoff included)
QUIET_S = 1.5			# "nothing more comes" is watched this long
WAL_SENDER_TIMEOUT = "5s"	# how soon the server gives up on a silent reader

SCHEMA = """
CREATE TABLE orders (id int PRIMARY KEY, customer_id int, note text);
CREATE TABLE line_items (order_id int, line int, qty int, PRIMARY KEY (order_id, line));
CREATE TABLE invoices (id int PRIMARY KEY, customer_id int, total int);
ALTER TABLE invoices REPLICA IDENTITY FULL;
CREATE TABLE unpublished (id int PRIMARY KEY);
CREATE PUBLICATION corral_pub FOR TABLE orders, line_items, invoices;
"""


# -- the probe ----------------------------------------------------------------

class Probe:
    """changes_probe on a slot: its stdout lines, as they come."""

    def __init__(self, workdir, pg, name, slot=None, mode="replication", user=ROLE,
                 publication=PUBLICATION, rules=(), port=None, password=PASSWORD,
                 binary=DEFAULT_PROBE):
        self.name = name
        self.lines = queue.Queue()
        self.seen = []
        self.stderr_path = os.path.join(workdir, f"{name}.stderr")
        pwfile = os.path.join(workdir, f"{name}.password")
        with open(pwfile, "w") as f:
            f.write(password + "\n")
        conninfo = f"host={pg.host} port={port or pg.port} dbname={DB} user={user}"
        argv = [binary, "--conninfo", conninfo, "--password-file", pwfile,
                "--mode", mode, "--status-interval-ms", str(STATUS_INTERVAL_MS)]
        if mode == "replication":
            argv += ["--slot", slot, "--publication", publication]
        else:
            argv += ["--channel", "corral_tags"]
        for table, tags in rules:
            argv += ["--rule", f"{table}={tags}"]
        self.stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.stderr, text=True, bufsize=1)
        threading.Thread(target=self.read, daemon=True).start()

    def read(self):
        for line in self.proc.stdout:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def next_line(self, timeout):
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            return None
        if line is None:
            raise AssertionError(f"{self.name} exited ({self.proc.wait()}); "
                                 f"stderr:\n{tail(self.stderr_text())}")
        self.seen.append(line)
        return line

    def wait_line(self, pred, what, timeout=LINE_TIMEOUT_S):
        """The next line for which pred(line) holds (others are kept in seen)."""
        deadline = time.monotonic() + slow(timeout)
        while time.monotonic() < deadline:
            line = self.next_line(max(0.01, deadline - time.monotonic()))
            if line is not None and pred(line):
                return line
        raise AssertionError(f"{self.name}: no {what} within {timeout} s; lines:\n"
                             + "\n".join(self.seen[-20:]))

    def commit(self, what="a commit"):
        """The next commit line: (lsn, breadth, tags)."""
        words = self.wait_line(lambda l: l.startswith("commit "), what).split()
        return words[1], words[2], words[3:]

    def streaming(self):
        return self.wait_line(lambda l: l.startswith("state streaming"), "streaming")

    def down(self, what):
        return self.wait_line(lambda l: l.startswith("state down"), what)

    def quiet(self, seconds=QUIET_S):
        """No commit line for this long."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            line = self.next_line(deadline - time.monotonic())
            expect(line is None or not line.startswith("commit "),
                   f"{self.name}: unexpected {line!r}")

    def send(self, command):
        self.proc.stdin.write(command + "\n")
        self.proc.stdin.flush()

    def figures(self):
        self.send("figures")
        line = self.wait_line(lambda l: l.startswith("figures "), "figures")
        return dict(word.split("=", 1) for word in line.split()[1:])

    def stderr_text(self):
        if not self.stderr.closed:
            self.stderr.flush()
        with open(self.stderr_path, errors="replace") as f:
            return f.read()

    def stop(self):
        """Stops it (stdin closed), checks its exit status and stderr."""
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass
            try:
                self.proc.wait(slow(15))
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                raise AssertionError(f"{self.name} did not stop on EOF")
        self.stderr.close()
        text = self.stderr_text()
        marker = sanitizer_report(text)
        expect(marker is None, f"{self.name}: {marker} in its stderr:\n{tail(text)}")
        expect_eq(self.proc.returncode, 0, f"{self.name}'s exit status")
        return text


class Session:
    """One psql session held open (a transaction across calls)."""

    MARK = "__done__"

    def __init__(self, pg):
        self.proc = subprocess.Popen(pg.psql_argv(DB), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, bufsize=1)

    def run(self, sql):
        self.proc.stdin.write(f"{sql}\n\\echo {self.MARK}\n")
        self.proc.stdin.flush()
        out = []
        while (line := self.proc.stdout.readline()):
            if line.strip() == self.MARK:
                return "\n".join(out)
            out.append(line.rstrip("\n"))
        raise AssertionError(f"psql session ended: {out}")

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(slow(10))


# -- helpers ------------------------------------------------------------------

def lsn_value(text):
    hi, lo = text.split("/")
    return int(hi, 16) << 32 | int(lo, 16)


def confirmed(pg, slot):
    """The slot's confirmed_flush_lsn as a number (0 if none)."""
    value = pg.sql(f"SELECT confirmed_flush_lsn FROM pg_replication_slots "
                   f"WHERE slot_name = '{slot}'")
    return lsn_value(value) if value else 0


def drop_slot(pg, slot):
    """Drops it once nobody reads it (ending the walsender that does)."""
    def dropped():
        pg.sql(f"SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots "
               f"WHERE slot_name = '{slot}' AND active_pid IS NOT NULL")
        try:
            pg.sql(f"SELECT pg_drop_replication_slot('{slot}') FROM pg_replication_slots "
                   f"WHERE slot_name = '{slot}'")
        except PsqlError as e:
            if "is active" in str(e):
                return False
            raise
        return pg.sql(f"SELECT count(*) FROM pg_replication_slots "
                      f"WHERE slot_name = '{slot}'") == "0"
    wait_for(dropped, timeout=30, what=f"slot {slot} to be dropped", interval=0.05)


class Context:
    def __init__(self, workdir, pg, probe_binary):
        self.workdir = workdir
        self.pg = pg
        self.binary = probe_binary
        self.probes = []

    def probe(self, name, **kw):
        p = Probe(self.workdir, self.pg, name, binary=self.binary, **kw)
        self.probes.append(p)
        return p

    def sql(self, text):
        return self.pg.sql(text, db=DB)

    def close(self):
        for p in self.probes:
            if p.proc.poll() is None:
                p.proc.kill()
                p.proc.wait()


# -- scenarios ----------------------------------------------------------------

def insert_update_delete_truncate_tag_at_commit_only(ctx):
    probe = ctx.probe("iudt", slot="s_iudt")
    probe.streaming()
    session = Session(ctx.pg)
    session.run("BEGIN; INSERT INTO orders VALUES (1, 9, 'a');")
    probe.quiet()			# nothing before the commit
    session.run("COMMIT;")
    expect_eq(probe.commit()[2], ["orders:1", "orders"], "insert's tags")
    session.run("UPDATE orders SET note = 'b' WHERE id = 1;")
    expect_eq(probe.commit()[2], ["orders:1"], "update's tags")
    session.run("UPDATE orders SET id = 2 WHERE id = 1;")
    expect_eq(probe.commit()[2], ["orders:2", "orders:1", "orders"], "key update's tags")
    session.run("DELETE FROM orders WHERE id = 2;")
    expect_eq(probe.commit()[2], ["orders:2", "orders"], "delete's tags")
    session.run("INSERT INTO line_items VALUES (7, 3, 1), (7, 4, 1);")
    expect_eq(probe.commit()[2], ["line_items:7,3", "line_items", "line_items:7,4"],
              "composite keys")
    session.run("TRUNCATE orders, line_items;")
    expect_eq(probe.commit()[2], ["orders", "line_items"], "truncate's tags")
    session.run("INSERT INTO unpublished VALUES (1);")
    probe.quiet()			# not in the publication
    session.close()
    probe.stop()


def rolled_back_transaction_emits_nothing(ctx):
    probe = ctx.probe("rollback", slot="s_rollback")
    probe.streaming()
    ctx.sql("BEGIN; INSERT INTO orders VALUES (10, 1, 'x'); ROLLBACK;")
    ctx.sql("INSERT INTO orders VALUES (11, 1, 'marker');")
    expect_eq(probe.commit()[2], ["orders:11", "orders"],
              "the first commit after a rollback (the marker)")
    probe.quiet()
    probe.stop()


def one_row_three_times_tags_once(ctx):
    probe = ctx.probe("thrice", slot="s_thrice")
    probe.streaming()
    ctx.sql("BEGIN; INSERT INTO orders VALUES (20, 1, 'a');"
            " UPDATE orders SET note = 'b' WHERE id = 20;"
            " UPDATE orders SET note = 'c' WHERE id = 20; COMMIT;")
    expect_eq(probe.commit()[2], ["orders:20", "orders"], "tags of one row changed three times")
    probe.stop()


def logical_message_yields_its_tags_at_commit(ctx):
    probe = ctx.probe("message", slot="s_message")
    probe.streaming()
    ctx.sql("SELECT pg_logical_emit_message(true, 'corral', 'a b')")
    expect_eq(probe.commit()[2], ["a", "b"], "a transactional message's tags")
    ctx.sql("SELECT pg_logical_emit_message(true, 'other', 'x')")
    ctx.sql("SELECT pg_logical_emit_message(false, 'corral', 'now')")
    expect_eq(probe.commit()[2], ["now"], "a non-transactional message's tags")
    probe.stop()


def rules_purge_old_and_new_values(ctx):
    probe = ctx.probe("rules", slot="s_rules", rules=[
        ("invoices", "invoice:{id} customer:{customer_id} invoices"),
        ("public.orders", "order:{id} customer:{customer_id}")])
    probe.streaming()
    ctx.sql("INSERT INTO invoices VALUES (1, 9, 100); INSERT INTO orders VALUES (30, 9, 'a')")
    expect_eq(probe.commit()[2], ["invoice:1", "customer:9", "invoices", "order:30"],
              "rule tags on insert")
    ctx.sql("UPDATE invoices SET customer_id = 10 WHERE id = 1")
    expect_eq(probe.commit()[2], ["invoice:1", "customer:10", "invoices", "customer:9"],
              "REPLICA IDENTITY FULL: old and new customer")
    ctx.sql("UPDATE orders SET customer_id = 10 WHERE id = 30")
    expect_eq(probe.commit()[2], ["order:30", "customer:10", "customer:*"],
              "default identity: the old customer unknown, its broad tag")
    probe.stop()


def nothing_is_acknowledged_until_ack(ctx):
    slot = "s_ack"
    probe = ctx.probe("ack", slot=slot)
    probe.streaming()
    ctx.sql("INSERT INTO orders VALUES (40, 1, 'a')")
    lsn, _, _ = probe.commit()
    time.sleep(slow(QUIET_S))		# several status updates go meanwhile
    expect(confirmed(ctx.pg, slot) < lsn_value(lsn),
           f"confirmed_flush_lsn {confirmed(ctx.pg, slot):X} before the ack of {lsn}")
    probe.send(f"ack {lsn}")
    wait_for(lambda: confirmed(ctx.pg, slot) >= lsn_value(lsn), timeout=10,
             what=f"confirmed_flush_lsn to reach {lsn}")
    figures = probe.figures()
    expect(lsn_value(figures["acked"]) >= lsn_value(lsn), f"figures after the ack: {figures}")
    probe.stop()


def restart_reconnects_and_replays_unacknowledged(ctx):
    slot = "s_restart"
    probe = ctx.probe("restart", slot=slot)
    probe.streaming()
    ctx.sql("INSERT INTO orders VALUES (50, 1, 'acked')")
    a_lsn, _, a_tags = probe.commit("commit A")
    probe.send(f"ack {a_lsn}")
    wait_for(lambda: confirmed(ctx.pg, slot) >= lsn_value(a_lsn), timeout=10,
             what="A acknowledged")
    ctx.sql("INSERT INTO orders VALUES (51, 1, 'not acked')")
    b_lsn, _, b_tags = probe.commit("commit B")
    ctx.pg.stop()
    probe.down("down while PostgreSQL is stopped")
    ctx.pg.start()
    probe.wait_line(lambda l: l.startswith("state streaming"), "streaming again",
                    timeout=RESTART_TIMEOUT_S)
    replayed = []
    while True:
        lsn, _, tags = probe.commit("B replayed")
        replayed.append((lsn, tags))
        if lsn == b_lsn:
            break
        expect_eq((lsn, tags), (a_lsn, a_tags), "a replayed commit before B")
    expect_eq(replayed[-1], (b_lsn, b_tags), "B, replayed")
    probe.send("ack")
    wait_for(lambda: confirmed(ctx.pg, slot) >= lsn_value(b_lsn), timeout=10,
             what="B acknowledged after the restart")
    print(f"# restart: replayed {[l for l, _ in replayed]} (A {a_lsn} acked, B {b_lsn} not)")
    probe.stop()


def restart_with_everything_acknowledged_is_clean(ctx):
    """With every commit acknowledged, a keepalive's position counts as
    acknowledged too: the walsender sees all it sent confirmed and lets
    PostgreSQL shut down at once."""
    slot = "s_clean"
    probe = ctx.probe("clean", slot=slot)
    probe.streaming()
    ctx.sql("INSERT INTO orders VALUES (55, 1, 'x')")
    lsn, _, _ = probe.commit()
    probe.send(f"ack {lsn}")
    wait_for(lambda: confirmed(ctx.pg, slot) >= lsn_value(lsn), timeout=10,
             what="the commit acknowledged")
    started = time.monotonic()
    ctx.pg.stop()
    took = time.monotonic() - started
    line = probe.down("down while PostgreSQL is stopped")
    expect("without pause" not in line, f"the feed held the shutdown: {line}")
    expect(took < slow(5), f"PostgreSQL took {took:.1f} s to stop")
    ctx.pg.start()
    probe.wait_line(lambda l: l.startswith("state streaming"), "streaming again",
                    timeout=RESTART_TIMEOUT_S)
    probe.stop()


def dropped_slot_is_recreated(ctx):
    slot = "s_dropped"
    probe = ctx.probe("dropped", slot=slot)
    probe.wait_line(lambda l: l == "created", "the first created")
    probe.streaming()
    drop_slot(ctx.pg, slot)
    probe.wait_line(lambda l: l == "created", "created again", timeout=RESTART_TIMEOUT_S)
    probe.streaming()
    ctx.sql("INSERT INTO orders VALUES (60, 1, 'after')")
    expect_eq(probe.commit()[2], ["orders:60", "orders"], "a commit on the new slot")
    expect_eq(probe.figures()["created"], "2", "slots created")
    probe.stop()


def lost_slot_is_dropped_and_created(ctx):
    """A slot that fell behind max_slot_wal_keep_size is invalidated
    (wal_status lost): the feed drops it and creates it again."""
    slot = "s_lost"
    probe = ctx.probe("lost1", slot=slot)
    probe.streaming()
    probe.stop()
    ctx.pg.sql("ALTER SYSTEM SET max_slot_wal_keep_size = '1MB'")
    ctx.pg.sql("SELECT pg_reload_conf()")
    try:
        for _ in range(4):	# past 1 MB and a segment: the checkpoint invalidates it
            ctx.sql("INSERT INTO unpublished SELECT g FROM generate_series(1, 20000) g "
                    "ON CONFLICT DO NOTHING; DELETE FROM unpublished; SELECT pg_switch_wal()")
        ctx.pg.sql("CHECKPOINT")
        wait_for(lambda: ctx.pg.sql(f"SELECT wal_status FROM pg_replication_slots "
                                    f"WHERE slot_name = '{slot}'") == "lost",
                 timeout=30, what="the slot invalidated")
        probe = ctx.probe("lost2", slot=slot)
        probe.wait_line(lambda l: l == "created", "the slot created again")
        probe.streaming()
        ctx.sql("INSERT INTO orders VALUES (65, 1, 'x')")
        expect_eq(probe.commit()[2], ["orders:65", "orders"], "a commit on the new slot")
        probe.stop()
    finally:
        ctx.pg.sql("ALTER SYSTEM RESET max_slot_wal_keep_size")
        ctx.pg.sql("SELECT pg_reload_conf()")


def second_reader_is_refused_while_first_streams(ctx):
    first = ctx.probe("first", slot="s_shared")
    first.streaming()
    second = ctx.probe("second", slot="s_shared")
    line = second.down("the second reader refused")
    expect("is active for PID" in line and "one reader" in line, f"second reader: {line}")
    first.stop()
    line = second.wait_line(lambda l: l.startswith("state streaming"),
                            "the second reader streaming once the first left",
                            timeout=RESTART_TIMEOUT_S)
    second.stop()


def frozen_reader_holds_slot_until_wal_sender_timeout(ctx):
    """A reader that stops answering (SIGSTOP: a hung or partitioned
    host) keeps the slot until the server gives up on it after
    wal_sender_timeout; a second reader, refused until then, retries and
    takes over."""
    first = ctx.probe("frozen", slot="s_frozen")
    first.streaming()
    first.proc.send_signal(signal.SIGSTOP)
    try:
        second = ctx.probe("successor", slot="s_frozen")
        line = second.down("the successor refused while the first holds the slot")
        expect("is active for PID" in line, f"the successor: {line}")
        started = time.monotonic()
        second.wait_line(lambda l: l.startswith("state streaming"),
                         "the successor streaming", timeout=RESTART_TIMEOUT_S)
        took = time.monotonic() - started
        print(f"# frozen reader: the successor streamed {took:.1f} s after its refusal "
              f"(wal_sender_timeout {WAL_SENDER_TIMEOUT})")
        ctx.sql("INSERT INTO orders VALUES (80, 1, 'x')")
        expect_eq(second.commit()[2], ["orders:80", "orders"], "the successor's commit")
        second.stop()
    finally:
        first.proc.send_signal(signal.SIGCONT)
    first.stop()


def missing_publication_is_explained(ctx):
    probe = ctx.probe("nopub", slot="s_nopub", publication="nopub")
    line = probe.down("a refusal")
    expect("CREATE PUBLICATION nopub" in line, f"missing publication: {line}")
    probe.stop()


def foreign_slot_is_refused(ctx):
    ctx.pg.sql("SELECT pg_create_physical_replication_slot('s_physical')")
    probe = ctx.probe("physical", slot="s_physical")
    line = probe.down("a refusal")
    expect("is not a logical pgoutput slot" in line and "pg_drop_replication_slot" in line,
           f"a physical slot: {line}")
    probe.stop()
    expect_eq(ctx.pg.sql("SELECT slot_type FROM pg_replication_slots "
                         "WHERE slot_name = 's_physical'"), "physical", "the slot, untouched")


def role_without_replication_is_explained(ctx):
    probe = ctx.probe("norepl", slot="s_norepl", user="norepl")
    line = probe.down("a refusal")
    expect("ALTER ROLE norepl REPLICATION" in line, f"role without REPLICATION: {line}")
    probe.stop()


def replication_line_in_pg_hba_admits_no_logical_connection(ctx):
    """pg_hba.conf's "replication" lines are for physical replication: a
    logical one (replication=database) matches by its database."""
    probe = ctx.probe("physonly", slot="s_physonly", user="physonly")
    line = probe.down("a refusal")
    expect("no pg_hba.conf entry" in line and "matches by its database" in line,
           f"a role with only a replication line: {line}")
    probe.stop()


def unreachable_server_is_explained(ctx):
    probe = ctx.probe("unreachable", slot="s_unreachable", port=free_port())
    line = probe.down("a refusal")
    expect("unreachable" in line and "Connection refused" in line, f"unreachable: {line}")
    probe.stop()


def wal_level_replica_is_explained(ctx):
    pg = PostgresServer(ctx.workdir, name="replica_level", settings={"wal_level": "replica"})
    try:
        setup_cluster(pg)
        probe = Probe(ctx.workdir, pg, "walreplica", slot="s_level", binary=ctx.binary)
        ctx.probes.append(probe)
        line = probe.down("a refusal")
        expect("wal_level is replica" in line and "wal_level = logical" in line,
               f"wal_level replica: {line}")
        probe.stop()
    finally:
        pg.remove()


def notify_mode_delivers_payloads_and_reconnects(ctx):
    probe = ctx.probe("notify", mode="notify")
    probe.wait_line(lambda l: l == "reconnect", "the first reconnect hook")
    ctx.sql("NOTIFY corral_tags, 'x y'")
    lsn, _, tags = probe.commit()
    expect_eq((lsn, tags), ("0/0", ["x", "y"]), "a NOTIFY's tags")
    ctx.pg.stop()
    probe.down("down while PostgreSQL is stopped")
    ctx.pg.start()
    probe.wait_line(lambda l: l == "reconnect", "the reconnect hook after a restart",
                    timeout=RESTART_TIMEOUT_S)
    ctx.sql("NOTIFY corral_tags, 'z'")
    expect_eq(probe.commit()[2], ["z"], "a NOTIFY after the restart")
    probe.stop()


def stop_from_inside_a_callback(ctx):
    probe = ctx.probe("stopcb", slot="s_stopcb")
    probe.streaming()
    probe.send("stop-at-commit")
    ctx.sql("INSERT INTO orders VALUES (70, 1, 'x')")
    probe.commit()
    probe.wait_line(lambda l: l == "stopped", "stopped")
    probe.proc.wait(slow(10))
    probe.stop()


SCENARIOS = [
    insert_update_delete_truncate_tag_at_commit_only,
    rolled_back_transaction_emits_nothing,
    one_row_three_times_tags_once,
    logical_message_yields_its_tags_at_commit,
    rules_purge_old_and_new_values,
    nothing_is_acknowledged_until_ack,
    restart_reconnects_and_replays_unacknowledged,
    restart_with_everything_acknowledged_is_clean,
    dropped_slot_is_recreated,
    lost_slot_is_dropped_and_created,
    second_reader_is_refused_while_first_streams,
    frozen_reader_holds_slot_until_wal_sender_timeout,
    missing_publication_is_explained,
    foreign_slot_is_refused,
    role_without_replication_is_explained,
    replication_line_in_pg_hba_admits_no_logical_connection,
    unreachable_server_is_explained,
    wal_level_replica_is_explained,
    notify_mode_delivers_payloads_and_reconnects,
    stop_from_inside_a_callback,
]


# -- running ------------------------------------------------------------------

def setup_cluster(pg):
    pg.sql(f"CREATE ROLE {ROLE} LOGIN REPLICATION PASSWORD '{PASSWORD}'")
    pg.sql(f"CREATE ROLE norepl LOGIN PASSWORD '{PASSWORD}'")
    pg.sql(f"CREATE ROLE physonly LOGIN REPLICATION PASSWORD '{PASSWORD}'")
    pg.sql(f"CREATE DATABASE {DB}")	# the feed's role owns nothing in it
    pg.sql(SCHEMA, db=DB)
    # No GRANT: decoding checks no table privilege.
    # physonly has only the replication line, which admits no logical
    # replication connection (it names no database).
    pg.write_hba(["local all all trust", "local replication all trust",
                  f"host all {ROLE},norepl 127.0.0.1/32 scram-sha-256",
                  "host replication all 127.0.0.1/32 scram-sha-256"])
    pg.reload_conf()


def drop_probe_slots(pg):
    for slot in pg.sql("SELECT slot_name FROM pg_replication_slots").split():
        drop_slot(pg, slot)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--probe", default=DEFAULT_PROBE)
    ap.add_argument("-k", dest="keywords", action="append", default=[])
    ap.add_argument("--keep", action="store_true",
                    help="keep the cluster's directory and the probes' stderr")
    args = ap.parse_args()
    if not os.access(args.probe, os.X_OK):
        sys.exit(f"no probe at {args.probe}: make build/asan/tools/changes_probe")
    workdir = tempfile.mkdtemp(prefix="corral-changes-")
    os.chmod(workdir, 0o755)
    failed = 0
    pg = PostgresServer(workdir, settings={"wal_sender_timeout": WAL_SENDER_TIMEOUT})
    try:
        setup_cluster(pg)
        for fn in SCENARIOS:
            if args.keywords and not any(k in fn.__name__ for k in args.keywords):
                continue
            ctx = Context(workdir, pg, args.probe)
            started = time.monotonic()
            try:
                fn(ctx)
                print(f"PASS {fn.__name__} ({time.monotonic() - started:.1f} s)", flush=True)
            except Exception as e:	# noqa: BLE001 -- every failure is reported
                failed += 1
                print(f"FAIL {fn.__name__}: {e}", flush=True)
                traceback.print_exc(limit=3)
            finally:
                ctx.close()
                if not pg.running():
                    pg.start()
                drop_probe_slots(pg)
    finally:
        pg.stop()
        if failed or args.keep:
            print(f"# PostgreSQL's log: {pg.log_path}; probes' stderr in {workdir}")
        else:
            pg.remove()
            shutil.rmtree(workdir, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
