#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A differential test of the client's door: for every byte stream of
tests/fixtures/door/streams.py, what a real corral made of it, compared with
a golden record (tests/fixtures/door/golden.json).

    python3 tests/door_diff.py --bin build/asan/corral            # compare
    python3 tests/door_diff.py --bin build/asan/corral --record tests/fixtures/door/golden.json
    python3 tests/door_diff.py --bin ... -k chunked -v            # some streams, named
    python3 tests/door_diff.py --bin ... -k chunked --show        # their records

Today a client's bytes go through the door (proxy/proxy_frame.c), then
libevent's parser; a server that parses once is to replace the pair. This
shows whether the replacement sees the same requests and refuses the same
ones. Each stream is sent on a connection of its own to each of two corrals
side by side, each with a recording origin (in this process) behind it:

  * the passing corral has no route, so every request it serves is passed
    to the origin uncached, with its end-to-end headers and its body, under
    the upstream's own Host;
  * the keyed corral has one route on "/" with key_host = on (ttl 0: GET
    and HEAD go through the cache machinery and store nothing; other methods
    are passed) and hosts = *:*, so that the Host sent upstream is the host
    corral read from the request; its origin says which in each answer.

A stream's record is what was seen of it:

    responses  what the passing corral's client read: each response's status
               line, and for a status of 400 or more the first REASON_CHARS
               characters of its body (a refusal names its rule there)
    closed     whether the passing corral closed the connection (an EOF or
               a reset: which of the two depends on whether corral had read
               the bytes still in flight when it closed, a matter of timing)
    access     the passing corral's access log (JSON) for the stream, a line
               a finished request: method, uri, proto, status, cache, then
               route, cache_status, referer and user_agent where there are
    origin     every request the passing corral's origin got: request line,
               header lines in order, body
    hosts      for each response of the keyed corral, "host=" and the Host
               it sent upstream, or the status of one that never got there

How a stream ends: corral closes the connection, or the stream is quiet: the
origin has no request under way, corral has no request, flight, refresh or
fetch in progress (/stats), corral's end of the connection has nothing left
to read or to send (sock_diag, as ss(8) asks), the client's bytes were all
acknowledged (TIOCOUTQ), and nothing new was read, in QUIET_ROUNDS looks in
a row, each a /stats round trip that takes corral's event loop through
several turns (so that nothing corral had already scheduled is pending).
Quiet is a state nothing ends but client_timeout. No fixed sleep decides
anything; a stream that neither closes nor goes quiet within
STREAM_TIMEOUT_S fails, naming what was still under way.

Each stream is sent whole (one write) and, where the corpus says slow=True,
also a byte at a time (TCP_NODELAY, a write a byte: the variant named
"NAME ~bytewise"). On each corral the variants run one after another, each
from a loopback address of its own (127.77.x.y), so that origin requests
and access-log lines belong to their stream by the client address corral
reports, exactly, whenever they come.

