"""Building blocks for Corral's scenario tests (Python 3 standard library only).

A scenario is a function decorated with @scenario that takes an Env. The Env
starts real processes -- redis-server on a free port, the scriptable origin
(tests/origin.py) and any number of corral instances -- and always stops them
again, checking corral's exit status and its log for sanitizer reports:

    @scenario
    def cold_miss_fleet_of_three_fetches_once(env):
        redis, origin = env.redis(), env.origin()
        fleet = env.fleet(3, redis, origin, routes={"/": {"lock_poll": "5s"}})
        results = stampede(fleet, 200, "/users/1")
        expect_eq(origin.count("/users/1"), 1, "origin fetches")

Waiting is always for a condition (wait_for), never for a fixed time.
"""

import http.client
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import urllib.parse
import tempfile
import threading
import time

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
ORIGIN_PY = os.path.join(TESTS_DIR, "origin.py")

# Every client sends this Host header, so every instance of a fleet (each on
# its own port) builds the same cache key for a path.
HOST = "app.test"
PREFIX = "corral:"

# How much slower than under ASan corral runs here (CORRAL_TEST_SLOWNESS,
# e.g. 10 under valgrind). Every time limit of the harness, and the timing
# bounds a scenario passes through slow(), are multiplied by it.
SLOWNESS = max(1.0, float(os.environ.get("CORRAL_TEST_SLOWNESS") or 1))
# A command that runs corral (e.g. "valgrind --error-exitcode=99 ..."):
# corral is started as WRAPPER... BINARY ARGS.
WRAPPER = shlex.split(os.environ.get("CORRAL_WRAPPER") or "")
VALGRIND_ERROR_EXIT = 99	# make test-valgrind's --error-exitcode

START_TIMEOUT_S = 20 * SLOWNESS	# corral under ASan, redis, origin: ready within this
STOP_TIMEOUT_S = 10 * SLOWNESS	# SIGTERM, then SIGKILL after this long
CLIENT_TIMEOUT_S = 30 * SLOWNESS	# one HTTP exchange
POLL_S = 0.01			# wait_for's polling interval
LOG_TAIL_LINES = 40

SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "runtime error:", "LeakSanitizer")


def slow(seconds):
    """A timing bound, stretched by SLOWNESS (1 unless CORRAL_TEST_SLOWNESS)."""
    return seconds * SLOWNESS


# -- waiting and asserting ----------------------------------------------------

# What cond() of wait_for may raise while the thing it watches is not yet
# there: a socket that refuses, resets or times out, an HTTP exchange cut
# short, Redis still loading. Anything else is a bug in the test or a wrong
# answer, and fails at once.
NOT_YET = (OSError, http.client.HTTPException)


def wait_for(cond, timeout=10, what="condition", interval=POLL_S):
    """Polls cond() until it returns something truthy and returns that.

    Connection errors (NOT_YET, or a Redis error reply) from cond() count
    as "not yet", and the last one is named in the AssertionError raised
    after timeout seconds (times SLOWNESS). Any other exception fails at
    once: an AssertionError (e.g. "the process exited"), or a KeyError or
    TypeError that says the condition itself is wrong."""
    deadline = time.monotonic() + timeout * SLOWNESS
    last_exc = None
    while True:
        try:
            value = cond()
            if value:
                return value
            last_exc = None
        except (NOT_YET + (RespError,)) as e:	# "not yet", reported below
            last_exc = e
        if time.monotonic() >= deadline:
            why = f" (last error: {last_exc!r})" if last_exc else ""
            raise AssertionError(f"timed out waiting for {what}{why}")
        time.sleep(interval)


def expect(cond, message):
    if not cond:
        raise AssertionError(message)


def expect_eq(actual, expected, what):
    if actual != expected:
        raise AssertionError(f"{what}: expected {expected!r}, got {actual!r}")


