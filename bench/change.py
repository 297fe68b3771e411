"""The change workload of bench/run: fresh on change against fresh by TTL.

CHANGE_ROWS hot entries (/chg/ID, 1 KiB, each tagged items:ID) on a
fleet of FLEET_SIZE instances of each proxy, under wrk's load on every
instance, while a private PostgreSQL 15 commits CHANGE_RATE row updates a
second for CHANGE_SECONDS. The origin stands in for an application on the
database: just before each commit, the bench tells it the row's new
version, which its answer for the row's path carries from then on.
Corral reads the commits ([changes bench]: one replication slot,
soft purges) and keeps /chg/ fresh HOT_TTL_S; nginx and Varnish keep it
fresh CHANGE_TTL_S: their staleness is their TTL.

Every PROBE_EVERY-th commit is probed: from the moment the commit
returned, its path is asked (through the instances in turn, every
PROBE_INTERVAL_S) until an answer is fresh (a hit, not stale) and carries
the commit's version or a later one: commit-to-fresh. A probe that never
sees it within PROBE_GIVE_UP_S counts as a change lost, and so does a row
whose last version every instance does not serve once the run is over.
Origin fetches per change are the origin's requests for /chg/ during the
run over the commits; the slot's lag is read from the leader's /stats
every LAG_SAMPLE_S.
"""

import concurrent.futures
import os
import random
import subprocess
import sys
import threading
import time

CHANGE_PREFIX = "/chg/"
CHANGE_ROWS = 1000
CHANGE_RATE = 100		# commits per second
CHANGE_SECONDS = 20
CHANGE_TTL_S = 5		# nginx and Varnish: fresh by TTL alone
PROBE_EVERY = 5			# every 5th commit is probed
PROBE_INTERVAL_S = 0.005
PROBE_GIVE_UP_S = CHANGE_TTL_S * 2 + 5
PROBE_THREADS = 96
LAG_SAMPLE_S = 0.1
CONVERGE_S = CHANGE_TTL_S * 3	# after the run: every row's last version
WRK_CONNS = 8			# per instance
SECTION = "bench"
DB = "bench"
ROLE = "bench_feed"
PASSWORD = "bench feed secret"
COMMIT_TO_FRESH_P99_MAX_MS = 500
FETCHES_PER_CHANGE_MAX = 1.1	# one per affected hot entry, and a little slack

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "tests"))