Normalised, and why:
  * the client's address becomes "<client>" (X-Forwarded-For, the access
    log): it is this tool's bookkeeping, not the stream's;
  * the origins' and corrals' ports (free ports, new each run) become
    "<origin-port>" and "<corral-port>" (the passing corral's upstream Host
    names its origin's);
  * the access log's time, client, bytes, upstream_ms, lock_wait_ms,
    total_ms and key are left out: clocks, and a length the responses and
    origin requests already show;
  * response headers are not kept (Date, Age; the door is about requests):
    the origins answer every request alike (200, "ok", no-store);
  * in a bytewise variant, 1xx responses are left out: libevent sends
    "100 Continue" only when no byte of the body came with the head, which
    a byte-at-a-time client cannot make the same from run to run;
  * bodies are text when printable ASCII, else {"hex": ...}.

A record keeps its stream's length and a hash of its bytes, so that a stream
changed since it was recorded fails as such; and the golden file keeps the
configuration it was recorded with (CONFIG), checked likewise. --record
records every stream twice and writes FILE only if both runs agree.
Exit status: 0 when every stream is as recorded, 1 otherwise.
"""

import argparse
import difflib
import errno
import fcntl
import hashlib
import importlib.util
import json
import os
import select
import shutil
import socket
import struct
import sys
import tempfile
import termios
import threading
import time
from concurrent.futures import ThreadPoolExecutor

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, TESTS_DIR)
import harness  # noqa: E402

STREAMS_PY = os.path.join(TESTS_DIR, "fixtures", "door", "streams.py")
GOLDEN = os.path.join(TESTS_DIR, "fixtures", "door", "golden.json")

MAX_HEADER_BYTES = 1024		# [server] max_header_bytes of the corral under test
MAX_BODY_BYTES = 1024		# [server] max_body_bytes
STREAM_TIMEOUT_S = 30		# a stream closes or goes quiet within this (times SLOWNESS)
QUIET_ROUNDS = 3		# successive quiet /stats round trips that make a stream quiet
QUIET_LOOK_S = 0.02		# how long a stream's socket is watched between looks at corral
BYTEWISE = " ~bytewise"		# the suffix of a stream's byte-at-a-time variant
CLIENT_NET = (127, 77)		# client addresses: 127.77.x.y, one per connection
REASON_CHARS = 100		# characters of an error response's body kept
RENDER_WIDTH = 100		# a record's values on one line up to this width
ORIGIN_BODY = b"ok"
ECHO_FIELD = "X-Asked-Host"	# the keyed origin's answers name the Host it got
IN_PROGRESS = ("requests", "flights", "refreshes", "upstream_fetches")


def load_streams(path=STREAMS_PY):
    """The corpus: a list of (name, bytes, slow) from streams.py's STREAMS."""
    spec = importlib.util.spec_from_file_location("door_streams", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    names = [s.name for s in module.STREAMS]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"{path}: streams named twice: {dup}")
    return module.STREAMS


def variants(streams, keywords=()):
    """(variant name, bytes, bytewise) for every stream, whole then bytewise."""
    out = []
    for s in streams:
        for bytewise in (False, True) if s.slow else (False,):
            name = s.name + (BYTEWISE if bytewise else "")
            if not keywords or any(k in name for k in keywords):
                out.append((name, s.data, bytewise))
    return out


def text_or_hex(data):
    if all(32 <= b < 127 or b in (9, 10, 13) for b in data):
        return data.decode("ascii")
    return {"hex": data.hex()}


# -- the recording origin ---------------------------------------------------------

class RecordingOrigin:
    """An HTTP/1.1 origin in a thread of this process that answers every
    request 200 "ok" (Cache-Control: no-store) and records it: request
    line, header lines as received, body. With echo_host, the answer says
    the Host it got in ECHO_FIELD ("host=" and the value). Connections are
    kept alive; "Expect: 100-continue" is answered (corral asks curl not to
    send it)."""

    def __init__(self, echo_host=False):
        self.echo_host = echo_host
        self.lock = threading.Lock()
        self.records = []
        self.active = 0
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", harness.free_port()))
        self.sock.listen(128)
        self.port = self.sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return	# stopped
            threading.Thread(target=self.connection, args=(conn,), daemon=True).start()

    def connection(self, conn):
        with conn:
            conn.settimeout(harness.slow(60))
            buf = b""
            try:
                while True:
                    while b"\r\n\r\n" not in buf:
                        got = conn.recv(65536)
                        if not got:
                            return
                        buf += got
                    with self.lock:
                        self.active += 1
                    try:
                        buf, close = self.one(conn, buf)
                    finally:
                        with self.lock:
                            self.active -= 1
                    if close:
                        return
            except OSError:
                return

    @staticmethod
    def read_body(conn, buf, fields):
        """(body, what follows it in buf): corral's requests upstream carry
        a Content-Length when they have a body (curl sends none chunked)."""
        length = int(dict(fields).get("content-length", "0"))
        while len(buf) < length:
            got = conn.recv(65536)
            if not got:
                raise OSError("origin: connection closed inside a body")
            buf += got
        return buf[:length], buf[length:]

    def one(self, conn, buf):
        """Reads, records and answers the request at the start of buf."""
        head, buf = buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        method = lines[0].split(" ", 1)[0]
        headers = lines[1:]
        fields = [(k.strip().lower(), v.strip().lower())
                  for k, _, v in (line.partition(":") for line in headers)]
        if ("expect", "100-continue") in fields:
            conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        body, buf = self.read_body(conn, buf, fields)
        with self.lock:
            self.records.append({"request": lines[0], "headers": headers, "body": body})
        close = any(k == "connection" and "close" in v for k, v in fields)
        echo = "".join(f"{ECHO_FIELD}: host={v.strip()}\r\n" for k, v in
                       (line.partition(":")[::2] for line in headers)
                       if self.echo_host and k.strip().lower() == "host")
        answer = (b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\nCache-Control: no-store\r\n"
                  b"Content-Type: text/plain\r\n%s%s\r\n" %
                  (len(ORIGIN_BODY), echo.encode("latin-1"),
                   b"Connection: close\r\n" if close else b""))
        conn.sendall(answer + (ORIGIN_BODY if method != "HEAD" else b""))
        return buf, close

    def busy(self):
        with self.lock:
            return self.active

    def taken(self):
        with self.lock:
            return list(self.records)

    def stop(self):
        self.sock.close()


# -- corral ----------------------------------------------------------------------

# The keyed corral's one route: GET and HEAD go through the cache machinery
# (ttl 0 stores nothing, and nothing is remembered as hit-for-miss), every
# other method is passed; either way with the host corral read as Host. Its
# hosts allow any name and any port (an empty Host, then, is answered 421).
KEYED_ROUTE = {"key_host": "on", "ttl": "0", "stale_while_revalidate": "0",
               "hit_for_miss": "0", "error_backoff": "0"}
KEYED_HOSTS = "*:*"
# What a golden file was recorded with, kept in it and checked.
CONFIG = {"max_header_bytes": MAX_HEADER_BYTES, "max_body_bytes": MAX_BODY_BYTES,
          "keyed_route": KEYED_ROUTE, "keyed_hosts": KEYED_HOSTS}


def corral_text(redis, origin, access_log, route=None):
    """An instance with the corpus's limits and a JSON access log. Without
    route, none: every request is passed to the origin uncached, with its
    end-to-end headers and its body, and the upstream's own Host. With
    route, that one on "/", and hosts = KEYED_HOSTS."""
    text = f"""[server]
listen = 127.0.0.1:{harness.free_port()}
admin_listen = 127.0.0.1:{harness.free_port()}
log_level = info
workers = 1
max_header_bytes = {MAX_HEADER_BYTES}
max_body_bytes = {MAX_BODY_BYTES}
access_log = {access_log}
log_format = json
{f"hosts = {KEYED_HOSTS}" if route else ""}
[redis]
address = {redis.address}
prefix = {harness.PREFIX}

[upstream]
url = {origin.url}
connect_timeout = 1s
timeout = 10s
"""
    if route:
        text += "\n[route /]\n" + "".join(f"{k} = {v}\n" for k, v in route.items())
    return text


def client_address(i):
    """The loopback address connection i comes from."""
    return f"{CLIENT_NET[0]}.{CLIENT_NET[1]}.{i // 250}.{i % 250 + 1}"


# sock_diag (linux/inet_diag.h): one socket looked up by its addresses.
NETLINK_SOCK_DIAG = 4
SOCK_DIAG_BY_FAMILY = 20
NLM_F_REQUEST = 1
NLMSG_ERROR = 2
INET_DIAG_NOCOOKIE = 0xffffffff
TCP_LISTEN = 10


def diag_queues(local, remote):
    """(write queue, read queue) of the IPv4 TCP socket bound to local and
    connected to remote, both (ip, port), from the kernel (sock_diag, as
    ss(8) asks); None when there is none. A lookup, not a dump: a busy
    machine's thousands of sockets do not slow it."""
    req = struct.pack("=BBBBI", socket.AF_INET, socket.IPPROTO_TCP, 0, 0, 0xffffffff)
    req += struct.pack("!HH", local[1], remote[1])
    req += socket.inet_aton(local[0]) + bytes(12) + socket.inet_aton(remote[0]) + bytes(12)
    req += struct.pack("=III", 0, INET_DIAG_NOCOOKIE, INET_DIAG_NOCOOKIE)
    msg = struct.pack("=IHHII", 16 + len(req), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST, 1, 0) + req
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG) as nl:
        nl.sendto(msg, (0, 0))
        answer = nl.recv(65536)
    _, kind = struct.unpack_from("=IH", answer)
    if kind == NLMSG_ERROR:
        error = struct.unpack_from("=i", answer, 16)[0]
        if error == -errno.ENOENT:
            return None
        raise OSError(-error, f"sock_diag: {os.strerror(-error)}")
    # inet_diag_msg: family, state, timer, retrans; the 48-byte sockid
    # (sport, dport, ...); expires, rqueue, wqueue. Without the connection
    # the lookup finds the listening socket of its local address.
    state = answer[16 + 1]
    dport = struct.unpack_from("!H", answer, 16 + 4 + 2)[0]
    _, rqueue, wqueue = struct.unpack_from("=III", answer, 16 + 4 + 48)
    if state == TCP_LISTEN or dport != remote[1]:
        return None
    return wqueue, rqueue