# Every port free_port() handed out in this process: the kernel may offer a
# port again as soon as the probing socket is closed, so two calls (listen
# and admin_listen of one config, two instances of a fleet) could otherwise
# get the same one.
_ports_handed_out = set()
_ports_lock = threading.Lock()


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on right now and that
    no earlier call in this process returned."""
    with _ports_lock:
        while True:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            if port not in _ports_handed_out:
                _ports_handed_out.add(port)
                return port


def tail(text, lines=LOG_TAIL_LINES):
    return "\n".join(text.splitlines()[-lines:])


def read_text(path):
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def sanitizer_report(text):
    """The first sanitizer marker found in text, or None."""
    for marker in SANITIZER_MARKERS:
        if marker in text:
            return marker
    return None


# -- keys -------------------------------------------------------------------

def cache_key(path, host=HOST):
    """The cache KEY of a request, as Corral builds it (host + path [+ ?query])."""
    host = host.lower()
    if host.endswith(":80"):
        host = host[:-3]
    return host + path


def entry_key(path, host=HOST, prefix=PREFIX):
    return f"{prefix}{{{cache_key(path, host)}}}:entry"


def lock_key(path, host=HOST, prefix=PREFIX):
    return f"{prefix}{{{cache_key(path, host)}}}:lock"


TOKEN_RE = re.compile(r"[0-9a-fA-F]{32}")


def is_token(value):
    """A refresh-lock token: 32 hex digits."""
    return isinstance(value, str) and TOKEN_RE.fullmatch(value) is not None


# -- redis ------------------------------------------------------------------

class RespError(Exception):
    """An error reply from Redis (-ERR ...)."""


class RespClient:
    """A minimal, thread-safe RESP2 client: one connection, one command at a time."""

    def __init__(self, host, port, timeout=5.0):
        self.host, self.port, self.timeout = host, port, timeout
        self.sock = None
        self.buf = b""
        self.lock = threading.Lock()

    def close(self):
        if self.sock:
            self.sock.close()
        self.sock, self.buf = None, b""

    @staticmethod
    def encode(args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            if isinstance(a, str):
                a = a.encode()
            elif not isinstance(a, (bytes, bytearray)):
                a = str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        return b"".join(out)

    def command(self, *args):
        """Sends one command; returns bytes/int/list/None; raises RespError."""
        with self.lock:
            if self.sock is None:
                self.sock = socket.create_connection((self.host, self.port), self.timeout)
                self.sock.settimeout(self.timeout)
            try:
                self.sock.sendall(self.encode(args))
                return self.read_reply()
            except RespError:
                raise
            except Exception:
                self.close()
                raise

    def read_line(self):
        while b"\r\n" not in self.buf:
            self.fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def fill(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("redis closed the connection")
        self.buf += chunk

    def read_reply(self):
        line = self.read_line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest
        if kind == b"-":
            raise RespError(rest.decode(errors="replace"))
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self.fill()
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.read_reply() for _ in range(n)]
        raise ConnectionError(f"bad RESP reply line {line!r}")


def _decode(reply):
    if isinstance(reply, bytes):
        return reply.decode("utf-8", errors="surrogateescape")
    if isinstance(reply, list):
        return [_decode(r) for r in reply]
    return reply


def find_redis_server():
    found = shutil.which("redis-server")
    if found:
        return found
    for path in ("/usr/bin/redis-server", "/usr/local/bin/redis-server"):
        if os.access(path, os.X_OK):
            return path
    raise AssertionError("redis-server not found in PATH or /usr/bin")


class RedisServer:
    """A private redis-server on a free port, no persistence."""

    def __init__(self, workdir, name="redis", port=None):
        self.name = name
        self.workdir = workdir
        self.log_path = os.path.join(workdir, f"{name}.log")
        self.start(port)

    def argv(self, binary):
        """The command line for self.port (subclasses add to it)."""
        return [binary, "--port", str(self.port), "--bind", self.host, "--save", "",
                "--appendonly", "no", "--daemonize", "no", "--dir", self.workdir]

    def start(self, port=None):
        """Starts it on port, or on a free port (tried three times)."""
        self.host = "127.0.0.1"
        self.proc = None
        binary = find_redis_server()
        for attempt in range(3):	# free_port() can race with other processes
            self.port = port or free_port()
            self.address = f"{self.host}:{self.port}"
            self.client = RespClient(self.host, self.port)
            with open(self.log_path, "ab") as log:
                self.proc = subprocess.Popen(self.argv(binary), stdout=log,
                                             stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL)
            try:
                wait_for(self.ping_or_died, timeout=START_TIMEOUT_S,
                         what=f"{self.name} to answer PING on {self.address}")
                return
            except AssertionError:
                self.kill()
                if port or attempt == 2:
                    raise AssertionError(f"{self.name} did not start; log:\n{tail(self.log())}")

    def ping_or_died(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"{self.name} exited with {self.proc.returncode}")
        return self.client.command("PING") == b"PONG"

    def cmd(self, *args):
        """One command; bulk strings come back as str (see cmd_bytes)."""
        return _decode(self.client.command(*args))

    def cmd_bytes(self, *args):
        return self.client.command(*args)

    def keys(self, pattern="*"):
        return sorted(self.cmd("KEYS", pattern))

    def entry_keys(self):
        return self.keys("*:entry")

    def get(self, key):
        return self.cmd("GET", key)

    def pttl(self, key):
        return self.cmd("PTTL", key)

    def exists(self, key):
        return self.cmd("EXISTS", key) == 1

    def subscribers(self):
        """Clients with at least one channel or pattern subscription."""
        count = 0
        for line in self.cmd("CLIENT", "LIST").splitlines():
            fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
            if int(fields.get("sub", 0)) + int(fields.get("psub", 0)) > 0:
                count += 1
        return count

    def log(self):
        return read_text(self.log_path)

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        self.client.close()
        if self.running():
            self.proc.terminate()
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.kill()

    def kill(self):
        self.client.close()
        if self.running():
            self.proc.kill()
        if self.proc is not None:
            self.proc.wait()


class RedisProxy:
    """A TCP proxy on a free loopback port in front of a RedisServer, for
    one corral instance, that can hold back Redis's replies.

    Once a client connection sends a command containing the word armed with
    hold_replies_after() (e.g. b"EVALSHA": corral's lock attempt), every
    reply Redis sends on that connection is kept back until release(). A
    connection that has sent SUBSCRIBE is never held, so its notifications
    overtake the held replies; published() counts the messages it passed.
    cut_subscriptions() closes the subscribed connections and keeps back
    the SUBSCRIBE of any new one until release(): whatever is published
    meanwhile never reaches that instance."""

    BUF = 65536

    def __init__(self, redis, name="redisproxy"):
        self.name = name
        self.target = (redis.host, redis.port)
        self.lock = threading.Lock()
        self.arm = None		# the word that starts holding, once
        self.held = []		# (client socket, bytes kept back), in order
        self.holding = set()	# ids of the connections being held
        self.messages = 0
        self.socks = []
        self.subscribed = []	# (client, server) of subscribed connections
        self.sub_paused = False
        self.up_held = []	# (server socket, bytes): SUBSCRIBEs kept back
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.host, self.port = self.listener.getsockname()
        self.address = f"{self.host}:{self.port}"
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
                server = socket.create_connection(self.target, CLIENT_TIMEOUT_S)
                server.settimeout(None)	# an idle connection is not a closed one
            except OSError:
                return	# stopped
            with self.lock:
                self.socks += [client, server]
            conn = {"id": id(client), "subscriber": False}
            threading.Thread(target=self.pump_up, args=(client, server, conn),
                             daemon=True).start()
            threading.Thread(target=self.pump_down, args=(server, client, conn),
                             daemon=True).start()

    def pump_up(self, client, server, conn):
        """Client to Redis: notes subscriptions and the armed word."""
        while (data := self.recv(client)):
            upper = data.upper()
            with self.lock:
                if b"SUBSCRIBE" in upper:
                    conn["subscriber"] = True
                    self.subscribed.append((client, server))
                    if self.sub_paused:
                        self.up_held.append((server, data))
                        continue
                if self.arm and not conn["subscriber"] and self.arm in upper:
                    self.arm = None
                    self.holding.add(conn["id"])
            try:
                server.sendall(data)
            except OSError:
                break
        self.shut(server)

    def pump_down(self, server, client, conn):
        """Redis to client: kept back while the connection is held."""
        while (data := self.recv(server)):
            with self.lock:
                if conn["subscriber"]:
                    self.messages += data.count(b"message\r\n")
                if conn["id"] in self.holding:
                    self.held.append((client, data))
                    continue
                try:
                    client.sendall(data)
                except OSError:
                    break
        self.shut(client)

    @classmethod
    def recv(cls, sock):
        """The next bytes from sock; b"" once it is closed or broken."""
        try:
            return sock.recv(cls.BUF)
        except OSError:
            return b""

    @staticmethod
    def shut(sock):
        try:
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def hold_replies_after(self, word):
        with self.lock:
            self.arm = word.upper()

    def held_bytes(self):
        with self.lock:
            return sum(len(d) for _, d in self.held)

    def published(self):
        """Messages passed to subscribed connections so far."""
        with self.lock:
            return self.messages

    def cut_subscriptions(self):
        with self.lock:
            self.sub_paused = True
            for client, server in self.subscribed:
                for sock in (client, server):
                    try:
                        sock.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
            self.subscribed = []

    def held_subscriptions(self):
        """SUBSCRIBE commands kept back since cut_subscriptions()."""
        with self.lock:
            return len(self.up_held)

    def release(self):
        """Sends what was kept back, in order, and holds nothing more."""
        with self.lock:
            for sock, data in self.held + self.up_held:
                try:
                    sock.sendall(data)
                except OSError:
                    pass
            self.held, self.holding, self.arm = [], set(), None
            self.up_held, self.sub_paused = [], False

    def stop(self):
        self.listener.close()
        with self.lock:
            for sock in self.socks:
                sock.close()
            self.socks = []


def expect_entry(redis, path):
    """The entry of path must exist and start with a 32-hex-digit token."""
    key = entry_key(path)
    value = redis.cmd_bytes("GET", key)
    expect(value is not None, f"no entry {key} in Redis; keys: {redis.keys()}")
    expect(is_token(value[:32].decode("ascii", "replace")),
           f"entry {key} does not start with a 32-hex token: {value[:40]!r}")
    return value


def expect_no_entries(redis, what):
    """No entry of any key exists (fresh Redis per scenario, so any is wrong)."""
    expect_eq(redis.entry_keys(), [], f"entries in Redis after {what}")


def expect_entry_pttl(redis, path, expected_ms, slack_ms=2000):
    """The entry's PTTL is expected_ms (ttl + stale_while_revalidate), less
    at most slack_ms spent since it was stored."""
    pttl = redis.pttl(entry_key(path))
    expect(expected_ms - slack_ms <= pttl <= expected_ms + 50,
           f"PTTL of {entry_key(path)}: expected about {expected_ms} ms, got {pttl}")


def wait_until_stale(redis, path, swr_ms, by_ms=1100, timeout=30):
    """Waits, without sending a request, until path's entry has been stale for
    by_ms. Its PTTL was ttl + swr when stored, so it is stale by by_ms once
    PTTL < swr - by_ms. by_ms > 1 s makes the whole-second Cache-Status ttl
    negative however it is rounded."""
    key = entry_key(path)
    expect_entry(redis, path)
    wait_for(lambda: 0 < redis.pttl(key) < swr_ms - by_ms, timeout,
             what=f"{key} to be stale for {by_ms} ms (PTTL < {swr_ms - by_ms})")


def stale_fleet(env, n, path):
    """n instances sharing one Redis and origin, with path stored as "v1"
    (ttl 1 s, stale_while_revalidate 60 s) and now stale: (redis, origin,
    fleet). Sent no request while it went stale."""
    redis, origin = env.redis(), env.origin()
    origin.script(path, body="v{n}")
    fleet = env.fleet(n, redis, origin,
                      routes={"/": {"ttl": "1s", "stale_while_revalidate": "60s"}})
    prime = fleet[0].get(path)
    expect_eq((prime.status, prime.text, prime.cache_status.stored), (200, "v1", True),
              "priming request")
    wait_until_stale(redis, path, swr_ms=60_000)
    return redis, origin, fleet


# -- HTTP -------------------------------------------------------------------

class Headers:
    """Response headers: ordered, case-insensitive look-ups."""

    def __init__(self, pairs):
        self.pairs = list(pairs)

    def get(self, name, default=None):
        values = self.get_all(name)
        return ", ".join(values) if values else default

    def get_all(self, name):
        name = name.lower()
        return [v for k, v in self.pairs if k.lower() == name]

    def __getitem__(self, name):
        value = self.get(name)
        if value is None:
            raise KeyError(name)
        return value

    def __contains__(self, name):
        return bool(self.get_all(name))

    def __repr__(self):
        return f"Headers({self.pairs!r})"


class CacheStatus:
    """A parsed RFC 9211 Cache-Status member for one cache, e.g.
    'corral; fwd=miss; fwd-status=200; stored'."""

    def __init__(self, raw):
        self.raw = raw or ""
        parts = [p.strip() for p in self.raw.split(";")]
        self.cache = parts[0] if parts else ""
        self.params = {}
        for p in parts[1:]:
            if not p:
                continue
            key, _, value = p.partition("=")
            self.params[key.strip().lower()] = value.strip().strip('"') if _ else True

    def __contains__(self, param):
        return param in self.params

    @property
    def hit(self):
        return self.params.get("hit") is True

    @property
    def ttl(self):
        v = self.params.get("ttl")
        return int(v) if isinstance(v, str) else None

    @property
    def stale(self):
        return self.hit and self.ttl is not None and self.ttl < 0

    @property
    def fwd(self):
        v = self.params.get("fwd")
        return v if isinstance(v, str) else None

    @property
    def fwd_status(self):
        v = self.params.get("fwd-status")
        return int(v) if isinstance(v, str) else None

    @property
    def stored(self):
        return self.params.get("stored") is True

    @property
    def collapsed(self):
        return self.params.get("collapsed") is True

    @property
    def detail(self):
        v = self.params.get("detail")
        return v if isinstance(v, str) else None

    def __repr__(self):
        return f"CacheStatus({self.raw!r})"


class Response:
    def __init__(self, status, headers, body, elapsed, t_done=None):
        self.status = status
        self.headers = headers
        self.body = body
        self.elapsed = elapsed
        self.t_done = t_done

    @property
    def text(self):
        return self.body.decode("utf-8", errors="replace")

    def json(self):
        return json.loads(self.body)

    @property
    def cache_status(self):
        """The Cache-Status member written by corral (empty if absent)."""
        for member in (self.headers.get("Cache-Status") or "").split(","):
            if member.strip().split(";")[0].strip() == "corral":
                return CacheStatus(member.strip())
        return CacheStatus("")

    def __repr__(self):
        return (f"Response({self.status}, cache_status={self.headers.get('Cache-Status')!r}, "
                f"body={self.body[:80]!r})")


def http_request(host, port, path, headers=None, method="GET", body=None,
                 timeout=CLIENT_TIMEOUT_S):
    """One request on a fresh connection; sends Host: HOST unless given."""
    headers = dict(headers or {})
    if not any(k.lower() == "host" for k in headers):
        headers["Host"] = HOST
    conn = http.client.HTTPConnection(host, port, timeout=timeout)
    t0 = time.monotonic()
    try:
        conn.request(method, path, body=body, headers=headers)
        resp = conn.getresponse()
        data = resp.read()
        return Response(resp.status, Headers(resp.getheaders()), data,
                        time.monotonic() - t0, time.time())
    finally:
        conn.close()


def children(pid):
    """The pids of pid's child processes."""
    kids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            kids.append(int(entry))
    return sorted(kids)


def split_hostport(text):
    host, _, port = text.strip().rpartition(":")
    return host.strip("[]"), int(port)


# -- the origin ---------------------------------------------------------------

class Origin:
    """tests/origin.py in a subprocess on a free port."""

    def __init__(self, workdir, name="origin", delay=None):
        self.name = name
        self.log_path = os.path.join(workdir, f"{name}.log")
        cmd = [sys.executable, ORIGIN_PY, "--port", "0", "--host", "127.0.0.1"]
        if delay is not None:
            cmd += ["--delay", str(delay)]
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)
        try:
            m = wait_for(self.listening, timeout=START_TIMEOUT_S, what=f"{name} to listen")
        except BaseException:
            self.stop()
            raise
        self.host, self.port = m.group(1), int(m.group(2))
        self.url = f"http://{self.host}:{self.port}"

    def listening(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"{self.name} exited with {self.proc.returncode}:\n"
                                 f"{tail(self.log())}")
        return re.search(r"origin listening on (\S+):(\d+)", self.log())

    def control(self, method, what, payload=None):
        body = json.dumps(payload).encode() if payload is not None else None
        r = http_request(self.host, self.port, "/__origin/" + what, method=method,
                         body=body, headers={"Host": f"{self.host}:{self.port}",
                                             "Content-Type": "application/json"},
                         timeout=10)
        if r.status != 200:
            raise AssertionError(f"origin control {what}: {r.status} {r.text}")
        return r.json()

    def script(self, path="*", **kw):
        """e.g. script("/users/1", delay_ms=500, body="v{n}", hold=True)."""
        self.control("POST", "script", dict(kw, path=path))

    def release(self, path="*"):
        from urllib.parse import quote
        return self.control("POST", "release?path=" + quote(path, safe=""))["released"]

    def stats(self):
        return self.control("GET", "stats")

    def path_stats(self, path):
        """One path's stats, with zero values if it was never requested."""
        empty = {"count": 0, "methods": {}, "done_at": [], "held": 0,
                 "bodies": [], "headers": {}}
        return self.stats()["paths"].get(path, empty)

    def count(self, path=None):
        stats = self.stats()
        if path is None:
            return stats["total"]
        return stats["paths"].get(path, {}).get("count", 0)

    def held(self, path):
        return self.path_stats(path)["held"]

    def reset(self):
        self.control("POST", "reset")

    def get(self, path, headers=None, method="GET", body=None):
        return http_request(self.host, self.port, path, headers, method, body)

    def log(self):
        return read_text(self.log_path)

    def running(self):
        return self.proc.poll() is None

    def stop(self):
        if self.running():
            self.proc.terminate()
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    kill = stop


