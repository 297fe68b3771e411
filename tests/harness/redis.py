"""Redis for a scenario: RedisServer (a private redis-server), RedisProxy
(a proxy that can hold back replies and cut subscriptions), and the
helpers that look at cache entries in Redis (expect_entry, wait_until_stale,
stale_fleet...).
"""

import os
import shutil
import socket
import subprocess
import struct
import threading
import time

from .keys import entry_key, is_token
from .resp import RespClient, _decode
from .wait import (CLIENT_TIMEOUT_S, START_TIMEOUT_S, STOP_TIMEOUT_S, expect, expect_eq,
                   free_port, read_text, tail, wait_for)


def find_redis_server():
    found = shutil.which("redis-server")
    if found:
        return found
    for path in ("/usr/bin/redis-server", "/usr/local/bin/redis-server"):
        if os.access(path, os.X_OK):
            return path
    raise AssertionError("redis-server not found in PATH or /usr/bin")


class RedisServer:
    """A private redis-server on a free port, no persistence. A subclass
    whose server wants a password sets auth = (user, password) for the
    test's own client."""

    auth = None

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
            self.client = RespClient(self.host, self.port, auth=self.auth)
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
        self.sub_data = b""	# all that subscribed connections were sent
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
                if conn["id"] in self.holding:
                    self.held.append((client, data))
                    continue
                try:
                    client.sendall(data)
                except OSError:
                    break
                if conn["subscriber"]:	# counted once on its way to the client
                    self.sub_data += data
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

    def published(self, channel=None):
        """Messages passed to subscribed connections so far; with channel,
        the times its name was (its messages, after its subscription)."""
        with self.lock:
            return self.sub_data.count(b"message\r\n" if channel is None
                                       else channel.encode())

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


# -- entries ------------------------------------------------------------------

def expect_entry(redis, path):
    """The entry of path must exist and start with a 32-hex-digit token."""
    key = entry_key(path)
    value = redis.cmd_bytes("GET", key)
    expect(value is not None, f"no entry {key} in Redis; keys: {redis.keys()}")
    expect(is_token(value[:32].decode("ascii", "replace")),
           f"entry {key} does not start with a 32-hex token: {value[:40]!r}")
    return value


ENTRY_FRESH_AT = 45	# the byte where an entry's fresh_until (i64 LE, ms) starts


def entry_fresh_until(redis, path):
    """The wall-clock ms until which path's entry is fresh, or None when
    there is no entry."""
    value = redis.cmd_bytes("GET", entry_key(path))
    if value is None or len(value) < ENTRY_FRESH_AT + 8:
        return None
    return struct.unpack_from("<q", value, ENTRY_FRESH_AT)[0]


def entry_is_fresh(redis, path):
    """Is path's entry in redis fresh now (None: there is none)?"""
    until = entry_fresh_until(redis, path)
    return None if until is None else until > time.time() * 1000


def expect_no_entries(redis, what):
    """No entry of any key exists (fresh Redis per scenario, so any is wrong)."""
    expect_eq(redis.entry_keys(), [], f"entries in Redis after {what}")


def expect_pttl(redis, key, expected_ms, slack_ms=2000, since=None, over_ms=50):
    """key's PTTL is expected_ms (up to over_ms more), less at most slack_ms
    spent since it was set; with since (a time.monotonic() taken before the
    request that set it), less at most the time since then."""
    pttl = redis.pttl(key)
    if since is not None:
        slack_ms = (time.monotonic() - since) * 1000 + 5
    expect(expected_ms - slack_ms <= pttl <= expected_ms + over_ms,
           f"PTTL of {key}: expected {expected_ms} ms less at most {slack_ms:.0f} ms "
           f"since it was set, got {pttl}")


def expect_entry_pttl(redis, path, expected_ms, slack_ms=2000, since=None):
    """The entry's PTTL is expected_ms (ttl + stale_while_revalidate), less
    the time since it was stored (expect_pttl)."""
    expect_pttl(redis, entry_key(path), expected_ms, slack_ms, since)


def wait_until_stale(redis, path, swr_ms, by_ms=1100, timeout=30):
    """Waits, without sending a request, until path's entry has been stale for
    by_ms. Its PTTL was ttl + swr when stored, so it is stale by by_ms once
    PTTL < swr - by_ms. by_ms > 1 s makes the whole-second Cache-Status ttl
    negative however it is rounded."""
    key = entry_key(path)
    expect_entry(redis, path)
    wait_for(lambda: 0 < redis.pttl(key) < swr_ms - by_ms, timeout,
             what=f"{key} to be stale for {by_ms} ms (PTTL < {swr_ms - by_ms})")


def stale_fleet(env, n, path, extra=None):
    """n instances sharing one Redis and origin (extra: more of their
    configuration), with path stored as "v1" (ttl 1 s,
    stale_while_revalidate 60 s) and now stale: (redis, origin, fleet).
    Sent no request while it went stale."""
    redis, origin = env.redis(), env.origin()
    origin.script(path, body="v{n}")
    fleet = env.fleet(n, redis, origin,
                      routes={"/": {"ttl": "1s", "stale_while_revalidate": "60s"}},
                      extra=extra)
    prime = fleet[0].get(path)
    expect_eq((prime.status, prime.text, prime.cache_status.stored), (200, "v1", True),
              "priming request")
    wait_until_stale(redis, path, swr_ms=60_000)
    return redis, origin, fleet