def server_queues(corral_port, client):
    """(bytes corral has yet to send, bytes it has yet to read) on its end
    of the connection from client (ip, port); None when there is none."""
    return diag_queues(("127.0.0.1", corral_port), client)


def unsent(sock):
    """Bytes the client wrote that the other end has not acknowledged."""
    return struct.unpack("I", fcntl.ioctl(sock.fileno(), termios.TIOCOUTQ,
                                          struct.pack("I", 0)))[0]


def in_progress(corral):
    p = corral.stats()["in_progress"]
    return tuple(p[k] for k in IN_PROGRESS)


class Connection:
    """One stream's connection: sends it, reads what comes back."""

    def __init__(self, corral, origin, address):
        self.corral, self.origin = corral, origin
        self.sock = socket.socket()
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.sock.bind((address, 0))
        self.sock.settimeout(harness.slow(10))
        self.sock.connect((corral.host, corral.port))
        self.local = self.sock.getsockname()
        self.sock.setblocking(False)
        self.data = b""
        self.closed = False

    def read(self):
        """Reads what is there without waiting; notes a close."""
        while not self.closed:
            try:
                got = self.sock.recv(65536)
            except BlockingIOError:
                return
            except ConnectionResetError:
                self.closed = True
                return
            if not got:
                self.closed = True
                return
            self.data += got

    def send(self, data, bytewise):
        """Writes data, whole or a byte a write, reading meanwhile; stops
        once corral closed. A write that fails (corral closed with bytes
        of ours unread, and the reset came back) stops the writing only:
        what corral sent before is still to be read."""
        for piece in [data[i:i + 1] for i in range(len(data))] if bytewise else [data]:
            sent = 0
            while sent < len(piece):
                self.read()
                if self.closed:
                    return
                try:
                    sent += self.sock.send(piece[sent:])
                except BlockingIOError:
                    select.select([self.sock], [self.sock], [], harness.slow(1))
                except (BrokenPipeError, ConnectionResetError):
                    return

    def quiet_state(self):
        """What was read so far, when nothing is under way; else None."""
        if (self.origin.busy() or any(in_progress(self.corral)) or
                server_queues(self.corral.port, self.local) != (0, 0)):
            return None
        self.read()
        if self.closed or unsent(self.sock) != 0:
            return None
        return len(self.data)

    def finish(self, what):
        """Reads until corral closes the connection or it is quiet; whether
        corral closed it."""
        deadline = time.monotonic() + harness.slow(STREAM_TIMEOUT_S)
        quiet = []
        while True:
            # Bytes or the close, if they come at once, spare a look at
            # corral's state.
            select.select([self.sock], [], [], QUIET_LOOK_S)
            self.read()
            if self.closed:
                break
            state = self.quiet_state()
            # Quiet rounds count while nothing new arrives between them.
            if state is None:
                quiet = []
            elif quiet and quiet[-1] != state:
                quiet = [state]
            else:
                quiet.append(state)
            if len(quiet) >= QUIET_ROUNDS:
                break
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{what}: neither closed nor quiet after "
                    f"{harness.slow(STREAM_TIMEOUT_S):.0f} s "
                    f"(read {len(self.data)} bytes, ending {self.data[-200:]!r}; corral's "
                    f"socket (tx, rx) {server_queues(self.corral.port, self.local)}, in "
                    f"progress {in_progress(self.corral)}, origin busy {self.origin.busy()})")
        self.sock.close()
        # What the stream started ends before the next one begins.
        harness.wait_for(lambda: not any(in_progress(self.corral)) and not self.origin.busy(),
                         timeout=STREAM_TIMEOUT_S, what=f"{what}: corral and origin idle")
        return self.closed