# -- corral ---------------------------------------------------------------------

COUNTERS = ("requests", "hits", "stale_hits", "misses", "collapsed", "bypass",
            "upstream_fetches", "upstream_errors", "stores", "locks_acquired",
            "lock_busy", "lock_renewals", "lock_lost", "waiters", "lock_wait_ms",
            "lock_wait_timeouts")

# key_host: the scenarios key on HOST, as most were written to (test_keys.py
# covers the default, keyed on the upstream).
DEFAULT_ROUTE = {"key_host": "on", "ttl": "10s", "stale_while_revalidate": "60s",
                 "lock_ttl": "5s", "lock_wait": "3s", "lock_poll": "500ms"}


def corral_config(redis, origin, listen_port, admin_port, routes=None, extra=None):
    """INI text for one corral instance.

    redis: a RedisServer or "host:port"; origin: an Origin or a URL.
    routes: {prefix: {key: value}}, in order; defaults to {"/": DEFAULT_ROUTE}.
      A route's keys are laid over DEFAULT_ROUTE.
    extra: {"server"|"redis"|"upstream": {key: value}} laid over the defaults
      of those sections, or a str appended verbatim."""
    redis_addr = redis if isinstance(redis, str) else redis.address
    origin_url = origin if isinstance(origin, str) else origin.url
    sections = {
        "server": {"listen": f"127.0.0.1:{listen_port}",
                   "admin_listen": f"127.0.0.1:{admin_port}",
                   "log_level": "info",
                   # One process, so that a scenario's per-process counters
                   # are exact; test_workers.py covers several.
                   "workers": "1"},
        # Stretched with SLOWNESS: a corral slowed down by valgrind must not
        # take its own slowness for Redis's (a scenario about a slow Redis
        # sets [redis] timeout itself).
        "redis": {"address": redis_addr, "prefix": PREFIX,
                  "timeout": f"{round(250 * SLOWNESS)}ms"},
        "upstream": {"url": origin_url, "connect_timeout": "1s", "timeout": "10s"},
    }
    if isinstance(extra, dict):
        for name, values in extra.items():
            sections.setdefault(name, {}).update(values)
    lines = []
    for name, values in sections.items():
        lines.append(f"[{name}]")
        lines += [f"{k} = {v}" for k, v in values.items()]
        lines.append("")
    for prefix, values in (routes or {"/": {}}).items():
        lines.append(f"[route {prefix}]")
        lines += [f"{k} = {v}" for k, v in dict(DEFAULT_ROUTE, **values).items()]
        lines.append("")
    text = "\n".join(lines)
    if isinstance(extra, str):
        text += extra.rstrip("\n") + "\n"
    return text


