# SPDX-License-Identifier: MIT
"""Heap allocations per request, counted by tests/tools/alloc_count.so
preloaded into the release build (build/release/corral: ASan brings its
own malloc, which a preloaded counter cannot stand in front of).

The counter writes each process's counts to a file every 20 ms; a reading
is taken once two writes in a row agree, so the worker has finished what
the last request left it to do (a free after the response went out)."""

import os
import socket
import subprocess
from collections import namedtuple

from harness import (CLIENT_TIMEOUT_S, HOST, children, expect, expect_eq, expected_failure,
                     scenario, wait_for)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RELEASE_BIN = os.path.join(ROOT, "build", "release", "corral")
ALLOC_COUNT_SO = os.path.join(ROOT, "build", "tools", "alloc_count.so")
ALLOC_PROBE = os.path.join(ROOT, "build", "tools", "alloc_probe")
BUILT = ("build/release/corral", "build/tools/alloc_count.so", "build/tools/alloc_probe")

KIB = 1024
WARMUP_HITS = 1_000		# before the first reading: every connection's first requests
HOT_HITS = 10_000		# between the readings
HOT_ALLOCS_MAX = 64		# allocations the worker may make over HOT_HITS hits
CONNECTIONS = 4			# kept alive; half of them pipelined
PIPELINE_DEPTH = 16
NEW_CONNECTION_HITS = 1_000	# one request per connection: reported, not bounded
SETTLE_TIMEOUT_S = 30		# for two writes of the counts in a row to agree

Counts = namedtuple("Counts", "pid seq allocs frees malloc calloc realloc aligned bytes")


def build():
    """The release build and the counter, brought up to date (make test
    has built them; a run of run.py -k alone may not have)."""
    p = subprocess.run(["make", "--no-print-directory", "-s", *BUILT], cwd=ROOT,
                       capture_output=True, text=True, errors="replace", timeout=900,
                       stdin=subprocess.DEVNULL)
    if p.returncode != 0:
        raise AssertionError(f"make {' '.join(BUILT)} exited with {p.returncode}:\n"
                             f"{(p.stdout + p.stderr)[-3000:]}")


def read_counts(path):
    """The counts a process last wrote, or None before its first write."""
    try:
        with open(path) as f:
            fields = f.read().split()
    except FileNotFoundError:
        return None
    return Counts(*(int(x) for x in fields)) if len(fields) == len(Counts._fields) else None


def settled_counts(path):
    """The counts once two writes in a row agree: the process is idle."""
    last = None

    def agreed():
        nonlocal last
        now = read_counts(path)
        if now is None:
            return None
        if last is not None and now.seq > last.seq and \
                (now.allocs, now.frees) == (last.allocs, last.frees):
            return now
        last = now
        return None
    return wait_for(agreed, timeout=SETTLE_TIMEOUT_S,
                    what=f"two writes in a row of {path} to agree")


class HitConnection:
    """A kept-alive client connection asking for one path: hits(n, depth)
    sends n requests, depth at a time (1: one after the other), reads each
    response and checks it is a hit of size bytes."""

    def __init__(self, corral, path, size):
        self.sock = socket.create_connection((corral.host, corral.port), CLIENT_TIMEOUT_S)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.request = f"GET {path} HTTP/1.1\r\nHost: {HOST}\r\n\r\n".encode()
        self.size = size
        self.buf = bytearray()

    def hits(self, n, depth=1):
        while n > 0:
            k = min(n, depth)
            self.sock.sendall(self.request * k)
            for _ in range(k):
                self.read_hit()
            n -= k

    def fill(self, need):
        while len(self.buf) < need:
            chunk = self.sock.recv(256 * KIB)
            if not chunk:
                raise AssertionError("corral closed a kept-alive connection")
            self.buf += chunk

    def read_hit(self):
        while (end := self.buf.find(b"\r\n\r\n")) < 0:
            self.fill(len(self.buf) + 1)
        lines = bytes(self.buf[:end]).decode("latin-1").split("\r\n")
        fields = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            fields[name.strip().lower()] = value.strip()
        length = int(fields.get("content-length", -1))
        expect(lines[0].startswith("HTTP/1.1 200") and length == self.size and
               "hit" in fields.get("cache-status", "").split("; "),
               f"a {self.size}-byte hit: {lines!r}")
        self.fill(end + 4 + length)
        del self.buf[:end + 4 + length]

    def close(self):
        self.sock.close()