class Side:
    """One corral, its origin and its access log."""

    def __init__(self, env, redis, name, route=None):
        self.name = name
        self.origin = env.track(RecordingOrigin(echo_host=route is not None))
        self.access_log = os.path.join(env.workdir, f"{name}-access.log")
        self.corral = env.corral(config=corral_text(redis, self.origin, self.access_log,
                                                    route), wait_redis=route is not None)
        self.ports = {self.origin.port: "origin-port", self.corral.port: "corral-port"}

    def send_all(self, todo, progress=None):
        """{variant: (its responses, parsed; closed)}, the variants sent one
        at a time, variant i from client_address(i)."""
        seen = {}
        for i, (name, data, bytewise) in enumerate(todo):
            conn = Connection(self.corral, self.origin, client_address(i))
            conn.send(data, bytewise)
            closed = conn.finish(f"{self.name} corral, stream {name!r}")
            seen[name] = (parse_responses(conn.data, bytewise), closed)
            if progress:
                progress(i + 1, len(todo), name)
        return seen

    def by_client(self, addresses):
        """({address: origin requests}, {address: access-log lines}) once
        corral has stopped (its access log is whole once it has exited);
        fails if any came from none of addresses."""
        self.corral.stop()
        requests, lines = {}, {}
        for rec in self.origin.taken():
            requests.setdefault(forwarded_for(rec), []).append(rec)
        for text in harness.read_text(self.access_log).splitlines():
            line = json.loads(text)
            lines.setdefault(line.get("client"), []).append(line)
        strays = sorted((set(requests) | set(lines)) - set(addresses))
        if strays:
            raise AssertionError(f"{self.name} corral: requests from no stream's "
                                 f"address: {strays}")
        return requests, lines