def server_addresses(config_text):
    """(listen, admin_listen) as (host, port) pairs from [server] of an INI text."""
    section, found = None, {}
    for raw in config_text.splitlines():
        line = raw.split(";")[0].split("#")[0].strip()
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
        elif section == "server" and "=" in line:
            key, value = (s.strip() for s in line.split("=", 1))
            if key in ("listen", "admin_listen"):
                found[key] = split_hostport(value)
    if "listen" not in found or "admin_listen" not in found:
        raise AssertionError("config has no [server] listen and admin_listen")
    return found["listen"], found["admin_listen"]


def nofile_limit(n):
    """A preexec_fn that sets RLIMIT_NOFILE to n in the child (None: no change)."""
    if n is None:
        return None

    def limit():
        import resource
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))
    return limit


class Corral:
    """One corral process started with an inline config; nofile, if given,
    is its RLIMIT_NOFILE."""

    def __init__(self, binary, config_text, name, workdir=None, wait_redis=True,
                 nofile=None, env=None):
        if not binary or not os.access(binary, os.X_OK):
            raise AssertionError(f"corral binary {binary!r} not found or not executable "
                                 "(build it first, e.g. make build/asan/corral)")
        self.name = name
        self.workdir = workdir or tempfile.mkdtemp(prefix="corral-")
        self.config_path = os.path.join(self.workdir, f"{name}.conf")
        self.log_path = os.path.join(self.workdir, f"{name}.log")
        with open(self.config_path, "w") as f:
            f.write(config_text)
        (self.host, self.port), (self.admin_host, self.admin_port) = \
            server_addresses(config_text)
        self.url = f"http://{self.host}:{self.port}"
        self.admin_url = f"http://{self.admin_host}:{self.admin_port}"
        self.stopped = False
        self.started_at = time.time()	# wall clock, just before it starts
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen([*WRAPPER, binary, "-c", self.config_path],
                                         stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL,
                                         preexec_fn=nofile_limit(nofile),
                                         env=dict(os.environ, **(env or {})))
        try:
            wait_for(self.ready, timeout=START_TIMEOUT_S,
                     what=f"{name} to answer GET /stats on {self.admin_url}")
            if wait_redis:
                wait_for(lambda: self.stats()["redis"]["up"] is True,
                         timeout=START_TIMEOUT_S, what=f"{name} to report redis up in /stats")
        except BaseException:
            self.kill()	# not yet tracked by an Env: never leave it running
            raise

    def ready(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"{self.name} exited with {self.proc.returncode} "
                                 f"during start-up; log:\n{tail(self.log())}")
        self.stats()
        return True

    def get(self, path, headers=None, method="GET", body=None, timeout=CLIENT_TIMEOUT_S):
        return http_request(self.host, self.port, path, headers, method, body, timeout)

    def admin(self, method, target, timeout=10):
        """One request to the admin listener; the Response."""
        return http_request(self.admin_host, self.admin_port, target, method=method,
                            headers={"Host": f"{self.admin_host}:{self.admin_port}"},
                            timeout=timeout)

    def purge(self, **params):
        """POST /purge?url=... or ?prefix=... or ?tag=... [&soft=...]."""
        return self.admin("POST", "/purge?" + urllib.parse.urlencode(params), timeout=30)

    def stats(self):
        r = self.admin("GET", "/stats")
        if r.status != 200:
            raise AssertionError(f"{self.name} GET /stats: {r.status}")
        return r.json()

    def counters(self, route=None):
        """The total counters, or one route's."""
        s = self.stats()
        return s["total"] if route is None else s["routes"][route]

    def log(self):
        return read_text(self.log_path)

    def running(self):
        return self.proc.poll() is None

    def stop(self):
        """SIGTERM, then SIGKILL after STOP_TIMEOUT_S. Raises when corral did
        not exit cleanly (non-zero, killed, or a sanitizer report in its log)."""
        if self.stopped:
            return
        self.stopped = True
        problem = None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
                problem = f"did not exit within {STOP_TIMEOUT_S} s of SIGTERM"
        else:
            problem = f"had already exited with {self.proc.returncode}"
        rc = self.proc.returncode
        if problem is None and rc != 0:
            problem = f"exited with {rc}" if rc > 0 else f"died of signal {-rc}"
            if WRAPPER and rc == VALGRIND_ERROR_EXIT:
                problem += " (valgrind found memory errors or leaks: see the log)"
        marker = sanitizer_report(self.log())
        if marker:
            problem = (problem + "; " if problem else "") + f"log has {marker!r}"
        if problem:
            raise AssertionError(f"{self.name} {problem}; log:\n{tail(self.log())}")

    def kill(self):
        self.stopped = True
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def fleet_counters(corrals, route=None):
    """Counters summed over instances."""
    total = {}
    for c in corrals:
        for k, v in c.counters(route).items():
            if isinstance(v, (int, float)):
                total[k] = total.get(k, 0) + v
    return total


