"""The corral process: corral_config (the INI text of one instance), Corral
(one process, stopped and checked for a clean exit), fleet_counters,
children (a process's child pids) and the wrapper (valgrind) it may run
under.
"""

import os
import shlex
import signal
import subprocess
import tempfile
import time
import urllib.parse

from .http import http_request
from .keys import PREFIX
from .procs import group_members, kill_group
from .wait import (CLIENT_TIMEOUT_S, SLOWNESS, START_TIMEOUT_S, STOP_TIMEOUT_S, read_text,
                   sanitizer_report, tail, wait_for)

# A command that runs corral (e.g. "valgrind --error-exitcode=99 ..."):
# corral is started as WRAPPER... BINARY ARGS.
WRAPPER = shlex.split(os.environ.get("CORRAL_WRAPPER") or "")
VALGRIND_ERROR_EXIT = 99	# make test-valgrind's --error-exitcode
# Once its master has exited, a worker still exiting gets this long.
ORPHAN_GRACE_S = 10

COUNTERS = ("requests", "hits", "stale_hits", "misses", "collapsed", "bypass",
            "upstream_fetches", "upstream_errors", "stores", "locks_acquired",
            "lock_busy", "lock_renewals", "lock_lost", "waiters", "lock_wait_ms",
            "lock_wait_timeouts")

# key_host: the scenarios key on HOST, as most were written to (test_keys.py
# covers the default, keyed on the upstream).
DEFAULT_ROUTE = {"key_host": "on", "ttl": "10s", "stale_while_revalidate": "60s",
                 "lock_ttl": "5s", "lock_poll": "500ms"}