# -- what the client read --------------------------------------------------------

def parse_responses(data, bytewise):
    """[(status line, {lower-case name: value}, body)] of the responses in
    data (1xx left out when bytewise), then (None, what, bytes) for
    anything that is not a response."""
    out = []
    while data:
        if not data.startswith(b"HTTP/"):
            out.append((None, "unparsed", data))
            break
        head, sep, rest = data.partition(b"\r\n\r\n")
        if not sep:
            out.append((None, "partial", data))
            break
        lines = head.decode("latin-1").split("\r\n")
        fields = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            fields[name.strip().lower()] = value.strip()
        parts = lines[0].split(" ", 2)
        status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
        body, data = body_of(status, fields, rest)
        if not (bytewise and 100 <= status < 200):
            out.append((lines[0], fields, body))
    return out


def responses(parsed):
    """Status lines, with the start of the body of an error (a refusal
    names its rule there); then anything that was not a response."""
    out = []
    for line, fields, body in parsed:
        if line is None:
            out.append({fields: text_or_hex(body[:200])})
            continue
        status = line.split(" ", 2)[1]
        if status.isdigit() and int(status) >= 400:
            line += " | " + " ".join(body.decode("latin-1").split())[:REASON_CHARS]
        out.append(line)
    return out


def asked_hosts(parsed):
    """For each response of the keyed corral, the Host it sent upstream
    ("host=..."), or the status when the request never reached the origin."""
    out = []
    for line, fields, _ in parsed:
        if line is not None:
            out.append(fields.get(ECHO_FIELD.lower()) or line.split(" ", 2)[1])
    return out


