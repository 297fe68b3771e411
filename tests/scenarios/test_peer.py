# SPDX-License-Identifier: MIT
"""Peer streaming between the workers of one instance: a response that one
worker fetches and streams reaches the waiters of its sibling workers as
it arrives, not once it is stored; a sibling with nothing to stream
leaves them to the entry as before; a cut body is cut in every worker.

Which worker holds a client connection is read from /proc (the kernel
spreads connections over the workers' SO_REUSEPORT sockets by a hash):
connections are opened until every worker holds some, so each scenario
asserts that both workers had waiters instead of assuming it."""

import http.client
import os
import socket
import threading
import time

from harness import (HOST, Background, cache_key, children, expect, expect_eq,
                     release_once_joined, scenario, wait_for)
from origin import sized_body

KIB = 1024
TWO = {"server": {"workers": "2"}}
# A waiter is woken by a fill (or a sibling's stream), never by the poll.
ROUTES = {"/": {"ttl": "1h", "lock_poll": "5s"}}
MOST_CONNECTIONS = 200	# opened at most to find every worker


def mono(wall):
    """A time.time() instant on the time.monotonic() clock."""
    return wall - time.time() + time.monotonic()


def tcp_inodes(port):
    """{client port: socket inode} of the server ends of connections to port."""
    found = {}
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            fields = line.split()
            local, remote, inode = fields[1], fields[2], int(fields[9])
            if int(local.split(":")[1], 16) == port and inode != 0:
                found[int(remote.split(":")[1], 16)] = inode
    return found


def socket_inodes(pid):
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(int(link[8:-1]))
    return inodes


def worker_of(corral, socks, workers):
    """{sock: the worker pid that accepted it}, once each one has been."""
    def mapped():
        inodes = tcp_inodes(corral.port)
        held = {pid: socket_inodes(pid) for pid in workers}
        owner = {}
        for s in socks:
            inode = inodes.get(s.getsockname()[1])
            pid = next((p for p in workers if inode in held[p]), None)
            if pid is None:
                return None
            owner[s] = pid
        return owner
    return wait_for(mapped, what="every connection accepted by a worker")


def spread_connections(corral, least):
    """Opens connections until each of the two workers holds at least
    `least`; returns ([socket], {socket: worker pid})."""
    workers = wait_for(lambda: len(children(corral.proc.pid)) == 2 and
                       children(corral.proc.pid), what="two workers")
    socks = []
    while True:
        for _ in range(least * 2):
            s = socket.create_connection((corral.host, corral.port), 30)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            socks.append(s)
        owner = worker_of(corral, socks, workers)
        per = {pid: sum(1 for s in socks if owner[s] == pid) for pid in workers}
        if min(per.values()) >= least:
            return socks, owner
        expect(len(socks) < MOST_CONNECTIONS,
               f"{len(socks)} connections, and a worker still has fewer than {least}: {per}")


def timed_get(sock, corral, path, results, i, barrier, started=None):
    """GET path on an open socket; results[i] = (status, body, monotonic time
    of the first body byte, of the last, Cache-Status). started, an Event,
    is set once the first body byte is in."""
    conn = http.client.HTTPConnection(corral.host, corral.port, timeout=30)
    conn.sock = sock
    barrier.wait()
    conn.request("GET", path, headers={"Host": HOST})
    resp = conn.getresponse()
    parts, first = [], None
    while True:
        part = resp.read1(65536)
        if not part:
            break
        if first is None:
            first = time.monotonic()
            if started is not None:
                started.set()
        parts.append(part)
    results[i] = (resp.status, b"".join(parts), first, time.monotonic(),
                  resp.getheader("Cache-Status"))
    conn.close()


def raw_get(sock, path, results, i, barrier):
    """GET path on an open socket, reading until the server closes it (or
    10 s pass): results[i] = (status, bytes of body, Content-Length, end)."""
    sock.settimeout(10)
    barrier.wait()
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {HOST}\r\n\r\n".encode())
    data, end = b"", "timeout"
    while True:
        try:
            chunk = sock.recv(65536)
        except ConnectionResetError:
            end = "reset"
            break
        except socket.timeout:
            break
        if not chunk:
            end = "eof"
            break
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode(errors="replace").split("\r\n")
    status = int(lines[0].split()[1]) if lines and lines[0].startswith("HTTP/") else 0
    length = next((int(v) for k, _, v in (l.partition(":") for l in lines[1:])
                   if k.strip().lower() == "content-length"), None)
    results[i] = (status, len(body), length, end)
    sock.close()