class Database:
    """A private PostgreSQL 15 (tests/harness/postgres.py) with the
    table, the role and the publication a [changes] section reads, and one
    psql session that commits, each commit's return read from its
    output."""

    def __init__(self, tmp):
        from harness.postgres import PostgresServer	# noqa: PLC0415
        os.chmod(tmp, 0o755)
        self.pg = PostgresServer(tmp, "postgres")
        self.pg.sql(f"CREATE ROLE {ROLE} LOGIN REPLICATION PASSWORD '{PASSWORD}'")
        self.pg.sql(f"CREATE DATABASE {DB}")
        self.pg.sql("CREATE TABLE items (id int PRIMARY KEY, v int); "
                    f"INSERT INTO items SELECT g, 0 FROM generate_series(0, {CHANGE_ROWS - 1}) g; "
                    "CREATE PUBLICATION bench_pub FOR TABLE items", db=DB)
        self.pg.write_hba(["local all all trust", "local replication all trust",
                           f"host {DB} {ROLE} 127.0.0.1/32 scram-sha-256"])
        self.pg.reload_conf()
        self.pwfile = os.path.join(tmp, "pg-password")
        with open(os.open(self.pwfile, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
            f.write(PASSWORD + "\n")
        self.psql = subprocess.Popen(self.pg.psql_argv(DB), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, bufsize=1)

    def section(self):
        return (f"[changes {SECTION}]\npostgres = {self.pg.conninfo(DB, ROLE)}\n"
                f"password_file = {self.pwfile}\npublication = bench_pub\n")

    def commit(self, row, version):
        """UPDATE of one row, one transaction; time.monotonic() once it
        returned."""
        self.psql.stdin.write(f"UPDATE items SET v = {version} WHERE id = {row};\n"
                              f"\\echo C{row}\n")
        self.psql.stdin.flush()
        line = self.psql.stdout.readline()
        if line.strip() != f"C{row}":
            raise RuntimeError(f"psql: {line.strip()!r}")
        return time.monotonic()

    def slot_lag(self):
        out = self.pg.sql("SELECT coalesce(pg_current_wal_lsn() - confirmed_flush_lsn, 0) "
                          "FROM pg_replication_slots WHERE slot_name = 'corral_bench'")
        return int(float(out)) if out else None

    def stop(self):
        if self.psql.poll() is None:
            self.psql.stdin.close()
            self.psql.wait(10)
        self.pg.remove()


def fresh_answer(proxy, headers, body, path, version):
    """Is this answer fresh, with version (or a later one)?"""
    if not body.startswith(f"{path} v".encode()):
        return False
    if int(body.rsplit(b"v", 1)[1]) < version:
        return False
    if proxy.name == "corral":
        status = headers.get("Cache-Status", "")
        return "hit" in status and "ttl=-" not in status
    return headers.get("X-Bench-Cache", "") == "HIT"


class Probes:
    """Commit-to-fresh of probed commits, asked over a pool of threads."""

    def __init__(self, proxy, targets, http_get):
        self.proxy, self.targets, self.get = proxy, targets, http_get
        self.latencies, self.lost = [], []
        self.lock = threading.Lock()
        self.pool = concurrent.futures.ThreadPoolExecutor(PROBE_THREADS)
        self.futures = []

    def start(self, path, version, committed):
        self.futures.append(self.pool.submit(self.probe, path, version, committed))

    def probe(self, path, version, committed):
        k = random.randrange(len(self.targets))
        while time.monotonic() - committed < PROBE_GIVE_UP_S:
            target = self.targets[k % len(self.targets)]
            k += 1
            try:
                headers, body = self.get(target, path)
            except OSError:
                headers, body = {}, b""
            if fresh_answer(self.proxy, headers, body, path, version):
                with self.lock:
                    self.latencies.append(time.monotonic() - committed)
                return
            time.sleep(PROBE_INTERVAL_S)	# the probe's period
        with self.lock:
            self.lost.append((path, version))

    def finish(self):
        concurrent.futures.wait(self.futures)
        self.pool.shutdown()


def change_phase(proxy, origin, load, args, res, bench):
    """The change workload for one proxy (bench: bench/run's helpers)."""
    db = bench.change_db()
    fleet = bench.FLEET_SIZE
    proxy.changes = db.section() if proxy.name == "corral" else None
    origin.reset()
    origin.script(CHANGE_PREFIX + "*", body="{path} v0",
                  headers={"Surrogate-Key": "items:{last}"})
    targets = proxy.start(fleet).split(",")
    try:
        if proxy.name == "corral":
            bench.wait_for("the change feed streaming", lambda: any(
                s["changes"][SECTION]["leader"] and s["changes"][SECTION]["state"] ==
                "streaming" for s in proxy.stats()), 60)
        for t in targets:	# each nginx and Varnish caches for itself
            load.walk(t, CHANGE_PREFIX, CHANGE_ROWS)
        res["change"] = run_changes(proxy, origin, load, db, targets, bench)
    finally:
        proxy.stop()
        proxy.changes = None


def run_changes(proxy, origin, load, db, targets, bench):
    before = origin_change_fetches(origin)
    probes = Probes(proxy, targets, bench.get_path)
    wrks = [threading.Thread(target=load.wrk_bg, args=(t, CHANGE_PREFIX, CHANGE_ROWS,
                                                       CHANGE_SECONDS + 2, WRK_CONNS),
                             daemon=True) for t in targets]
    for w in wrks:
        w.start()
    lags, stop = [], threading.Event()
    sampler = threading.Thread(target=sample_lag, args=(proxy, lags, stop), daemon=True)
    sampler.start()
    versions, n = {}, CHANGE_SECONDS * CHANGE_RATE
    t0 = time.monotonic()
    for i in range(n):
        delay = t0 + i / CHANGE_RATE - time.monotonic()
        if delay > 0:
            time.sleep(delay)	# the commit rate
        row = random.randrange(CHANGE_ROWS)
        versions[row] = versions.get(row, 0) + 1
        path = f"{CHANGE_PREFIX}{row}"
        origin.script(path, body=f"{path} v{versions[row]}",
                      headers={"Surrogate-Key": f"items:{row}"})
        committed = db.commit(row, versions[row])
        if i % PROBE_EVERY == 0:
            probes.start(path, versions[row], committed)
    took = time.monotonic() - t0
    probes.finish()
    for w in wrks:
        w.join(CHANGE_SECONDS + 120)
    stop.set()
    sampler.join()
    fetched = origin_change_fetches(origin) - before
    stale_rows = converge(proxy, targets, versions, bench)
    lat = sorted(probes.latencies)
    pct = bench.pct
    out = {"commits": n, "commit_rate": n / took, "probes": len(lat) + len(probes.lost),
           "lost": len(probes.lost) + len(stale_rows), "probe_lost": len(probes.lost),
           "rows_not_converged": len(stale_rows), "origin_fetches": fetched,
           "fetches_per_change": fetched / n, "rows_changed": len(versions)}
    if lat:
        out.update(p50_us=pct(lat, 50) * 1e6, p99_us=pct(lat, 99) * 1e6,
                   max_us=lat[-1] * 1e6)
    if lags:
        out["lag_bytes_max"] = max(b for b, _ in lags)
        out["lag_s_max"] = max(s for _, s in lags)
    if proxy.name == "corral":
        out["slot_lag_end"] = db.slot_lag()
    return out


def origin_change_fetches(origin):
    return sum(v["count"] for p, v in origin.stats()["paths"].items()
               if p.startswith(CHANGE_PREFIX))


def sample_lag(proxy, lags, stop):
    """The leader's lag (bytes, seconds) every LAG_SAMPLE_S (Corral)."""
    if proxy.name != "corral":
        return
    while not stop.wait(LAG_SAMPLE_S):
        try:
            for s in proxy.stats():
                c = s["changes"][SECTION]
                if c["leader"]:
                    lags.append((max(0, c["lag_bytes"]), max(0.0, c["lag_seconds"])))
        except (OSError, KeyError, ValueError):
            pass


def converge(proxy, targets, versions, bench):
    """The rows whose last version some instance still does not serve
    fresh CONVERGE_S after the run (each asked until it does)."""
    left = set(versions)
    deadline = time.monotonic() + CONVERGE_S
    while left and time.monotonic() < deadline:
        for row in list(left):
            path = f"{CHANGE_PREFIX}{row}"
            ok = True
            for t in targets:
                try:
                    headers, body = bench.get_path(t, path)
                except OSError:
                    ok = False
                    continue
                ok = ok and fresh_answer(proxy, headers, body, path, versions[row])
            if ok:
                left.discard(row)
        time.sleep(0.05)	# between passes over the rows left
    return left
