# SPDX-License-Identifier: MIT
"""Running Corral as a system service: JSON logs, the service manager's
notifications, make install, the Debian package, the manual pages and the
Grafana dashboard."""

import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import tempfile

from harness import (corral_config, docs, expect, expect_eq, free_port, http_request, read_text,
                     scenario, tail, wait_for)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def json_lines(path, n, what):
    """Waits for n lines in path; each must be one JSON object."""
    wait_for(lambda: len(read_text(path).splitlines()) >= n, what=f"{n} lines in {what}")
    out = []
    for line in read_text(path).splitlines():
        try:
            obj = json.loads(line)
        except ValueError as e:
            raise AssertionError(f"{what}: not one JSON object a line ({e}):\n{line}")
        expect(isinstance(obj, dict), f"{what}: not an object: {line}")
        out.append(obj)
    return out


@scenario
def log_format_json_writes_one_object_a_line_to_both_logs(env):
    access = os.path.join(env.workdir, "access.log")
    errors = os.path.join(env.workdir, "error.log")
    redis, origin = env.redis(), env.origin()
    origin.script("/r/a?x=1", body="hello")
    corral = env.corral(redis, origin, routes={"/r/": {}}, extra={"server": {
        "access_log": access, "error_log": errors, "log_format": "json"}})
    agent = 'probe/1.0 "quoted" \\ caf\xe9'
    corral.get("/r/a?x=1", headers={"User-Agent": agent})
    corral.get("/r/a?x=1", headers={"User-Agent": agent})

    miss, hit = json_lines(access, 2, "the access log")
    fields = ["time", "client", "method", "uri", "proto", "status", "bytes", "referer",
              "user_agent", "cache", "cache_status", "route", "upstream_ms",
              "lock_wait_ms", "total_ms", "key"]
    expect_eq(list(miss), fields, "the access log's fields, in order")
    expect_eq(miss["key"], None, "no key rule on the route: key is null")
    expect_eq((miss["client"], miss["method"], miss["uri"], miss["proto"], miss["status"],
               miss["bytes"], miss["referer"], miss["user_agent"], miss["route"]),
              ("127.0.0.1", "GET", "/r/a?x=1", "HTTP/1.1", 200, 5, None, agent, "/r/"),
              "request fields; the user agent with a quote, a backslash and a byte past ASCII")
    expect_eq((miss["cache"], hit["cache"]), ("miss", "hit"), "cache outcomes")
    expect(miss["cache_status"].startswith("corral; fwd=miss; fwd-status=200; stored"),
           f"the miss's Cache-Status: {miss['cache_status']!r}")
    expect(hit["cache_status"].startswith("corral; hit; ttl="),
           f"the hit's Cache-Status: {hit['cache_status']!r}")
    expect(isinstance(miss["upstream_ms"], int) and hit["upstream_ms"] is None,
           f"upstream_ms: {miss['upstream_ms']!r}, {hit['upstream_ms']!r}")
    expect(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4}", miss["time"]),
           f"access time: {miss['time']!r}")

    lines = json_lines(errors, 1, "the error log")
    expect_eq(list(lines[0]), ["time", "level", "msg"], "the error log's fields")
    expect(any("listening on" in l["msg"] and l["level"] == "info" for l in lines),
           f"the start-up line as JSON: {lines}")
    expect(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", lines[0]["time"]),
           f"error log time: {lines[0]['time']!r}")
    expect_eq(corral.log().strip(), "", "nothing on stderr")


# -- make install, make deb, the unit --------------------------------------------------

def run(cmd, cwd=ROOT, timeout=600, env=None):
    """Runs cmd; returns its stdout (and stderr), failing when it fails."""
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, errors="replace",
                       timeout=timeout, stdin=subprocess.DEVNULL,
                       env=dict(os.environ, **(env or {})))
    if p.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} exited with {p.returncode}:\n"
                             f"{tail(p.stdout + p.stderr)}")
    return p.stdout + p.stderr


def make(*args):
    return run(["make", "--no-print-directory", *args])


def deb_path():
    makefile = read_text(os.path.join(ROOT, "Makefile"))
    version = "-".join(re.search(rf"^{name}\s*:=\s*(\S+)", makefile, re.M).group(1)
                       for name in ("VERSION", "DEB_REVISION"))
    arch = run(["dpkg", "--print-architecture"]).strip()
    make("deb")
    path = os.path.join(ROOT, "build", f"corral_{version}_{arch}.deb")
    expect(os.path.isfile(path), f"make deb made {path}")
    return path