# -- clients --------------------------------------------------------------------

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
    any client could not connect, send or read."""
    if not isinstance(targets, (list, tuple)):
        targets = [targets]
    headers = dict(headers or {})
    if not any(k.lower() == "host" for k in headers):
        headers["Host"] = HOST
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
                conn.request(method, path, body=body, headers=headers)
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


# -- the environment of one scenario --------------------------------------------

class Env:
    """Starts processes for one scenario and always stops them.

        with Env(workdir, binary) as env:
            redis = env.redis()
            ...

    On exit every process is stopped in reverse order; corral instances are
    checked (exit status, sanitizer reports) and any problem fails the
    scenario, after whatever failure the scenario itself raised."""

    def __init__(self, workdir=None, binary=None):
        self.workdir = workdir or os.environ.get("CORRAL_TEST_DIR") or \
            tempfile.mkdtemp(prefix="corral-scenario-")
        os.makedirs(self.workdir, exist_ok=True)
        self.binary = binary or os.environ.get("CORRAL_BIN")
        if self.binary:
            self.binary = os.path.abspath(self.binary)
        self.procs = []
        self.corrals = []
        self.names = {}

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        problems = self.stop_all()
        if problems and exc is None:
            raise AssertionError("\n".join(problems))
        if problems:	# the scenario's own failure comes first
            note = "while stopping:\n" + "\n".join(problems)
            if hasattr(exc, "add_note"):
                exc.add_note(note)
            else:
                print(note, file=sys.stderr)
        return False

    def stop_all(self):
        problems = []
        for proc in reversed(self.procs):
            try:
                proc.stop()
            except Exception as e:	# noqa: BLE001 - collected, reported together
                problems.append(str(e))
        self.procs = []
        return problems

    def name(self, base):
        self.names[base] = self.names.get(base, 0) + 1
        return f"{base}{self.names[base]}"

    def track(self, proc):
        self.procs.append(proc)
        return proc

    def redis(self, port=None):
        """A new redis-server; on port if given (e.g. to restart one that
        was killed, or to start one where a corral expects it)."""
        return self.track(RedisServer(self.workdir, self.name("redis"), port))

    def redis_proxy(self, redis):
        """A RedisProxy in front of redis; give its .address to a corral."""
        return self.track(RedisProxy(redis, self.name("redisproxy")))

    def origin(self, delay=None):
        return self.track(Origin(self.workdir, self.name("origin"), delay))

    def corral(self, redis=None, origin=None, routes=None, extra=None, config=None,
               wait_redis=None, nofile=None, env=None):
        """Starts corral with config (INI text) or with corral_config(redis,
        origin, routes, extra) on free ports. wait_redis (default: True when
        redis is a RedisServer) waits for /stats to report redis up. env:
        variables laid over this process's environment for it."""
        if config is None:
            config = corral_config(redis, origin, free_port(), free_port(), routes, extra)
        if wait_redis is None:
            wait_redis = isinstance(redis, RedisServer)
        name = self.name("corral")
        c = Corral(self.binary, config, name, self.workdir, wait_redis=wait_redis,
                   nofile=nofile, env=env)
        self.corrals.append(c)
        return self.track(c)

    def fleet(self, n, redis, origin, routes=None, extra=None):
        """n instances sharing redis and origin. Waits until each holds a
        Redis subscription (and fails if one never does), so a scenario does
        not start while an instance could still miss a PUBLISH."""
        before = redis.subscribers()
        corrals = [self.corral(redis, origin, routes, extra) for _ in range(n)]
        self.wait_subscribed(redis, before + n)
        return corrals

    @staticmethod
    def wait_subscribed(redis, n):
        """Waits until redis has n clients with a subscription."""
        wait_for(lambda: redis.subscribers() >= n, timeout=START_TIMEOUT_S,
                 what=f"{n} subscribed clients in {redis.name} "
                      f"(an instance that never subscribes would miss every PUBLISH)")

    def config_file(self, text, name="test.conf"):
        path = os.path.join(self.workdir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def run_corral(self, *args, timeout=30):
        """Runs the corral binary to completion (e.g. -t -c FILE); returns a
        CompletedProcess with text stdout and stderr. Fails on sanitizer reports."""
        if not self.binary or not os.access(self.binary, os.X_OK):
            raise AssertionError(f"corral binary {self.binary!r} not found or not executable")
        p = subprocess.run([*WRAPPER, self.binary, *args], capture_output=True, text=True,
                           errors="replace", timeout=timeout * SLOWNESS,
                           stdin=subprocess.DEVNULL)
        marker = sanitizer_report(p.stdout + p.stderr)
        if marker:
            raise AssertionError(f"corral {' '.join(args)} reported {marker!r}:\n"
                                 f"{tail(p.stderr)}")
        return p


# -- scenario registry ----------------------------------------------------------

SCENARIOS = []
DEFAULT_SCENARIO_TIMEOUT_S = 120


def scenario(fn=None, *, timeout=DEFAULT_SCENARIO_TIMEOUT_S):
    """Marks fn(env) as a scenario; its name is the function's name."""
    def mark(f):
        f.scenario_timeout = timeout * SLOWNESS
        SCENARIOS.append(f)
        return f
    return mark(fn) if fn is not None else mark


# -- raw connections, paced clients, process faults -------------------------------

class RawReply:
    """What one raw exchange read: the response (status, lower-cased header
    names, body) and how the connection ended: "eof" (the server closed it
    cleanly: recv returned b""), "reset" (ECONNRESET), "timeout" or "open"."""

    def __init__(self, data, end):
        self.data = data
        self.end = end
        self.status = None
        self.headers = {}
        self.body = b""
        self.complete = False	# a whole response, as its Content-Length says
        head, sep, body = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        m = re.match(r"HTTP/1\.[01] (\d{3})", lines[0]) if sep else None
        if m:
            self.status = int(m.group(1))
            for line in lines[1:]:
                name, _, value = line.partition(":")
                self.headers[name.strip().lower()] = value.strip()
            self.body = body
            length = self.headers.get("content-length")
            self.complete = length is not None and len(body) == int(length)

    @property
    def cache_status(self):
        return CacheStatus(self.headers.get("cache-status"))

    def __repr__(self):
        return f"RawReply(status={self.status}, end={self.end!r}, data={self.data[:120]!r})"


def raw_exchange(host, port, data, timeout=CLIENT_TIMEOUT_S):
    """Sends data (bytes, as is) on a new connection and reads until the
    server closes it or timeout seconds pass. Returns a RawReply."""
    chunks, end = [], "open"
    with socket.create_connection((host, port), timeout) as s:
        s.settimeout(timeout)
        try:
            s.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass	# what was answered is read below
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                end = "reset"
                break
            except socket.timeout:
                end = "timeout"
                break
            if not chunk:
                end = "eof"
                break
            chunks.append(chunk)
    return RawReply(b"".join(chunks), end)


def send_and_leave(host, port, data):
    """Sends data on a new connection, then closes it without reading."""
    with socket.create_connection((host, port), CLIENT_TIMEOUT_S) as s:
        s.sendall(data)


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


def origin_max_active(origin, path):
    """The most requests of path the origin had in progress at once."""
    return origin.path_stats(path).get("max_active", 0)


def backoff_key(path, host=HOST, prefix=PREFIX):
    """The key whose presence makes path's refreshes back off (its value:
    the failure that started it, e.g. "503" or "timeout")."""
    return f"{prefix}{{{cache_key(path, host)}}}:backoff"


def hfm_key(path, host=HOST, prefix=PREFIX):
    """The key whose presence marks path as uncacheable fleet-wide
    (hit_for_miss): its requests go upstream without the lock."""
    return f"{prefix}{{{cache_key(path, host)}}}:hfm"


def fails_key(path, host=HOST, prefix=PREFIX):
    """The count of path's failed refreshes since its last store."""
    return f"{prefix}{{{cache_key(path, host)}}}:fails"


def get_request(path, host=HOST, extra=b""):
    """The bytes of a plain GET, for raw sockets."""
    return (f"GET {path} HTTP/1.1\r\nHost: {host}\r\n".encode() + extra + b"\r\n")