def corral_config(redis, origin, listen_port, admin_port, routes=None, extra=None):
    """INI text for one corral instance.

    redis: a RedisServer or "host:port"; origin: an Origin or a URL.
    routes: {prefix: {key: value}}, in order; defaults to {"/": DEFAULT_ROUTE}.
      A route's keys are laid over DEFAULT_ROUTE; a key whose value is None
      is left out (corral's own default applies).
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
        # The shipped [redis] timeout (1 s), stretched only with SLOWNESS (a
        # corral slowed down by valgrind must not take its own slowness for
        # Redis's); a scenario about a slow Redis sets its own.
        "redis": dict({"address": redis_addr, "prefix": PREFIX},
                      **({"timeout": f"{round(1000 * SLOWNESS)}ms"} if SLOWNESS > 1 else {})),
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
        lines += [f"{k} = {v}" for k, v in dict(DEFAULT_ROUTE, **values).items()
                  if v is not None]
        lines.append("")
    text = "\n".join(lines)
    if isinstance(extra, str):
        text += extra.rstrip("\n") + "\n"
    return text


def split_hostport(text):
    host, _, port = text.strip().rpartition(":")
    return host.strip("[]"), int(port)


def server_addresses(config_text):
    """(listen, admin_listen) as (host, port) pairs from [server] of an INI text:
    the first address of each (a later one may be "tls")."""
    section, found = None, {}
    for raw in config_text.splitlines():
        line = raw.split(";")[0].split("#")[0].strip()
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip()
        elif section == "server" and "=" in line:
            key, value = (s.strip() for s in line.split("=", 1))
            if key in ("listen", "admin_listen"):
                found[key] = split_hostport(value.split(",")[0].split()[0])
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
    is its RLIMIT_NOFILE; wrapper, if not None, replaces WRAPPER. It runs in
    a process group of its own, so that stopping or killing it never leaves
    a worker behind."""

    def __init__(self, binary, config_text, name, workdir=None, wait_redis=True,
                 nofile=None, env=None, admin_token=None, wrapper=None):
        if not binary or not os.access(binary, os.X_OK):
            raise AssertionError(f"corral binary {binary!r} not found or not executable "
                                 "(build it first, e.g. make build/asan/corral)")
        self.name = name
        self.admin_token = admin_token	# sent to the admin listener, if any
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
        self.wrapper = WRAPPER if wrapper is None else list(wrapper)
        self.started_at = time.time()	# wall clock, just before it starts
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen([*self.wrapper, binary, "-c", self.config_path],
                                         stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL,
                                         preexec_fn=nofile_limit(nofile),
                                         start_new_session=True,
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

    def admin(self, method, target, timeout=10, headers=None, body=None):
        """One request to the admin listener (with admin_token as a Bearer
        token, if set); the Response."""
        sent = {"Host": f"{self.admin_host}:{self.admin_port}"}
        if self.admin_token:
            sent["Authorization"] = f"Bearer {self.admin_token}"
        sent.update(headers or {})
        return http_request(self.admin_host, self.admin_port, target, method=method,
                            headers=sent, body=body, timeout=timeout)

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
        """SIGTERM, then SIGKILL to its whole group after STOP_TIMEOUT_S.
        Raises when corral did not exit cleanly (non-zero, killed, a
        sanitizer report in its log, or a process of its group still
        running once the master has gone)."""
        if self.stopped:
            return
        self.stopped = True
        problem = None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                kill_group(self.proc.pid)
                self.proc.wait()
                problem = f"did not exit within {STOP_TIMEOUT_S} s of SIGTERM"
        else:
            problem = f"had already exited with {self.proc.returncode}"
        rc = self.proc.returncode
        if problem is None and rc != 0:
            problem = f"exited with {rc}" if rc > 0 else f"died of signal {-rc}"
            if self.wrapper and rc == VALGRIND_ERROR_EXIT:
                problem += " (valgrind found memory errors or leaks: see the log)"
        left = self.orphans()
        if left:
            problem = (problem + "; " if problem else "") + \
                f"its processes {left} outlived the master (killed)"
        marker = sanitizer_report(self.log())
        if marker:
            problem = (problem + "; " if problem else "") + f"log has {marker!r}"
        if problem:
            raise AssertionError(f"{self.name} {problem}; log:\n{tail(self.log())}")

    def expect_exit(self, status, timeout, what):
        """Waits up to timeout seconds (times SLOWNESS) for corral to exit
        by itself (after a signal the scenario sent, or none), and checks
        its exit status and its log for sanitizer reports; the Env then
        has nothing left to stop."""
        self.stopped = True
        try:
            self.proc.wait(timeout * SLOWNESS)
        except subprocess.TimeoutExpired:
            kill_group(self.proc.pid)
            self.proc.wait()
            raise AssertionError(f"{self.name} did not exit within {timeout * SLOWNESS} s "
                                 f"{what}; log:\n{tail(self.log())}")
        left = self.orphans()
        if left:
            raise AssertionError(f"{self.name}'s processes {left} outlived the master "
                                 f"(killed) {what}; log:\n{tail(self.log())}")
        if self.proc.returncode != status:
            raise AssertionError(f"{self.name} exited with {self.proc.returncode} {what}, "
                                 f"not {status}; log:\n{tail(self.log())}")
        marker = sanitizer_report(self.log())
        if marker:
            raise AssertionError(f"{self.name}'s log has {marker!r}:\n{tail(self.log())}")

    def orphans(self):
        """Once the master has exited: the processes of its group still
        running after a grace for their own exit, killed."""
        try:
            wait_for(lambda: not group_members(self.proc.pid), timeout=ORPHAN_GRACE_S,
                     what=f"the processes of {self.name}'s group to exit")
            return []
        except AssertionError:
            left = group_members(self.proc.pid)
            kill_group(self.proc.pid)
            return left

    def kill(self):
        """SIGKILL to the master and its workers at once (its group)."""
        self.stopped = True
        kill_group(self.proc.pid)
        self.proc.wait()


def fleet_counters(corrals, route=None):
    """Counters summed over instances."""
    total = {}
    for c in corrals:
        for k, v in c.counters(route).items():
            if isinstance(v, (int, float)):
                total[k] = total.get(k, 0) + v
    return total


def release_once_joined(origin, path, corrals, n):
    """Releases path's fetch, held at the origin, once the corrals have n
    requests in progress between them: every client has joined it."""
    wait_for(lambda: origin.held(path) == 1 and
             sum(c.stats()["in_progress"]["requests"] for c in corrals) == n,
             what=f"the {n} clients to join the one fetch of {path}, held at the origin")
    origin.release(path)


def fills_that_woke(corrals):
    """{name: fill_wake count} of each instance that took no lock: the
    flights of its waiters that a fill notification woke."""
    woken = {}
    for c in corrals:
        total = c.stats()["total"]
        if total["locks_acquired"] == 0:
            woken[c.name] = total["fill_wake"]["count"]
    return woken


# What each instance did of a fetch: named in a failed one-fetch check.
FETCH_STORY = ("misses", "collapsed", "locks_acquired", "lock_busy", "lock_takeovers",
               "lock_lost", "lock_wait_timeouts", "sibling_fills", "upstream_retries",
               "upstream_fetches", "errors")


def fetch_story(corrals):
    """Per instance, the counters that say who fetched and why, and its
    Redis timeouts and errors: for the message of a failed fetch count."""
    lines = []
    for c in corrals:
        try:
            s = c.stats()
        except Exception as e:	# noqa: BLE001 - a story, not a check
            lines.append(f"{c.name}: no /stats ({e!r})")
            continue
        told = {k: s["total"][k] for k in FETCH_STORY if s["total"].get(k)}
        r = s.get("redis", {})
        told.update({f"redis_{k}": r[k] for k in ("timeouts", "errors", "disconnects")
                     if r.get(k)})
        lines.append(f"{c.name}: {told}")
    return "; ".join(lines)


def expect_fetches(origin, path, n, corrals, what):
    """The origin saw n requests for path; if not, the fleet's story."""
    got = origin.count(path)
    if got != n:
        raise AssertionError(f"{what}: expected {n!r}, got {got!r} "
                             f"({fetch_story(corrals)})")


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


def tcp_socket_owner(pids, local_port=None, remote_port=None, established=False):
    """The pid among pids holding an IPv4 TCP socket whose local and remote
    ports are those given (None: any; established: ESTABLISHED only), found
    through /proc/net/tcp and each process's descriptors; None if none does."""
    inodes = set()
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            fields = line.split()
            if ((local_port is None or int(fields[1].split(":")[1], 16) == local_port) and
                    (remote_port is None or int(fields[2].split(":")[1], 16) == remote_port) and
                    (not established or fields[3] == "01") and fields[9] != "0"):
                inodes.add(f"socket:[{fields[9]}]")
    if not inodes:
        return None
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") in inodes:
                    return pid
            except OSError:
                continue
    return None
