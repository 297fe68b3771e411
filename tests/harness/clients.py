# SPDX-License-Identifier: MIT
"""Concurrent and paced clients: stampede (n clients released together),
Background (a call in a thread) and paced (calls spread evenly over time).
"""

import http.client
import threading
import time

from .http import Headers, Response
from .keys import HOST
from .wait import CLIENT_TIMEOUT_S


class StampedeResult:
    def __init__(self, target, status=None, headers=None, body=b"", t_done=None,
                 elapsed=None, error=None):
        self.target = target		# index into the targets list
        self.status = status
        self.headers = headers
        self.body = body
        self.t_done = t_done		# time.time() once the whole response was read
        self.elapsed = elapsed		# seconds from the barrier to t_done
        self.error = error

    @property
    def cache_status(self):
        return Response(self.status, self.headers, self.body, self.elapsed).cache_status

    def __repr__(self):
        return (f"StampedeResult(target={self.target}, status={self.status}, "
                f"cache_status={self.headers.get('Cache-Status') if self.headers else None!r}, "
                f"error={self.error!r})")


def stampede(targets, n, path, headers=None, method="GET", body=None,
             timeout=CLIENT_TIMEOUT_S):
    """n clients, spread round-robin over targets (objects with .host/.port),
    each on its own connection opened up front; all send together once a
    barrier releases them. Returns the n results in client order; raises if
    any client could not connect, send or read. path, headers and body may
    each be a function of the client's index i instead (each its own)."""
    if not isinstance(targets, (list, tuple)):
        targets = [targets]

    def client_headers(i):
        h = dict((headers(i) if callable(headers) else headers) or {})
        if not any(k.lower() == "host" for k in h):
            h["Host"] = HOST
        return h
    barrier = threading.Barrier(n)
    results = [None] * n

    def client(i):
        index = i % len(targets)
        target = targets[index]
        conn = http.client.HTTPConnection(target.host, target.port, timeout=timeout)
        result = StampedeResult(index)
        try:
            conn.connect()
        except Exception as e:	# noqa: BLE001 - reported after the barrier
            result.error = f"connect: {e!r}"
        try:
            barrier.wait(timeout)
        except threading.BrokenBarrierError:
            result.error = result.error or "barrier broken"
        if result.error is None:
            t0 = time.monotonic()
            try:
                conn.request(method, path(i) if callable(path) else path,
                             body=body(i) if callable(body) else body,
                             headers=client_headers(i))
                resp = conn.getresponse()
                result.body = resp.read()
                result.t_done = time.time()
                result.elapsed = time.monotonic() - t0
                result.status = resp.status
                result.headers = Headers(resp.getheaders())
            except Exception as e:	# noqa: BLE001
                result.error = f"request: {e!r}"
        conn.close()
        results[i] = result

    threads = [threading.Thread(target=client, args=(i,), daemon=True)
               for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout * 3)
    missing = [i for i, r in enumerate(results) if r is None]
    failed = [r for r in results if r is not None and r.error]
    if missing or failed:
        raise AssertionError(f"stampede: {len(missing)} clients unfinished, "
                             f"{len(failed)} failed, e.g. {(failed or [None])[0]!r}")
    return results


class Background:
    """Runs fn(*args) in a thread; .result() joins and returns or re-raises."""

    def __init__(self, fn, *args, **kw):
        self.value, self.exc = None, None
        self.thread = threading.Thread(target=self.run, args=(fn, args, kw), daemon=True)
        self.thread.start()

    def run(self, fn, args, kw):
        try:
            self.value = fn(*args, **kw)
        except BaseException as e:	# noqa: BLE001 - re-raised by result()
            self.exc = e

    def done(self):
        return not self.thread.is_alive()

    def result(self, timeout=CLIENT_TIMEOUT_S):
        self.thread.join(timeout)
        if self.thread.is_alive():
            raise AssertionError(f"background call still running after {timeout} s")
        if self.exc is not None:
            raise self.exc
        return self.value


def paced(n, seconds, fn):
    """Calls fn(i) for i in range(n), one at a time, started evenly over
    about seconds by the clock (a call that overruns its slot delays the
    next ones, never skips them). Returns the n results."""
    results = []
    t0 = time.monotonic()
    for i in range(n):
        lag = t0 + seconds * i / max(1, n - 1) - time.monotonic()
        if lag > 0:
            time.sleep(lag)	# pacing a request rate, not waiting for a condition
        results.append(fn(i))
    return results


def closed_by_server(socks, got, closed):
    """Reads what each open socket in socks (non-blocking) has: the bytes
    into got, and each the server closed into closed. Returns len(closed)."""
    for s in socks:
        if s in closed:
            continue
        try:
            data = s.recv(4096)
        except BlockingIOError:
            continue
        except ConnectionResetError:
            closed.add(s)
            continue
        if data:
            got[s] = got.get(s, b"") + data
        else:
            closed.add(s)
    return len(closed)