def spread_hits(conns, n):
    """n hits over conns: the first half one at a time, the others pipelined."""
    share = n // len(conns)
    for i, c in enumerate(conns):
        c.hits(share + (n % len(conns) if i == 0 else 0),
               1 if i < len(conns) // 2 else PIPELINE_DEPTH)


def delta(before, after):
    return after.allocs - before.allocs, after.frees - before.frees


def kept_alive_hits(corral, counts_path, path, size):
    """(allocs, frees) of the worker over HOT_HITS hits on connections
    opened and warmed (WARMUP_HITS) before the first reading."""
    conns = [HitConnection(corral, path, size) for _ in range(CONNECTIONS)]
    spread_hits(conns, WARMUP_HITS)
    before = settled_counts(counts_path)
    spread_hits(conns, HOT_HITS)
    after = settled_counts(counts_path)
    for c in conns:
        c.close()
    return delta(before, after)


def new_connection_hits(corral, counts_path, path, size):
    """(allocs, frees) of the worker over NEW_CONNECTION_HITS hits, each on
    a connection of its own, closed after it."""
    before = settled_counts(counts_path)
    for _ in range(NEW_CONNECTION_HITS):
        c = HitConnection(corral, path, size)
        c.hits(1)
        c.close()
    after = settled_counts(counts_path)
    return delta(before, after)


@scenario
def alloc_counter_sees_every_allocator_entry_point_and_glibcs_own_calls(env):
    build()
    p = subprocess.run([ALLOC_PROBE], capture_output=True, text=True, errors="replace",
                       timeout=60, stdin=subprocess.DEVNULL,
                       env=dict(os.environ, LD_PRELOAD=ALLOC_COUNT_SO))
    failed = [line for line in p.stdout.splitlines() if not line.startswith("PASS ")]
    expect(p.returncode == 0 and not failed and p.stdout.count("PASS ") >= 11,
           f"alloc_probe under alloc_count.so: {failed or p.stdout!r} {p.stderr[-2000:]}")


@scenario
def hot_hits_from_the_near_cache_allocate_nothing_on_kept_alive_connections(env):
    build()
    redis, origin = env.redis(), env.origin()
    sizes = {"1 KiB": ("/alloc/1k", KIB), "100 KiB": ("/alloc/100k", 100 * KIB),
             "100 KiB JSON stored as gzip": ("/alloc/json", 100 * KIB)}
    # Bodies stored as they came (not a type compressed on store): each
    # hit sends the entry's own bytes; and a JSON one, stored as gzip,
    # which these clients (no Accept-Encoding) get decoded: from the copy
    # kept with the entry, decoded once.
    for path, size in sizes.values():
        origin.script(path, size=size, headers={} if path.endswith("json") else
                      {"Content-Type": "application/octet-stream"})
    counts_file = os.path.join(env.workdir, "alloc")
    corral = env.corral(redis, origin, routes={"/": {"ttl": "1h"}}, binary=RELEASE_BIN,
                        wrapper=[], env={"LD_PRELOAD": ALLOC_COUNT_SO,
                                         "ALLOC_COUNT_FILE": counts_file})
    # workers = 1: the process started serves, and forks no worker.
    expect_eq(children(corral.proc.pid), [], "processes corral forked (workers = 1)")
    counts_path = f"{counts_file}.{corral.proc.pid}"
    for path, size in sizes.values():
        r = corral.get(path)	# the miss that stores it (a 100 KiB body streams:
        expect_eq((r.status, len(r.body)), (200, size), f"GET {path}")	# stored after)
        wait_for(lambda: "hit" in corral.get(path).cache_status, what=f"a hit on {path}")
    before = corral.counters()

    figures = {}
    for label, (path, size) in sizes.items():
        figures[label] = kept_alive_hits(corral, counts_path, path, size)
        allocs, frees = figures[label]
        env.report(f"{label} hits, kept alive: {allocs} allocations, {frees} frees over "
                   f"{HOT_HITS:,} hits: {allocs / HOT_HITS:.2f} allocations per hit")
    for label, (path, size) in sizes.items():
        allocs, frees = new_connection_hits(corral, counts_path, path, size)
        env.report(f"{label} hits, a new connection each: {allocs} allocations, {frees} "
                   f"frees over {NEW_CONNECTION_HITS:,}: {allocs / NEW_CONNECTION_HITS:.2f} "
                   f"allocations per hit")

    after = corral.counters()
    asked = len(sizes) * (WARMUP_HITS + HOT_HITS + NEW_CONNECTION_HITS)
    expect_eq({k: after[k] - before[k] for k in ("requests", "hits", "near_hits")},
              {"requests": asked, "hits": asked, "near_hits": asked},
              "every request a hit from the near cache")
    over = {label: allocs for label, (allocs, _) in figures.items()
            if allocs > HOT_ALLOCS_MAX}
    expect(not over, f"allocations over {HOT_HITS:,} kept-alive hits past "
                     f"{HOT_ALLOCS_MAX}: " +
                     ", ".join(f"{label} {allocs} ({allocs / HOT_HITS:.2f} per hit)"
                               for label, allocs in over.items()))