def peer_socket(corral, pid):
    """The abstract name of worker pid's peer socket, from /proc/net/unix."""
    prefix, suffix = f"@corral-{corral.proc.pid}-", f"-{pid}"
    with open("/proc/net/unix") as f:
        for line in f:
            path = line.split()[-1]
            if path.startswith(prefix) and path.endswith(suffix):
                return path[1:]
    return None


def run_all(target, socks, *args):
    results = [None] * len(socks)
    barrier = threading.Barrier(len(socks))
    threads = [threading.Thread(target=target, args=(s, *args, results, i, barrier),
                                daemon=True) for i, s in enumerate(socks)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


@scenario
def waiters_of_both_workers_get_the_body_as_it_arrives(env):
    size = 3 * 1024 * KIB
    redis, origin = env.redis(), env.origin()
    # Held until every client has joined, so that every one gets the head
    # with the lead.
    origin.script("/p/big", size=size, pieces=20, interval_ms=75, hold=True)	# ~1.5 s
    corral = env.corral(redis, origin, routes=ROUTES, extra=TWO)
    socks, owner = spread_connections(corral, least=8)

    clients = Background(run_all, timed_get, socks, corral, "/p/big")
    release_once_joined(origin, "/p/big", [corral], len(socks))
    results = clients.result()
    expect_eq(origin.count("/p/big"), 1, "origin requests for both workers")
    ps = origin.path_stats("/p/big")
    first_byte = ps["first_byte_mono"][0]
    origin_took = mono(ps["done_at"][0]) - first_byte	# its trickle
    late = {}
    for i, r in enumerate(results):
        expect(r is not None, f"client {i} answered")
        status, body, first, last, cs = r
        expect_eq((status, len(body), body == sized_body(size)), (200, size, True),
                  f"client {i} (worker {owner[socks[i]]}): status, length, bytes ({cs})")
        late[i] = first - first_byte
    by_worker = {}
    for i, s in enumerate(socks):
        by_worker.setdefault(owner[s], []).append(late[i])
    for pid, lates in by_worker.items():
        expect(max(lates) < 0.5,
               f"worker {pid}'s {len(lates)} clients got their first byte at most "
               f"{max(lates) * 1000:.0f} ms after the origin's first byte (its body took "
               f"{origin_took:.2f} s): streamed as it arrived, not once stored")
    c = corral.counters()
    expect_eq(c["peer_streams"], 1, "one sibling stream: the worker that did not fetch")
    expect_eq((c["upstream_fetches"], c["misses"], c["collapsed"]),
              (1, 1, len(socks) - 1), "one fetch, every other request collapsed")
    wait_for(lambda: redis.entry_keys(), what="the entry stored by the fetching worker")
    r = corral.get("/p/big", {"Host": HOST})
    expect_eq((r.status, r.cache_status.hit, r.body == sized_body(size)), (200, True, True),
              "stored once complete, by the worker that fetched")


@scenario
def a_sibling_that_asks_once_the_body_has_begun_gets_it_from_the_first_byte(env):
    size = 2 * 1024 * KIB
    redis, origin = env.redis(), env.origin()
    origin.script("/p/late", size=size, pieces=20, interval_ms=75)	# ~1.5 s
    corral = env.corral(redis, origin, routes=ROUTES, extra=TWO)
    socks, owner = spread_connections(corral, least=1)
    first_worker = owner[socks[0]]
    other = next(s for s in socks if owner[s] != first_worker)

    results, started = [None, None], threading.Event()
    go = threading.Thread(target=timed_get, daemon=True,
                          args=(socks[0], corral, "/p/late", results, 0,
                                threading.Barrier(1), started))
    go.start()
    expect(started.wait(30), "the first client's body began")
    timed_get(other, corral, "/p/late", results, 1, threading.Barrier(1))
    go.join(60)
    ps = origin.path_stats("/p/late")
    expect_eq(origin.count("/p/late"), 1, "origin requests")
    for i, r in enumerate(results):
        status, body, first, last, cs = r
        expect_eq((status, len(body), body == sized_body(size)), (200, size, True),
                  f"client {i}: status, length, bytes ({cs})")
    done_mono = mono(ps["done_at"][0])
    expect(results[1][2] < done_mono - 0.5,
           f"the late client in the other worker got its first byte "
           f"{done_mono - results[1][2]:.2f} s before the origin finished")
    expect_eq(corral.counters()["peer_streams"], 1, "peer streams")


@scenario
def a_sibling_with_no_stream_leaves_the_waiters_to_the_entry(env):
    # A short response is answered whole, so the worker that fetches it has
    # no stream for its sibling: the sibling's waiters get the entry once
    # stored, as without peer streaming, and nothing more goes upstream.
    redis, origin = env.redis(), env.origin()
    origin.script("/p/small", size=20 * KIB, hold=True)
    corral = env.corral(redis, origin, routes=ROUTES, extra=TWO)
    socks, owner = spread_connections(corral, least=4)

    clients = Background(run_all, timed_get, socks, corral, "/p/small")
    release_once_joined(origin, "/p/small", [corral], len(socks))
    results = clients.result()
    for i, r in enumerate(results):
        expect(r is not None, f"client {i} answered")
        status, body, first, last, cs = r
        expect_eq((status, body == sized_body(20 * KIB)), (200, True),
                  f"client {i} (worker {owner[socks[i]]}): status, bytes ({cs})")
    expect_eq(origin.count("/p/small"), 1, "origin requests")
    c = corral.counters()
    expect_eq((c["peer_streams"], c["peer_fallbacks"]), (0, 1),
              "the sibling asked once and was told there was no stream")
    expect_eq((c["misses"], c["collapsed"]), (1, len(socks) - 1), "misses, collapsed")


@scenario
def a_body_cut_during_a_peer_stream_is_cut_in_every_worker(env):
    size = 1024 * KIB
    redis, origin = env.redis(), env.origin()
    # Everyone waits before the head (held), then the body stops short.
    origin.script("/p/cut", size=size, cut_after=400 * KIB, pieces=8, interval_ms=100,
                  hold=True)
    corral = env.corral(redis, origin, routes=ROUTES, extra=TWO)
    socks, owner = spread_connections(corral, least=3)

    clients = Background(run_all, raw_get, socks, "/p/cut")
    release_once_joined(origin, "/p/cut", [corral], len(socks))
    results = clients.result()
    for i, r in enumerate(results):
        expect(r is not None, f"client {i} answered")
        status, got, length, end = r
        expect(status == 200 and length == size and got < size and end in ("eof", "reset"),
               f"client {i} (worker {owner[socks[i]]}): the head went out, then the "
               f"connection closed short of Content-Length: status {status}, "
               f"{got} of {length} bytes, {end}")
    expect_eq(origin.count("/p/cut"), 1, "origin requests")
    expect_eq(corral.counters()["peer_streams"], 1, "peer streams")
    expect_eq(redis.entry_keys(), [], "entries")


@scenario
def a_peer_socket_answers_no_process_but_a_sibling_worker(env):
    # Anyone on the host can connect to an abstract socket: this test is
    # such a process. While a response streams in a worker, it asks that
    # worker's peer socket for it, as a sibling would, and gets nothing.
    size = 2 * 1024 * KIB
    redis, origin = env.redis(), env.origin()
    origin.script("/p/private", size=size, pieces=20, interval_ms=75)
    corral = env.corral(redis, origin, routes=ROUTES, extra=TWO)
    socks, owner = spread_connections(corral, least=1)
    results, started = [None], threading.Event()
    go = threading.Thread(target=timed_get, daemon=True,
                          args=(socks[0], corral, "/p/private", results, 0,
                                threading.Barrier(1), started))
    go.start()
    expect(started.wait(30), "the client's body began")
    name = peer_socket(corral, owner[socks[0]])
    expect(name is not None, "the streaming worker listens on its peer socket")

    peer = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    peer.settimeout(10)
    peer.connect("\0" + name)
    peer.sendall(f"GET /p/private HTTP/1.1\r\nHost: corral-peer\r\n"
                 f"Corral-Peer-Key: {cache_key('/p/private')}\r\n\r\n".encode())
    got = b""
    while True:
        chunk = peer.recv(65536)
        if not chunk:
            break
        got += chunk
    peer.close()
    expect_eq(got, b"", "what the peer socket answered a process that is not a worker")
    wait_for(lambda: "not a sibling worker" in corral.log(), what="the refusal in the log")
    go.join(60)
    expect_eq((results[0][0], results[0][1] == sized_body(size)), (200, True),
              "the client's own answer")
    expect_eq(origin.count("/p/private"), 1, "origin requests")