@scenario(timeout=600, alone=True)
def make_install_lays_out_every_file_and_keeps_an_existing_config(env):
    dest = os.path.join(env.workdir, "dest")
    out = make("install", f"DESTDIR={dest}")
    files = {
        "/usr/local/sbin/corral": 0o755,
        "/etc/corral/corral.conf": 0o644,
        "/usr/local/share/man/man8/corral.8": 0o644,
        "/usr/local/share/man/man5/corral.conf.5": 0o644,
        "/usr/local/share/man/man7/corral-metrics.7": 0o644,
        "/usr/local/lib/systemd/system/corral.service": 0o644,
        "/etc/logrotate.d/corral": 0o644,
    }
    for path, mode in files.items():
        full = dest + path
        expect(os.path.isfile(full), f"make install put {path} under DESTDIR:\n{out}")
        expect_eq(oct(os.stat(full).st_mode & 0o777), oct(mode), f"mode of {path}")
    unit = read_text(dest + "/usr/local/lib/systemd/system/corral.service")
    expect("ExecStart=/usr/local/sbin/corral -c /etc/corral/corral.conf" in unit,
           f"the unit runs the installed binary:\n{unit}")
    rotate = read_text(dest + "/etc/logrotate.d/corral")
    expect("USR1" in rotate and "/var/log/corral/" in rotate,
           f"the logrotate snippet signals USR1:\n{rotate}")
    expect(env.run_corral("-t", "-c", dest + "/etc/corral/corral.conf").stdout.strip()
           == "configuration OK", "the installed config is valid")
    expect(re.search(r"^pid_file = /run/corral/corral.pid ;", read_text(
        dest + "/etc/corral/corral.conf"), re.M),
           "the installed config names the PID file logrotate and the package read")

    conf = dest + "/etc/corral/corral.conf"
    with open(conf, "w") as f:
        f.write("[server]\nlisten = 127.0.0.1:18080\n")
    out = make("install", f"DESTDIR={dest}", "PREFIX=/opt/corral")
    expect_eq(read_text(conf), "[server]\nlisten = 127.0.0.1:18080\n",
              "a second make install left the edited config alone")
    expect("keeping the existing" in out, f"and said so:\n{out}")
    unit = read_text(dest + "/opt/corral/lib/systemd/system/corral.service")
    expect("ExecStart=/opt/corral/sbin/corral " in unit, f"PREFIX reaches the unit:\n{unit}")


@scenario
def logrotate_snippet_rotates_and_corral_reopens_its_logs(env):
    logrotate = shutil.which("logrotate") or "/usr/sbin/logrotate"
    expect(os.access(logrotate, os.X_OK),
           "logrotate not found: scripts/install-deps test installs it")
    logs = os.path.join(env.workdir, "log")
    os.makedirs(logs)
    access, errors = os.path.join(logs, "access.log"), os.path.join(logs, "error.log")
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, extra={"server": {
        "access_log": access, "error_log": errors}})
    corral.get("/before")
    wait_for(lambda: "/before" in read_text(access), what="/before in the access log")

    snippet = read_text(os.path.join(ROOT, "dist", "corral.logrotate"))
    expect("systemctl kill --kill-whom=main --signal=USR1 corral.service" in snippet,
           f"the snippet signals the service's main process:\n{snippet}")
    # The same snippet on this scenario's logs, signalling this corral only.
    text = snippet.replace("/var/log/corral/", logs + "/")
    text, n = re.subn(r"(postrotate\n).*?(\n\s*endscript)",
                      rf"\g<1>\t\tkill -USR1 {corral.proc.pid}\g<2>", text, flags=re.S)
    expect(n == 1 and "pkill" not in text and "systemctl" not in text,
           f"one postrotate script, which signals corral (never every corral here):\n{text}")
    conf = os.path.join(env.workdir, "logrotate.conf")
    with open(conf, "w") as f:
        f.write(text)
    run([logrotate, "--force", "--state", os.path.join(env.workdir, "lr.state"), conf])

    wait_for(lambda: "logs reopened" in read_text(errors),
             what="corral to reopen its logs at their paths")
    expect("/before" in read_text(access + ".1"), "the old lines are in access.log.1")
    corral.get("/after")
    wait_for(lambda: "/after" in read_text(access), what="/after in the new access log")
    expect("/after" not in read_text(access + ".1"), "and not in the rotated file")


