#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A scriptable, countable, slow HTTP origin for Corral's tests and demo.

    python3 tests/origin.py --port 9000 [--host 127.0.0.1] [--delay 300ms] [--log]

Every path answers, after the default delay, 200 with a JSON body
{"path", "n", "method", "served_at"} and the header X-Origin-Count: n, where
n counts the requests for that path. Tests change that per path through the
control API under /__origin/ (never counted, never delayed):

    POST /__origin/script   {"path": "/users/1" | "*", "delay_ms": 500,
                             "status": 200, "body": "v{n}",
                             "headers": {"Set-Cookie": "a=b"}, "hold": false,
                             "etag": "\"v1\"", "last_modified": DATE,
                             "date": false, "drop": false}
        Fields left out fall back to a prefix script ("/big/*": every path
        starting with "/big/"; the longest wins), then to the "*" script,
        then to the defaults.
        "body" is a template: {n} (this path's count), {path}, {method},
        and {h:Name} (the request's Name header, "" when absent).
        "headers" may also be a list of [name, value] pairs (to repeat a name);
        {last} in a value is the path's last segment ("/rows/7": "7").
        Headers naming Content-Length or Transfer-Encoding replace the
        origin's own Content-Length, the body goes out as given (chunks
        and all) and the connection is closed after it: misframed answers.
        With "drop": true the origin reads and counts a request, then
        closes the connection without answering.
        With "hold": true every request on that path blocks until released.
        "etag" / "last_modified" are sent as ETag / Last-Modified, and a
        request with a matching If-None-Match (weak comparison, a list, or
        *), or without one and with an If-Modified-Since not before
        last_modified, is answered 304 without a body (when status is 200).
        "date": false sends no Date header; a string sends that Date.
        "size": N sends N bytes of a fixed pattern (BODY_PATTERN repeated)
        instead of "body"; "body_b64" sends the bytes it encodes in base64
        as they are (a compressed body, with its Content-Encoding among
        "headers"). "pieces": K with "interval_ms": M writes the
        body in K parts M ms apart (a slow origin's trickle); "cut_after":
        N announces the whole length but closes after N bytes of body;
        "no_length": true sends no Content-Length and closes after the
        body.
    POST /__origin/release?path=/users/1
        Releases every request held on that path; later ones pass.
    GET  /__origin/stats    {"total": N, "active": A, "max_active": M,
                             "paths": {PATH: {"count", "methods",
                             "done_at", "first_byte_mono", "held",
                             "bodies", "headers", "active", "max_active",
                             "statuses", "requests", "arrivals"}}}
        "texts" are the request bodies received (as text, each cut to
        TEXT_RECORD_MAX characters, the last MAX_REQUEST_RECORDS);
        "headers" are the last request's headers ("header_lines" the same
        as [name, value] pairs, a repeated name on each of its lines),
        "requests" every
        request's (the last MAX_REQUEST_RECORDS), "statuses" counts the statuses
        answered (e.g. {"200": 1, "304": 2}), "arrivals" the place of each
        of the path's requests among all the origin's (1, 2, ...: total when
        it came), the order requests reached the origin in.
        A request is counted when it arrives (before delay or hold);
        done_at gets the wall-clock time once its response is written;
        first_byte_mono the time its head had been sent and its body was
        about to be, on CLOCK_MONOTONIC (Python's time.monotonic(), which
        every process on the machine shares: a client there can compare).
        active counts the path's requests that arrived and whose response
        is not yet being written; max_active is the most there ever were.
        The top-level active and max_active count the same over every
        path: the origin's requests in flight, and its peak concurrency.
        A stats request waits (at most WRITE_WAIT_S) for responses being
        written, so it never misses the done_at of a response a client
        has already read.
    POST /__origin/reset    forgets counts and scripts, releases holds.

Standard library only. Prints "origin listening on HOST:PORT" once bound
(--port 0 picks a free port).
"""

import base64
import argparse
import email.utils
import json
import re
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

CONTROL_PREFIX = "/__origin/"
MAX_HOLD_S = 120		# a held request gives up after this long
MAX_RECORDS = 10000		# per-path done_at / bodies entries kept
MAX_REQUEST_RECORDS = 1000	# per-path request header sets kept
TEXT_RECORD_MAX = 4096		# characters of a request body kept in "texts"
MAX_BODY_BYTES = 64 << 20	# request bodies larger than this are refused
IDLE_TIMEOUT_S = 120		# keep-alive connections idle this long are closed
LISTEN_BACKLOG = 1024		# stampedes open hundreds of connections at once
NO_BODY_STATUSES = {204, 304}
WRITE_WAIT_S = 2		# stats wait this long for responses being written
BODY_PATTERN = bytes(range(256)) * 16	# what "size" bodies are made of
FRAMING_HEADERS = {"content-length", "transfer-encoding"}
HEADER_FIELD_RE = re.compile(r"\{h:([A-Za-z0-9-]+)\}")	# {h:Name} in a body


def sized_body(size):
    """The body a script's "size" makes: BODY_PATTERN repeated, cut to size
    (the scenarios check streamed bodies against it byte for byte)."""
    return (BODY_PATTERN * (size // len(BODY_PATTERN) + 1))[:size]


def parse_delay(text):
    """"300ms", "1.5s", "2m", "0" or a bare number of ms -> seconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*", str(text))
    if not m:
        raise ValueError(f"bad delay {text!r} (want e.g. 300ms, 1s)")
    value, unit = float(m.group(1)), m.group(2) or "ms"
    return value * {"ms": 0.001, "s": 1.0, "m": 60.0}[unit]


def opaque_tag(tag):
    """An entity tag without its weakness indicator, for weak comparison."""
    tag = tag.strip()
    return tag[2:] if tag.startswith("W/") else tag


def http_date(text):
    """An HTTP date as a Unix time, or None."""
    try:
        return email.utils.parsedate_to_datetime(text).timestamp()
    except (TypeError, ValueError, IndexError):
        return None


def not_modified(req_headers, etag, last_modified):
    """RFC 9110 13.2.2: If-None-Match first (weak comparison); then, only
    without it, If-Modified-Since."""
    inm = req_headers.get("If-None-Match")
    if inm is not None:
        if etag is None:
            return False
        tags = [t.strip() for t in inm.split(",") if t.strip()]
        return "*" in tags or opaque_tag(etag) in [opaque_tag(t) for t in tags]
    ims = req_headers.get("If-Modified-Since")
    if ims is None or last_modified is None:
        return False
    since, modified = http_date(ims), http_date(last_modified)
    return since is not None and modified is not None and modified <= since


class PathStats:
    def __init__(self):
        self.count = 0
        self.methods = {}
        self.done_at = []
        self.first_byte_mono = []
        self.held = 0
        self.bodies = []
        self.headers = {}
        self.header_lines = []
        self.active = 0
        self.max_active = 0
        self.statuses = {}
        self.requests = []
        self.texts = []
        self.arrivals = []

    def as_json(self):
        return {"count": self.count, "methods": dict(self.methods),
                "done_at": list(self.done_at),
                "first_byte_mono": list(self.first_byte_mono), "held": self.held,
                "bodies": list(self.bodies), "headers": dict(self.headers),
                "header_lines": [list(p) for p in self.header_lines],
                "active": self.active, "max_active": self.max_active,
                "statuses": dict(self.statuses),
                "requests": [dict(h) for h in self.requests],
                "texts": list(self.texts), "arrivals": list(self.arrivals)}


def bounded_append(lst, value):
    lst.append(value)
    if len(lst) > MAX_RECORDS:
        del lst[:len(lst) - MAX_RECORDS]


class OriginState:
    """Counts, scripts and holds, shared by every handler thread."""

    SCRIPT_FIELDS = {"delay_ms", "status", "body", "headers", "hold", "etag",
                     "last_modified", "date", "drop", "size", "pieces",
                     "interval_ms", "cut_after", "no_length", "body_b64"}

    def __init__(self, default_delay_s):
        self.lock = threading.Lock()
        self.written = threading.Condition(self.lock)
        self.writing = 0	# responses being written, not yet in done_at
        self.default_delay_s = default_delay_s
        self.reset()

    def reset(self):
        with self.lock:
            for event in getattr(self, "holds", {}).values():
                event.set()
            self.total = 0
            self.active = 0
            self.max_active = 0
            self.paths = {}
            self.scripts = {}	# path or "*" -> partial script
            self.holds = {}		# path or "*" -> Event set on release

    def set_script(self, spec):
        path = spec.get("path", "*")
        if not isinstance(path, str) or not (path == "*" or path.startswith("/")):
            raise ValueError("path must be '*' or start with '/'")
        unknown = set(spec) - self.SCRIPT_FIELDS - {"path"}
        if unknown:
            raise ValueError(f"unknown script fields: {sorted(unknown)}")
        script = {k: spec[k] for k in self.SCRIPT_FIELDS if k in spec}
        if "headers" in script and not (
                isinstance(script["headers"], dict) or
                (isinstance(script["headers"], list) and
                 all(isinstance(p, list) and len(p) == 2 for p in script["headers"]))):
            raise ValueError("headers must be an object or a list of [name, value]")
        for field in ("etag", "last_modified"):
            if script.get(field) is not None and not isinstance(script[field], str):
                raise ValueError(f"{field} must be a string")
        if "date" in script and not (script["date"] is False or script["date"] is None or
                                     isinstance(script["date"], str)):
            raise ValueError("date must be false, null or a string")
        with self.lock:
            self.scripts[path] = script
            if script.get("hold"):
                self.holds.setdefault(path, threading.Event())
            else:
                event = self.holds.pop(path, None)
                if event:
                    event.set()

    def release(self, path):
        with self.lock:
            event = self.holds.pop(path, None)
            if event:
                event.set()
            if path in self.scripts:
                self.scripts[path]["hold"] = False
            return event is not None

    def arrive(self, path, method, headers, lines=()):
        """Counts a request; returns (n, effective script, hold event or None)."""
        with self.lock:
            self.total += 1
            st = self.paths.setdefault(path, PathStats())
            st.count += 1
            bounded_append(st.arrivals, self.total)
            st.methods[method] = st.methods.get(method, 0) + 1
            st.headers = headers
            st.header_lines = list(lines)
            st.requests.append(headers)
            del st.requests[:-MAX_REQUEST_RECORDS]
            st.active += 1
            st.max_active = max(st.max_active, st.active)
            self.active += 1
            self.max_active = max(self.max_active, self.active)
            script = {"delay_ms": self.default_delay_s * 1000.0, "status": 200,
                      "body": None, "headers": {}, "hold": False, "etag": None,
                      "last_modified": None, "date": None, "drop": False,
                      "size": None, "pieces": 1, "interval_ms": 0, "cut_after": None,
                      "no_length": False, "body_b64": None}
            hold_key = None
            # "*", then prefix scripts ("/big/*"), shortest first, then
            # the path's own.
            prefixes = sorted((k for k in self.scripts if len(k) > 1 and k.endswith("*")
                               and path.startswith(k[:-1])), key=len)
            for key in ("*", *prefixes, path):
                if key in self.scripts:
                    script.update(self.scripts[key])
                    if self.scripts[key].get("hold"):
                        hold_key = key
                    elif "hold" in self.scripts[key]:
                        hold_key = None
            event = self.holds.get(hold_key) if hold_key else None
            if event is not None:
                st.held += 1
            return st.count, script, event

    def unhold(self, path):
        with self.lock:
            self.paths[path].held -= 1

    def record_body(self, path, body):
        with self.lock:
            st = self.paths[path]
            bounded_append(st.bodies, len(body))
            st.texts.append(body[:TEXT_RECORD_MAX].decode("utf-8", "replace"))
            del st.texts[:-MAX_REQUEST_RECORDS]

    def begin_write(self, path, status=None):
        """The response of one request of path is about to be written."""
        with self.lock:
            if path in self.paths:	# else forgotten by a reset
                self.paths[path].active -= 1
                self.active -= 1
                if status is not None:
                    st = self.paths[path].statuses
                    st[str(status)] = st.get(str(status), 0) + 1
            self.writing += 1

    def head_written(self, path, when):
        """The head of one response of path went out at when (monotonic)."""
        with self.lock:
            if path in self.paths:
                bounded_append(self.paths[path].first_byte_mono, when)

    def end_write(self, path, when):
        """The response was written (when: its time) or failed (None)."""
        with self.lock:
            if when is not None and path in self.paths:
                bounded_append(self.paths[path].done_at, when)
            self.writing -= 1
            self.written.notify_all()

    def stats(self):
        with self.lock:
            self.written.wait_for(lambda: self.writing == 0, WRITE_WAIT_S)
            return {"total": self.total, "active": self.active,
                    "max_active": self.max_active,
                    "paths": {p: s.as_json() for p, s in self.paths.items()}}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "corral-test-origin/1"
    timeout = IDLE_TIMEOUT_S
    # Headers and body go out in separate writes: without TCP_NODELAY the
    # body can wait for the client's delayed ACK (~40 ms).
    disable_nagle_algorithm = True

    def do_GET(self):
        self.dispatch()

    do_HEAD = do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_GET

    # -- plumbing ---------------------------------------------------------

    def read_body(self):
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass	# trailers
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            raise ValueError("request body too large")
        return self.rfile.read(length) if length > 0 else b""

    def reply(self, status, body, headers=(), date=None, pieces=1, interval_s=0.0,
              cut_after=None, no_length=False, on_head=None):
        """date: None sends the current Date, False none, a string that one.
        The body goes in pieces parts, interval_s apart; cut_after closes
        the connection after that many body bytes (its length announced
        whole); no_length sends no Content-Length and closes at the end.
        on_head() is called once the head is sent, before the body."""
        if date is None:
            self.send_response(status)
        else:
            self.log_request(status)
            self.send_response_only(status)
            self.send_header("Server", self.version_string())
            if date is not False:
                self.send_header("Date", date)
        names = set()
        for name, value in headers:
            self.send_header(name, value)
            names.add(name.lower())
        if "content-type" not in names and body:
            self.send_header("Content-Type", "text/plain; charset=utf-8")
        if names & FRAMING_HEADERS or no_length or cut_after is not None:
            self.close_connection = True	# the client may frame it otherwise
        if not (names & FRAMING_HEADERS) and not no_length and \
                status not in NO_BODY_STATUSES:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if on_head is not None:
            on_head()
        if self.command != "HEAD" and status not in NO_BODY_STATUSES:
            if cut_after is not None:
                body = body[:int(cut_after)]
            step = max(1, -(-len(body) // max(1, pieces)))
            for i in range(0, len(body), step):
                if i > 0 and interval_s > 0:
                    self.wfile.flush()
                    time.sleep(interval_s)	# the origin trickles its body
                self.wfile.write(body[i:i + step])
        self.wfile.flush()

    def reply_json(self, status, obj):
        self.reply(status, json.dumps(obj).encode(),
                   [("Content-Type", "application/json")])

    def log_message(self, fmt, *args):
        pass	# access lines are printed by dispatch() when --log is on

    # -- requests ---------------------------------------------------------

    def dispatch(self):
        state = self.server.state
        target = urlsplit(self.path)
        if target.path.startswith(CONTROL_PREFIX):
            self.control(state, target)
            return
        path = self.path	# counted as sent: path plus query, if any
        n, script, hold = state.arrive(path, self.command, dict(self.headers.items()),
                                     self.headers.items())
        try:
            body_in = self.read_body()
        except ValueError as e:
            self.close_connection = True
            state.begin_write(path)
            try:
                self.reply(413, str(e).encode())
            finally:
                state.end_write(path, None)
            return
        state.record_body(path, body_in)
        if hold is not None:
            hold.wait(MAX_HOLD_S)
            state.unhold(path)
        delay_s = float(script["delay_ms"]) / 1000.0
        if delay_s > 0:
            time.sleep(delay_s)
        if script["drop"]:
            self.close_connection = True	# no answer at all
            state.begin_write(path)
            state.end_write(path, None)
            return

        status = int(script["status"])
        headers = [("X-Origin-Count", str(n))]
        pairs = script["headers"]
        pairs = pairs.items() if isinstance(pairs, dict) else pairs
        headers += [(str(k), str(v).replace("{last}", path.rsplit("/", 1)[-1]))
                    for k, v in pairs]
        if script["etag"] is not None:
            headers.append(("ETag", script["etag"]))
        if script["last_modified"] is not None:
            headers.append(("Last-Modified", script["last_modified"]))
        if status == 200 and not_modified(self.headers, script["etag"],
                                          script["last_modified"]):
            status = 304
        if script["body"] is None:
            body = json.dumps({"path": path, "n": n, "method": self.command,
                               "served_at": time.time()}).encode()
            if status not in NO_BODY_STATUSES and \
                    not any(k.lower() == "content-type" for k, _ in headers):
                headers.append(("Content-Type", "application/json"))
        else:
            body = (str(script["body"]).replace("{n}", str(n))
                    .replace("{path}", path).replace("{method}", self.command))
            body = HEADER_FIELD_RE.sub(
                lambda m: self.headers.get(m.group(1), ""), body).encode()
        if script["body_b64"] is not None:	# bytes as they are
            body = base64.b64decode(script["body_b64"])
        if script["size"] is not None:	# a large body: bytes by position
            size = int(script["size"])
            body = sized_body(size)
        if status in NO_BODY_STATUSES:
            body = b""
        state.begin_write(path, status)
        done_at = None
        try:
            self.reply(status, body, headers, script["date"],
                       pieces=int(script["pieces"]),
                       interval_s=float(script["interval_ms"]) / 1000.0,
                       cut_after=script["cut_after"], no_length=script["no_length"],
                       on_head=lambda: state.head_written(path, time.monotonic()))
            done_at = time.time()
        finally:
            state.end_write(path, done_at)
        if self.server.log:
            print(f"origin: {self.command} {path} -> {status} (n={n}, "
                  f"{delay_s * 1000:.0f} ms)", file=sys.stderr, flush=True)

    def control(self, state, target):
        what = target.path[len(CONTROL_PREFIX):]
        query = parse_qs(target.query)
        try:
            body = self.read_body()
            if what == "stats" and self.command in ("GET", "HEAD"):
                self.reply_json(200, state.stats())
            elif what == "script" and self.command == "POST":
                state.set_script(json.loads(body or b"{}"))
                self.reply_json(200, {"ok": True})
            elif what == "release" and self.command == "POST":
                path = query.get("path", ["*"])[0]
                self.reply_json(200, {"ok": True, "released": state.release(path)})
            elif what == "reset" and self.command == "POST":
                state.reset()
                self.reply_json(200, {"ok": True})
            else:
                self.reply_json(404, {"error": f"no control {self.command} {target.path}"})
        except (ValueError, TypeError) as e:
            self.reply_json(400, {"error": str(e)})


class OriginServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = LISTEN_BACKLOG


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True, help="0 picks a free port")
    ap.add_argument("--delay", default="0", help="default delay, e.g. 300ms")
    ap.add_argument("--log", action="store_true", help="one stderr line per request")
    args = ap.parse_args(argv)
    try:
        delay_s = parse_delay(args.delay)
    except ValueError as e:
        ap.error(str(e))

    server = OriginServer((args.host, args.port), Handler)
    server.state = OriginState(delay_s)
    server.log = args.log
    host, port = server.server_address[:2]
    print(f"origin listening on {host}:{port}", flush=True)
    try:
        server.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