def body_of(status, fields, rest):
    """(body, what follows it) of a response whose head is parsed."""
    if 100 <= status < 200 or status in (204, 304):
        return b"", rest
    if "content-length" in fields:
        n = int(fields["content-length"])
        # The answer to a HEAD names a length and has no body: the origin's
        # and corral's bodies never start with a status line.
        if rest.startswith(b"HTTP/1.") or not rest:
            return b"", rest
        return rest[:n], rest[n:]
    if fields.get("transfer-encoding", "").lower() == "chunked":
        body = b""
        while b"\r\n" in rest:
            line, rest = rest.split(b"\r\n", 1)
            size = int(line.split(b";")[0] or b"0", 16)
            body, rest = body + rest[:size], rest[size + 2:]
            if size == 0:
                return body, rest
        return body, rest
    return rest, b""	# delimited by the close


# -- records --------------------------------------------------------------------

def scrub(text, ports, client):
    text = text.replace(client, "<client>")
    for port, name in ports.items():
        text = text.replace(f":{port}", f":<{name}>")
    return text


def origin_view(rec, ports, client):
    return {"request": scrub(rec["request"], ports, client),
            "headers": [scrub(line, ports, client) for line in rec["headers"]],
            "body": text_or_hex(rec["body"])}


def access_view(line, ports, client):
    """One access-log line as "METHOD URI PROTO STATUS cache=CACHE", then
    route=, the Cache-Status, referer= and user_agent= where there are."""
    def word(key):
        return "-" if line.get(key) is None else str(line[key])
    text = " ".join(word(k) for k in ("method", "uri", "proto", "status"))
    text += f" cache={word('cache')}"
    for key in ("route", "cache_status", "referer", "user_agent"):
        if line.get(key) is not None:
            text += f" {key}={json.dumps(line[key])}"
    return scrub(text, ports, client)


def header(rec, name):
    """The values of name's lines in an origin request."""
    return [v.strip() for k, _, v in (line.partition(":") for line in rec["headers"])
            if k.strip().lower() == name]


def forwarded_for(rec):
    """The last address of the X-Forwarded-For corral sent: the client's."""
    values = header(rec, "x-forwarded-for")
    return values[-1].split(",")[-1].strip() if values else None


def run(env, streams, keywords=(), progress=None):
    """Sends every variant of streams to the two corrals side by side;
    {variant: record}. The passing corral makes the record; the keyed one
    adds the host it sent upstream for each request ("hosts")."""
    redis = env.redis()
    passing, keyed = Side(env, redis, "passing"), Side(env, redis, "keyed", KEYED_ROUTE)
    todo = variants(streams, keywords)
    with ThreadPoolExecutor(2) as pool:
        jobs = [pool.submit(passing.send_all, todo, progress), pool.submit(keyed.send_all, todo)]
        seen, keyed_seen = [job.result() for job in jobs]
    addresses = [client_address(i) for i in range(len(todo))]
    requests, lines = passing.by_client(addresses)
    keyed.by_client(addresses)
    records = {}
    for (name, data, bytewise), address in zip(todo, addresses):
        got, closed = seen[name]
        records[name] = {
            "bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()[:16],
            "responses": responses(got), "closed": closed,
            "access": [access_view(line, passing.ports, address)
                       for line in lines.get(address, [])],
            "origin": [origin_view(r, passing.ports, address)
                       for r in requests.get(address, [])],
            "hosts": [scrub(h, keyed.ports, address) for h in asked_hosts(keyed_seen[name][0])],
        }
    return records


def run_in_env(binary, streams, keywords=(), keep_logs=False, progress=None):
    """run() in an Env of its own, in a temporary directory."""
    workdir = tempfile.mkdtemp(prefix="corral-door-diff-")
    try:
        with harness.Env(workdir, binary) as env:
            records = run(env, streams, keywords, progress)
    except BaseException:
        print(f"logs kept in {workdir}")
        raise
    if keep_logs:
        print(f"logs kept in {workdir}")
    else:
        shutil.rmtree(workdir, ignore_errors=True)
    return records


# -- golden records and differences ----------------------------------------------

def golden_document(records):
    return {"about": "What corral made of each stream of streams.py: "
                     "see tests/door_diff.py.",
            "config": CONFIG, "streams": records}