@scenario(timeout=600, alone=True)
def systemd_unit_passes_systemd_analyze_verify(env):
    if shutil.which("systemd-analyze") is None:
        raise AssertionError("systemd-analyze not found: scripts/install-deps test "
                             "installs it (package systemd)")
    root = os.path.join(env.workdir, "root")
    run(["dpkg-deb", "-x", deb_path(), root])
    text = read_text(os.path.join(root, "lib/systemd/system/corral.service"))
    for line in ("Type=notify", "ExecReload=/usr/sbin/corral -t -c /etc/corral/corral.conf",
                 "ExecReload=/bin/kill -HUP $MAINPID", "DynamicUser=yes",
                 "ProtectSystem=strict", "NoNewPrivileges=yes", "CapabilityBoundingSet=\n",
                 "LimitNOFILE=", "KillMode=mixed", "WatchdogSec="):
        expect(line in text, f"the unit has {line.strip()!r}")
    # verify wants the binary at its path: point the unit at the unpacked one,
    # and man at the unpacked pages (it checks Documentation=).
    unit = os.path.join(env.workdir, "corral.service")
    with open(unit, "w") as f:
        f.write(text.replace("/usr/sbin/corral", os.path.join(root, "usr/sbin/corral")))
    p = subprocess.run(["systemd-analyze", "verify", unit], capture_output=True, text=True,
                       timeout=60, stdin=subprocess.DEVNULL,
                       env=dict(os.environ, MANPATH=os.path.join(root, "usr/share/man")))
    expect_eq((p.returncode, (p.stdout + p.stderr).strip()), (0, ""),
              "systemd-analyze verify: exit status and complaints")
    # systemd's own score of the hardening: 0 is the best, 10 the worst.
    p = subprocess.run(["systemd-analyze", "security", "--offline=yes", "--no-pager", unit],
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    m = re.search(r"Overall exposure level for \S+: ([0-9.]+)", p.stdout)
    expect(m and float(m.group(1)) <= 2.0,
           f"systemd-analyze security: exposure at most 2.0:\n{tail(p.stdout + p.stderr)}")


@scenario(alone=True)
def make_run_and_make_deb_install_no_test_package(env):
    script = os.path.join(ROOT, "scripts", "install-deps")
    build = run([script, "--list"]).split()
    full = run([script, "--list", "test"]).split()
    test_only = {"chromium", "prometheus", "clang", "libclang-rt-14-dev", "valgrind", "systemd"}
    expect(not test_only & set(build), f"test packages among the build ones: {build}")
    expect(test_only <= set(full), f"'install-deps test' installs the tests' packages: {full}")
    readme = docs.doc("README.md")
    said = readme[readme.index("The tests' own packages"):]
    said = said[:said.index("\n\n")]
    expect_eq(sorted(p for p in set(full) - set(build) if f"`{p}`" not in said), [],
              "test packages the README's list leaves out")
    for target in ("all", "run", "install", "deb"):
        plan = make("-n", "-B", target)
        calls = re.findall(r"scripts/install-deps[^\n]*", plan)
        expect(all(c.strip() == "scripts/install-deps" for c in calls),
               f"make {target} calls install-deps only for the build packages: {calls}")
    for target in ("test", "fuzz", "test-valgrind"):
        expect("scripts/install-deps test" in make("-n", target),
               f"make {target} installs the tests' packages")


@scenario(timeout=600, alone=True)
def deb_built_twice_is_the_same_byte_for_byte(env):
    import hashlib
    import time
    first = deb_path()
    with open(first, "rb") as f:
        once = f.read()
    started = int(time.time())
    # The second build's files are made in a later second than the first's.
    wait_for(lambda: int(time.time()) > started, what="the clock to pass a second")
    with open(deb_path(), "rb") as f:
        again = f.read()
    expect_eq(hashlib.sha256(again).hexdigest(), hashlib.sha256(once).hexdigest(),
              "the .deb built twice (SOURCE_DATE_EPOCH: the changelog's date)")
    changed = run(["dpkg-parsechangelog", "-l", os.path.join(ROOT, "dist/debian/changelog"),
                   "-SDate"]).strip()
    day = time.strftime("%Y-%m-%d", time.gmtime(
        int(run(["date", "-d", changed, "+%s"]).strip())))
    listing = run(["dpkg-deb", "-c", first])
    dates = set(re.findall(r" (\d{4}-\d\d-\d\d) \d\d:\d\d ", listing))
    expect_eq(dates, {day}, f"every file's date is the changelog's:\n{listing}")


@scenario
def release_build_keeps_the_projects_warnings_after_the_distributions_flags(env):
    plan = make("-n", "-B", "build/release/common/util.o")
    line = next((l for l in plan.splitlines() if "-c common/util.c" in l), None)
    expect(line is not None, f"the release compile line:\n{plan}")
    formats = re.findall(r"\s(-Wformat(?:=\d)?)(?=\s)", line)
    expect(formats and formats[-1] == "-Wformat=2",
           f"-Wformat=2 is the last -Wformat flag (dpkg's -Wformat comes first): {line}")
    expect("-Werror " in line, f"warnings are errors: {line}")


def dpkg_root(root, *args):
    return run(["dpkg", f"--root={root}", "--force-script-chrootless", "--force-depends",
                "--force-not-root", *args])


@scenario(timeout=600, alone=True)
def deb_installs_into_a_scratch_root_keeps_an_edited_config_and_purges(env):
    deb = deb_path()
    listing = run(["dpkg-deb", "-c", deb])
    for path in ("./usr/sbin/corral", "./etc/corral/corral.conf", "./etc/logrotate.d/corral",
                 "./lib/systemd/system/corral.service", "./usr/share/man/man8/corral.8.gz",
                 "./usr/share/man/man5/corral.conf.5.gz",
                 "./usr/share/man/man7/corral-metrics.7.gz"):
        expect(re.search(r"root/root .* " + re.escape(path) + "$", listing, re.M),
               f"dpkg-deb -c lists {path} owned by root:\n{listing}")
    info = run(["dpkg-deb", "-I", deb])
    for want in ("Package: corral", "Depends: ", "libc6", "libevent-core-2.1-7",
                 "libevent-openssl-2.1-7", "libssl3", "libhiredis0.14",
                 "libcurl4", "libinih1", "libpq5", "zlib1g", "libbrotli1", "libzstd1",
                 "procps", "postinst", "prerm", "postrm", "conffiles"):
        expect(want in info, f"dpkg-deb -I shows {want!r}:\n{info}")
    control = os.path.join(env.workdir, "control")
    run(["dpkg-deb", "-e", deb, control])
    expect_eq(read_text(os.path.join(control, "conffiles")).split(),
              ["/etc/corral/corral.conf", "/etc/logrotate.d/corral"], "conffiles")
    for script in ("postinst", "prerm", "postrm"):
        path = os.path.join(control, script)
        run(["sh", "-n", path])
        expect("DPKG_ROOT" in read_text(path), f"{script} leaves other roots' services alone")

    root = os.path.join(env.workdir, "root")
    os.makedirs(os.path.join(root, "var/lib/dpkg/info"))
    os.makedirs(os.path.join(root, "var/lib/dpkg/updates"))
    for name in ("status", "available"):
        open(os.path.join(root, "var/lib/dpkg", name), "w").close()
    dpkg_root(root, "-i", deb)
    expect("Status: install ok installed" in dpkg_root(root, "-s", "corral"),
           "dpkg says corral is installed")
    conf = os.path.join(root, "etc/corral/corral.conf")
    expect_eq(env.run_corral("-t", "-c", conf).stdout.strip(), "configuration OK",
              "the packaged config")
    p = subprocess.run([os.path.join(root, "usr/sbin/corral"), "-V"], capture_output=True,
                       text=True, timeout=30)
    expect(p.returncode == 0 and p.stdout.startswith("corral "),
           f"the packaged binary runs: {p.stdout!r} {p.stderr!r}")

    with open(conf, "a") as f:
        f.write("; edited here\n")
    dpkg_root(root, "-i", deb)	# an upgrade (a reinstall) keeps it
    expect(read_text(conf).endswith("; edited here\n"), "the edited config survived")
    dpkg_root(root, "--purge", "corral")
    expect(not os.path.exists(conf), "a purge removes the config")
    expect(not os.path.exists(os.path.join(root, "usr/sbin/corral")), "and the binary")


# -- the Grafana dashboard --------------------------------------------------------------

DASHBOARD = os.path.join(ROOT, "docs", "grafana-dashboard.json")
# What Grafana fills in, as Prometheus would see it.
GRAFANA_VARS = {"$__rate_interval": "1m", "$job": ".*", "$route": ".*"}


def dashboard_queries(node):
    """Every PromQL query in the dashboard: panel targets and variables."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "expr" or (k == "query" and isinstance(v, str) and "(" in v):
                yield v
            else:
                yield from dashboard_queries(v)
    elif isinstance(node, list):
        for v in node:
            yield from dashboard_queries(v)


# A change feed whose server never answers: its section's metrics are
# there all the same (its instance leads it, and knows it is down).
UNREACHABLE_FEED = ("[changes t]\npostgres = host=127.0.0.1 port=1 dbname=x\n"
                    "publication = p\n")


def self_signed(env):
    """A certificate for localhost and its key, made with openssl."""
    cert = os.path.join(env.workdir, "tls.pem")
    key = os.path.join(env.workdir, "tls.key")
    p = subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:P-256", "-nodes", "-keyout", key, "-out", cert,
                        "-days", "30", "-subj", "/CN=localhost", "-addext",
                        "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                       capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    expect(p.returncode == 0, f"openssl req: {p.stderr}")
    os.chmod(key, 0o600)
    return cert, key


def every_feature_on(env, redis, origin, routes=None, extra=None):
    """A corral with every feature on: a tls listener beside the plain one
    and a [changes] section too; waits until it leads the section's
    feed."""
    cert, key = self_signed(env)
    plain = free_port()
    extra = dict(extra or {})
    extra["server"] = dict({"listen": f"127.0.0.1:{plain}, 127.0.0.1:{free_port()} tls",
                            "tls_certificate": cert, "tls_key": key},
                           **extra.get("server", {}))
    config = corral_config(redis, origin, plain, free_port(), routes, extra) + \
        UNREACHABLE_FEED
    corral = env.corral(config=config)
    wait_for(lambda: corral.stats()["changes"]["t"]["leader"], timeout=30,
             what="the instance leading its change feed")
    return corral


def exposed_series(text):
    """{series name: set of label names} from a /metrics exposition."""
    types, labels = {}, {}
    for line in text.splitlines():
        m = re.match(r"# TYPE (\S+) (\S+)", line)
        if m:
            types[m.group(1)] = m.group(2)
            continue
        m = re.match(r"([a-z_:][a-z0-9_:]*)(?:\{(.*)\})? ", line)
        if m and not line.startswith("#"):
            names = set(re.findall(r'([a-z_][a-z0-9_]*)="', m.group(2) or ""))
            labels.setdefault(m.group(1), set()).update(names)
    for name, kind in types.items():
        if kind == "histogram":
            for suffix in ("_bucket", "_sum", "_count"):
                labels.setdefault(name + suffix, set())
    return labels


@scenario
def grafana_dashboard_queries_only_metrics_that_metrics_exposes(env):
    with open(DASHBOARD) as f:
        dash = json.load(f)
    titles = " ".join(p["title"] for p in dash["panels"])
    for want in ("Cache-Status", "saved by coalescing", "Lock wait", "Refreshes", "Redis"):
        expect(want in titles, f"a panel about {want!r}: {titles}")
    queries = list(dashboard_queries(dash))
    expect(len(queries) >= 10, f"the dashboard's queries: {queries}")

    redis, origin = env.redis(), env.origin()
    corral = every_feature_on(env, redis, origin, routes={"/api/": {}})
    corral.get("/api/a")
    r = http_request(corral.admin_host, corral.admin_port, "/metrics",
                     {"Host": f"{corral.admin_host}:{corral.admin_port}"})
    expect_eq(r.status, 200, "GET /metrics")
    series = exposed_series(r.text)

    used = set()
    for q in queries:
        for name, matchers in re.findall(r"\b(corral_[a-z0-9_]+)(?:\{([^}]*)\})?", q):
            used.add(name)
            expect(name in series, f"{name} (in {q!r}) is not in /metrics")
            for label in re.findall(r"([a-z_]+)\s*=~?", matchers):
                expect(label == "job" or label in series[name],
                       f"{name} has no label {label!r} in /metrics (in {q!r})")
    for want in ("corral_requests_total", "corral_lock_wait_seconds_bucket",
                 "corral_refreshes_in_progress", "corral_redis_up",
                 "corral_upstream_requests_total", "corral_restart_pending",
                 "corral_redis_full", "corral_changes_lag_bytes"):
        expect(want in used, f"the dashboard uses {want}")

    # promtool parses each query as a recording rule.
    rules = os.path.join(env.workdir, "rules.yml")
    with open(rules, "w") as f:
        f.write("groups:\n  - name: dashboard\n    rules:\n")
        for i, q in enumerate(queries):
            for var, value in GRAFANA_VARS.items():
                q = q.replace(var, value)
            # A variable's label_values(SELECTOR, LABEL) is Grafana's: SELECTOR.
            q = re.sub(r"^label_values\((.*),\s*\w+\)$", r"\1", q)
            f.write(f"      - record: dashboard:query{i}\n        expr: {json.dumps(q)}\n")
    promtool = shutil.which("promtool")
    expect(promtool is not None, "promtool not found: scripts/install-deps test installs it")
    run([promtool, "check", "rules", rules])


# -- systemd notifications ---------------------------------------------------------------

class NotifySocket:
    """The service manager's end of NOTIFY_SOCKET: a datagram socket that
    records each message with the sender's pid (SO_PASSCRED)."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="cn-", dir="/tmp")	# sun_path is short
        self.path = os.path.join(self.dir, "notify")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
        self.sock.bind(self.path)
        self.sock.setblocking(False)
        self.messages = []	# (pid, {key: value})

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.sock.close()
        shutil.rmtree(self.dir, ignore_errors=True)
        return False

    def read(self):
        creds = struct.calcsize("3i")
        while True:
            try:
                data, anc, _, _ = self.sock.recvmsg(4096, socket.CMSG_SPACE(creds))
            except BlockingIOError:
                return self.messages
            pid = None
            for level, kind, payload in anc:
                if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
                    pid = struct.unpack("3i", payload[:creds])[0]
            fields = dict(line.split("=", 1) for line in data.decode().splitlines() if line)
            self.messages.append((pid, fields))

    def wait(self, key, value=None, after=0, what=None):
        """Waits for a message from index after on that has key (=value);
        returns (its index, its fields)."""
        found = []

        def seen():
            for i, (_, m) in enumerate(self.read()[after:], after):
                if key in m and (value is None or m[key] == value):
                    found.append((i, m))
                    return True
            return False
        wait_for(seen, what=what or f"{key}={value} on NOTIFY_SOCKET after message {after}")
        return found[0]


def notify_env(sock, **more):
    """Sets what systemd would set for corral; the scenario's own process only."""
    os.environ["NOTIFY_SOCKET"] = sock.path
    os.environ.update(more)


@scenario
def notify_socket_hears_ready_status_watchdog_reload_and_stopping(env):
    with NotifySocket() as sock:
        notify_env(sock, WATCHDOG_USEC="300000")
        redis, origin = env.redis(), env.origin()
        corral = env.corral(redis, origin)
        i, ready = sock.wait("READY", "1")
        expect(ready.get("STATUS", "").startswith(f"listening on 127.0.0.1:{corral.port}, "
                                                  "redis up, 1/1 workers ready"),
               f"READY=1 comes with a one-line summary: {ready}")
        expect_eq({pid for pid, _ in sock.messages}, {corral.proc.pid}, "senders")
        # Twice a watchdog interval of 300 ms: at least one more WATCHDOG=1.
        j, _ = sock.wait("WATCHDOG", "1", after=i + 1)
        sock.wait("WATCHDOG", "1", after=j + 1)

        corral.get("/a")
        corral.get("/a")
        corral.proc.send_signal(signal.SIGHUP)
        k, reloading = sock.wait("RELOADING", "1", after=i + 1)
        expect(int(reloading.get("MONOTONIC_USEC", "0")) > 0, f"MONOTONIC_USEC: {reloading}")
        _, again = sock.wait("READY", "1", after=k + 1, what="READY=1 after the reload")
        expect("2 requests, 50% from the cache" in again["STATUS"],
               f"the summary counts requests: {again}")
        before = len(sock.read())
        corral.stop()
        _, stopping = sock.wait("STOPPING", "1", after=before)
        # shutdown_timeout (10 s) and 5 s: a longer stop than the unit's
        # TimeoutStopSec= is asked for, not cut short.
        expect_eq(stopping.get("EXTEND_TIMEOUT_USEC"), str(15 * 1000 * 1000),
                  f"EXTEND_TIMEOUT_USEC with STOPPING=1: {stopping}")


@scenario
def notify_ready_without_redis_after_the_redis_timeout(env):
    with NotifySocket() as sock:
        notify_env(sock)
        origin = env.origin()
        corral = env.corral(f"127.0.0.1:{free_port()}", origin, wait_redis=False)
        _, ready = sock.wait("READY", "1")
        expect("redis down" in ready["STATUS"], f"READY=1 says Redis is down: {ready}")
        expect("ready without Redis" in corral.log(), "and the log says so")
        expect_eq(corral.get("/x").status, 200, "it serves, uncached")


@scenario
def notify_ready_comes_from_the_master_once_every_worker_is_ready(env):
    with NotifySocket() as sock:
        notify_env(sock)
        redis, origin = env.redis(), env.origin()
        corral = env.corral(redis, origin, extra={"server": {"workers": "2"}})
        i, ready = sock.wait("READY", "1")
        expect("redis up, 2/2 workers ready" in ready["STATUS"], f"READY=1: {ready}")
        expect_eq({pid for pid, _ in sock.messages}, {corral.proc.pid},
                  "every message comes from the master (NotifyAccess=main)")
        corral.proc.send_signal(signal.SIGHUP)
        k, _ = sock.wait("RELOADING", "1", after=i + 1)
        sock.wait("READY", "1", after=k + 1)
        before = len(sock.read())
        corral.stop()
        sock.wait("STOPPING", "1", after=before)
        expect_eq({pid for pid, _ in sock.read()}, {corral.proc.pid}, "senders, to the end")


# -- one table of keys: corral -h, corral.conf(5) and the configuration guide ------------

def keys_from_help(text):
    """{(section, key): default} from corral -h."""
    out, started = {}, False
    for line in text.splitlines():
        if line.startswith("SECTION"):
            started = True
            continue
        if started and line.strip():
            key, default = line[16:].split()[:2]
            out[(line[:15].strip(), key)] = default
    return out


def keys_from_man(text):
    out, section = {}, None
    text = text.replace("\\-", "-").replace("\\:", "").replace("\\e", "\\")
    for m in re.finditer(r'^\.SS "([^"]+)"$|^\.B (\S+)\ndefault \\fB(.*?)\\fR', text, re.M):
        if m.group(1):
            section = m.group(1)
        elif section:
            out[(section, m.group(2))] = m.group(3)
    return out


@scenario(timeout=600, alone=True)
def corral_h_the_manual_page_and_the_guide_agree_on_every_key(env):
    make("man")
    help_text = env.run_corral("-h").stdout
    from_help = keys_from_help(help_text)
    expect(len(from_help) >= 30, f"corral -h lists the keys:\n{help_text}")
    readme = docs.doc("README.md")
    man5 = read_text(os.path.join(ROOT, "build", "man", "corral.conf.5"))
    man8 = read_text(os.path.join(ROOT, "build", "man", "corral.8"))
    found = keys_from_man(man5)
    missing = sorted(set(from_help) - set(found))
    extra = sorted(set(found) - set(from_help))
    expect(not missing and not extra,
           f"corral.conf(5): keys missing {missing}, keys corral -h does not know {extra}")
    wrong = {k: (found[k], v) for k, v in from_help.items() if found[k] != v}
    expect(not wrong, f"corral.conf(5): defaults that differ from corral -h (its, -h's): {wrong}")
    # The guide by task names every key in its section (the defaults are
    # the manual page's alone).
    guide = docs.guide_keys()
    expect_eq((sorted(set(from_help) - guide), sorted(guide - set(from_help))), ([], []),
              f"{docs.OPERATIONS}'s Configuration: keys it lacks, and keys -h does not know")

    # Every option of the usage, in corral(8) and in the README's quick start.
    options = set(re.findall(r"^\s+-([a-zA-Z])\s", help_text, re.M))
    expect_eq(options, set("ctsVh"), "corral -h's options")
    for opt in options:
        expect(re.search(r"^\.BI? \\-" + opt + r"\b", man8, re.M),
               f"corral(8) describes -{opt}")
        expect(re.search(r"corral[^\n]* -" + opt + r"\b", readme), f"the README shows -{opt}")
    for section in ("SYNOPSIS", "OPTIONS", "SIGNALS", "ADMIN API", "CACHE\\-STATUS",
                    "WORKERS", "REDIS MEMORY", "FAILURE MODES", "SYSTEMD", "FILES"):
        expect(f".SH {section}" in man8, f"corral(8) has {section}")
    p = subprocess.run(["groff", "-man", "-ww", "-z", os.path.join(ROOT, "build/man/corral.8"),
                        os.path.join(ROOT, "build/man/corral.conf.5"),
                        os.path.join(ROOT, "build/man/corral-metrics.7")],
                       capture_output=True, text=True, timeout=60)
    expect_eq((p.returncode, p.stderr.strip()), (0, ""), "groff warnings in the manual pages")


# -- the operator's reference: corral(8) and corral-metrics(7) -------------------------

def man_section(text, name):
    """The text of one .SH section of a manual page."""
    m = re.search(r"^\.SH " + re.escape(name) + r"\n(.*?)(?=^\.SH |\Z)", text, re.M | re.S)
    expect(m is not None, f"a section {name}")
    return m.group(1)


@scenario(timeout=600, alone=True)
def the_manual_pages_document_every_metric_counter_cache_status_and_endpoint(env):
    make("man")
    man8 = read_text(os.path.join(ROOT, "build", "man", "corral.8"))
    man7 = read_text(os.path.join(ROOT, "build", "man", "corral-metrics.7"))
    ops = docs.doc(docs.OPERATIONS)

    # Every family /metrics exposes (every feature on), in the metrics
    # table of docs/operations.md (which corral-metrics(7) is made from)
    # and in corral-metrics(7); and nothing they list that it does not.
    redis, origin = env.redis(), env.origin()
    corral = every_feature_on(env, redis, origin, routes={"/api/": {}}, extra={
        "upstream": {"max_requests": "4", "health_path": "/"}})
    corral.get("/api/a")
    r = http_request(corral.admin_host, corral.admin_port, "/metrics",
                     {"Host": f"{corral.admin_host}:{corral.admin_port}"})
    families = set(re.findall(r"^# TYPE (\S+) ", r.text, re.M))
    documented = set(docs.table_names(ops, "| metric | type | labels | meaning |"))
    expect_eq(sorted(families - documented), [],
              f"families /metrics has and {docs.OPERATIONS} lacks")
    expect_eq(sorted(documented - families), [],
              f"families {docs.OPERATIONS} lists and /metrics lacks")
    metrics = man_section(man7, "PROMETHEUS METRICS")
    expect_eq(sorted(f for f in families if f"\\fB{f}\\fR" not in metrics), [],
              "families corral-metrics(7) lacks")
    counters = [k for k, v in corral.stats()["total"].items() if isinstance(v, int)]
    expect(len(counters) > 40, f"the /stats counters: {counters}")
    listed = set(re.findall(r"^\.B (\S+)$", man_section(man7, "COUNTERS"), re.M))
    expect_eq(sorted(set(counters) - listed), [], "/stats counters corral-metrics(7) lacks")

    # Every Cache-Status detail the code can write, in corral(8).
    status = man_section(man8, "CACHE\\-STATUS").replace("\\-", "-")
    details = docs.cache_status_details()
    expect({"redis-full", "lock-lost", "no-store", "cache-unavailable"} <= details,
           f"the details found in the code: {details}")
    expect_eq(sorted(d for d in details if d not in status), [],
              "Cache-Status details corral(8) lacks")

    # Every path the admin listener answers, in corral(8)'s ADMIN API.
    paths = set(re.findall(r'strcmp\(path, "(/[a-z.]*)"\)',
                           read_text(os.path.join(ROOT, "proxy", "proxy_admin.c"))))
    expect(len(paths) >= 10, f"the admin paths: {paths}")
    api = man_section(man8, "ADMIN API").replace("\\-", "-")
    expect_eq(sorted(p for p in paths if not re.search(re.escape(p) + r"(?![a-z.])", api)),
              [], "admin paths corral(8) lacks")
    faults = man_section(man8, "FAILURE MODES")
    for fault in ("Redis full", "is in use", "A worker dies"):
        expect(fault in faults, f"corral(8)'s failure modes name {fault!r}")


@scenario
def master_stops_the_watchdog_while_a_worker_hangs(env):
    with NotifySocket() as sock:
        notify_env(sock, WATCHDOG_USEC="500000")
        redis, origin = env.redis(), env.origin()
        corral = env.corral(redis, origin, extra={"server": {"workers": "2"}})
        sock.wait("READY", "1")
        sock.wait("WATCHDOG", "1")
        pid = int(re.search(r"worker 1 started, pid (\d+)", corral.log()).group(1))
        os.kill(pid, signal.SIGSTOP)	# its loop no longer runs
        try:
            wait_for(lambda: sock.read() and f"(pid {pid}) has not run its loop" in corral.log(),
                     what="the master to notice the stopped worker")
            stalled = len(sock.read())
            # Three more ticks of the master (each sends STATUS=), none with
            # WATCHDOG=1.
            wait_for(lambda: sum("STATUS" in m for _, m in sock.read()[stalled:]) >= 3,
                     what="three STATUS= messages while the worker is stopped")
            quiet = [m for _, m in sock.read()[stalled:]]
            expect(all("WATCHDOG" not in m for m in quiet),
                   f"no WATCHDOG=1 while the worker is stopped: {quiet}")
        finally:
            os.kill(pid, signal.SIGCONT)
        wait_for(lambda: sock.read() and "every worker runs again" in corral.log(),
                 what="the master to see it run again")
        sock.wait("WATCHDOG", "1", after=stalled + len(quiet), what="WATCHDOG=1 again")