def render(obj, indent=0, lead=0):
    """JSON, with a value on one line where it fits in RENDER_WIDTH (lead:
    what comes before it on its line), else one member or item a line:
    records that read and diff line by line."""
    flat = json.dumps(obj, ensure_ascii=True)
    if indent + lead + len(flat) <= RENDER_WIDTH or not isinstance(obj, (dict, list)) \
            or not obj:
        return flat
    pad = " " * (indent + 1)
    if isinstance(obj, dict):
        items = [f"{pad}{json.dumps(k)}: {render(v, indent + 1, len(json.dumps(k)) + 2)}"
                 for k, v in obj.items()]
        return "{\n" + ",\n".join(items) + "\n" + " " * indent + "}"
    items = [pad + render(v, indent + 1) for v in obj]
    return "[\n" + ",\n".join(items) + "\n" + " " * indent + "]"


def dumps(obj):
    return render(obj) + "\n"


def load_golden(path):
    """The records of a golden file recorded with this CONFIG."""
    with open(path) as f:
        doc = json.load(f)
    if doc.get("config") != CONFIG:
        raise AssertionError(f"{path} was recorded with {doc.get('config')}, not "
                             f"{CONFIG}: record it again (tests/door_diff.py --record)")
    return doc["streams"]


def differences(want, got, labels=("golden", "this binary"), whole=True):
    """[(variant, readable difference)] between two sets of records, in
    want's order, then the variants only got has. whole: got is meant to
    have every variant of want (not a -k selection)."""
    out = []
    for name, rec in want.items():
        if name not in got:
            if whole:
                out.append((name, "recorded, but no longer a stream of streams.py: record "
                                  "again (tests/door_diff.py --record)"))
            continue
        mine = got[name]
        if (rec["bytes"], rec["sha256"]) != (mine["bytes"], mine["sha256"]):
            out.append((name, "the stream changed since it was recorded: record again "
                              "(tests/door_diff.py --record)"))
            continue
        if rec != mine:
            diff = difflib.unified_diff(dumps(rec).splitlines(), dumps(mine).splitlines(),
                                        *labels, lineterm="", n=2)
            out.append((name, "\n".join(diff)))
    for name in got:
        if name not in want:
            out.append((name, "no golden record: record again (tests/door_diff.py --record)"))
    return out


def report(diffs):
    return "\n".join(f"--- stream {name!r}\n{text}" for name, text in diffs)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bin", required=True, help="the corral binary")
    ap.add_argument("--golden", default=GOLDEN, help=f"golden file (default {GOLDEN})")
    ap.add_argument("--record", metavar="FILE",
                    help="record the streams twice and write FILE if both runs agree")
    ap.add_argument("-k", dest="keywords", action="append", default=[],
                    help="only variants whose name contains this (repeatable)")
    ap.add_argument("--keep-logs", action="store_true", help="keep corral's logs")
    ap.add_argument("--show", action="store_true",
                    help="print the records of this binary instead of comparing them")
    ap.add_argument("-v", dest="verbose", action="store_true", help="name each stream")
    args = ap.parse_args(argv)
    binary = os.path.abspath(args.bin)
    streams = load_streams()

    def progress(i, n, name):
        if args.verbose:
            print(f"{i}/{n} {name}", flush=True)

    started = time.monotonic()
    if args.record:
        if args.keywords:
            ap.error("--record records every stream: no -k")
        first = run_in_env(binary, streams, progress=progress)
        second = run_in_env(binary, streams, progress=progress)
        diffs = differences(first, second, ("first run", "second run"))
        if diffs:
            print(report(diffs))
            print(f"two recordings differ in {len(diffs)} streams: {args.record} not written")
            return 1
        with open(args.record, "w") as f:
            f.write(dumps(golden_document(first)))
        print(f"{len(first)} streams recorded twice alike in "
              f"{time.monotonic() - started:.1f} s: {args.record}")
        return 0
    want = None if args.show else load_golden(args.golden)
    got = run_in_env(binary, streams, args.keywords, args.keep_logs, progress)
    if args.show:
        print(dumps(got), end="")
        return 0
    diffs = differences(want, got, whole=not args.keywords)
    if diffs:
        print(report(diffs))
    print(f"{len(got)} streams sent, {len(diffs)} differences from {args.golden} "
          f"({time.monotonic() - started:.1f} s)")
    return 1 if diffs else 0


if __name__ == "__main__":
    sys.exit(main())
