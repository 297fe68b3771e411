# SPDX-License-Identifier: MIT
"""Redis credentials: an ACL user whose password is in a file (read at start
and on SIGHUP, or named as a systemd credential), a refused password (said
once, /health says why, requests answered from the origin, protection back
once the file is fixed and reloaded), a password rotated in Redis and in the
file, sentinels that want a password, Redis over a TLS tunnel (stunnel in
client mode), and the configuration errors. No secret ever shows in a log,
/stats, /health or /metrics."""

import os
import re
import shutil
import signal
import subprocess

from harness import (RedisServer, RespClient, corral_config, entry_key, expect, expect_eq,
                     free_port, read_text, scenario, stampede, tail, wait_for)
from harness.cluster import MASTER_NAME, RedisProcess, expect_all_ok
from harness.redis import find_redis_server
from harness.resp import _decode

ADMIN = ("admin", "adm1n-Zq8-never-logged")	# the test's own client
ACL_USER = "corral"
PW = "pw-Kx7-first-secret"
PW2 = "pw-Rt3-rotated-secret"
WRONG = "pw-Wr0ng-guess-secret"
SENTINEL_USER = "watcher"
SENTINEL_PW = "spw-Jh5-watcher-secret"
SENTINEL_DEFAULT_PW = "spw-Dq2-default-secret"
SECRETS = (ADMIN[1], PW, PW2, WRONG, SENTINEL_PW, SENTINEL_DEFAULT_PW)

RELOADED = re.compile(r"reload: (\S+ loaded, \d+ routes?|\d+ errors?; keeping the running "
                      r"configuration)")


class AclRedis(RedisServer):
    """A redis-server whose default user is off: ACL_USER (password PW)
    for corral, ADMIN for the test."""

    auth = ADMIN

    def argv(self, binary):
        return super().argv(binary) + [
            "--user", ADMIN[0], "on", f">{ADMIN[1]}", "~*", "&*", "+@all",
            "--user", ACL_USER, "on", f">{PW}", "~*", "&*", "+@all",
            "--user", "default", "off"]


def acl_redis(env):
    return env.track(AclRedis(env.workdir, env.name("redis")))


def secret_file(directory, name, text, mode=0o600):
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, mode)
    return path


def expect_no_secret(corral):
    """No secret in the log, /stats, /health or /metrics."""
    texts = {"its log": corral.log()}
    for target in ("/stats", "/health", "/metrics"):
        texts[target] = corral.admin("GET", target).text
    for where, text in texts.items():
        for secret in SECRETS:
            expect(secret not in text, f"{corral.name}: a password ({secret[:7]}...) "
                                       f"shows in {where}")


def reload(corral):
    """SIGHUP, and wait until the reload is over (loaded or refused)."""
    n = len(RELOADED.findall(corral.log()))
    corral.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: len(RELOADED.findall(corral.log())) > n, what=f"{corral.name} to reload")


def edit_config(corral, old, new):
    text = read_text(corral.config_path)
    expect(old in text, f"{old!r} in {corral.name}'s configuration")
    with open(corral.config_path, "w") as f:
        f.write(text.replace(old, new))


def clients(server, **match):
    """CLIENT LIST lines of server (as dicts) whose fields match."""
    found = []
    for line in server.cmd("CLIENT", "LIST").splitlines():
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        if all(fields.get(k) == v for k, v in match.items()):
            found.append(fields)
    return found


def said(corral, text):
    """The log lines of corral that contain text."""
    return [line for line in corral.log().splitlines() if text in line]


def up(corral):
    return corral.stats()["redis"]["up"] is True


# -- an ACL user, its password in a file -----------------------------------------------

@scenario
def acl_user_with_password_file_or_credential_caches_once_for_the_fleet(env):
    redis, origin = acl_redis(env), env.origin(delay="300ms")
    creds = os.path.join(env.workdir, "credentials")
    os.makedirs(creds, mode=0o700)
    path = secret_file(creds, "redis-password", PW + "\n")
    systemd = {"CREDENTIALS_DIRECTORY": creds}
    fleet = [
        env.corral(redis, origin, extra={"redis": {"username": ACL_USER,
                                                   "password_file": path}}),
        # a systemd credential, by its name, and as systemd's manual writes it
        env.corral(redis, origin, extra={"redis": {"username": ACL_USER,
                                                   "password_file": "redis-password"}},
                   env=systemd),
        env.corral(redis, origin, extra={"redis": {
            "username": ACL_USER, "password_file": "$CREDENTIALS_DIRECTORY/redis-password"}},
            env=systemd),
    ]
    env.wait_subscribed(redis, 3)
    expect_all_ok(stampede(fleet, 60, "/acl"), "a cold stampede across three instances")
    expect_eq(origin.count("/acl"), 1, "origin fetches for a cold stampede of 60 across three")
    expect(redis.exists(entry_key("/acl")), "the entry is in Redis")
    users = {c["user"] for c in clients(redis) if c["user"] != ADMIN[0]}
    expect_eq(users, {ACL_USER}, "the user every corral connection is authenticated as")
    for c in fleet:
        expect_eq(c.stats()["redis"]["auth_failures"], 0, f"{c.name}: auth failures")
        expect_no_secret(c)


@scenario
def password_for_a_redis_that_wants_none_is_only_a_warning(env):
    redis, origin = env.redis(), env.origin(delay="300ms")
    path = secret_file(env.workdir, "redis-password", PW + "\n")
    fleet = [env.corral(redis, origin, extra={"redis": {"password_file": path}})
             for _ in range(2)]
    env.wait_subscribed(redis, 2)	# the subscriber connections too
    expect_all_ok(stampede(fleet, 40, "/nopass"), "a cold stampede")
    expect_eq(origin.count("/nopass"), 1, "origin fetches for a cold stampede across two")
    for c in fleet:
        expect(said(c, "a password is configured but Redis asks for none"),
               f"{c.name} warns of the unneeded password")
        expect_no_secret(c)


# -- a refused password ----------------------------------------------------------------

@scenario(timeout=180)
def wrong_password_said_once_served_from_origin_and_back_after_reload(env):
    redis, origin = acl_redis(env), env.origin(delay="300ms")
    path = secret_file(env.workdir, "redis-password", WRONG + "\n")
    # One with the password inline (the default user: off), one with a file.
    inline = env.corral(redis, origin, extra={"redis": {"password": WRONG}}, wait_redis=False)
    expect_refused(inline)
    filed = env.corral(redis, origin, extra={"redis": {"username": ACL_USER,
                                                       "password_file": path}},
                       wait_redis=False)
    expect_refused(filed)
    fleet = [inline, filed]
    for i, c in enumerate(fleet):
        r = c.get(f"/down{i}")
        expect_eq((r.status, r.cache_status.detail), (200, "cache-unavailable"),
                  f"{c.name}: answered from the origin while Redis refuses it")

    # Fixed: the file (and the inline one in its configuration), then SIGHUP.
    secret_file(env.workdir, "redis-password", PW + "\n")
    edit_config(inline, f"password = {WRONG}", f"username = {ACL_USER}\npassword = {PW}")
    for c in fleet:
        reload(c)
    wait_for(lambda: all(up(c) for c in fleet), timeout=15,
             what="both instances up once the password is fixed and reloaded")
    env.wait_subscribed(redis, 2)
    expect_all_ok(stampede(fleet, 40, "/after"), "a cold stampede after the fix")
    expect_eq(origin.count("/after"), 1, "origin fetches for a cold stampede after the fix")
    for c in fleet:
        expect_eq(c.stats()["redis"]["down_reason"], "", f"{c.name}: down_reason once up")
        expect_no_secret(c)


def expect_refused(c):
    """c's Redis refuses its password: said once however often it is
    refused, down, and why, in /stats and /health (still 200)."""
    wait_for(lambda: c.stats()["redis"]["auth_failures"] >= 4, timeout=30,
             what=f"four refused connects in {c.name}")
    st = c.stats()["redis"]
    errors = said(c, "WRONGPASS")
    expect_eq(len(errors), 1, f"{c.name}: log lines about the refusal after "
                              f"{st['auth_failures']} refused connects: {errors}")
    expect(re.search(r"\berror\b.*auth failed", errors[0], re.I) is not None,
           f"{c.name}: the refusal is logged as an error: {errors[0]!r}")
    expect_eq(st["up"], False, f"{c.name}: /stats redis.up")
    expect(st["down_reason"].startswith("auth failed: WRONGPASS"),
           f"{c.name}: /stats redis.down_reason says why: {st['down_reason']!r}")
    health = c.admin("GET", "/health")
    expect_eq(health.status, 200, f"{c.name}: /health status (degraded, not dead)")
    expect("redis=down (auth failed: WRONGPASS" in health.text,
           f"{c.name}: /health says why: {health.text!r}")


@scenario(timeout=180)
def rotated_password_in_redis_and_file_keeps_working_after_reload(env):
    redis, origin = acl_redis(env), env.origin(delay="300ms")
    path = secret_file(env.workdir, "redis-password", PW + "\n")
    extra = {"redis": {"username": ACL_USER, "password_file": path}}
    fleet = [env.corral(redis, origin, extra=extra) for _ in range(2)]
    env.wait_subscribed(redis, 2)
    expect_all_ok(stampede(fleet, 40, "/before"), "a cold stampede before the rotation")
    expect_eq(origin.count("/before"), 1, "origin fetches before the rotation")

    # The usual rotation: Redis takes both, the file gets the new one and
    # is reloaded, the old one goes. Connections made after it (all of
    # them, once killed) must use the new one.
    redis.cmd("ACL", "SETUSER", ACL_USER, f">{PW2}")
    secret_file(env.workdir, "redis-password", PW2 + "\n")
    for c in fleet:
        reload(c)
    redis.cmd("ACL", "SETUSER", ACL_USER, f"<{PW}")
    connects = [c.stats()["redis"]["connects"] for c in fleet]
    killed = redis.cmd("CLIENT", "KILL", "USER", ACL_USER)
    expect(killed >= 4, f"corral's connections killed: {killed}")
    wait_for(lambda: all(c.stats()["redis"]["connects"] > n and up(c)
                         for c, n in zip(fleet, connects)),
             timeout=15, what="both instances connected again after the rotation")
    env.wait_subscribed(redis, 2)
    for c in fleet:
        expect_eq(c.stats()["redis"]["auth_failures"], 0,
                  f"{c.name}: auth failures (the new password is used at once)")
    expect_all_ok(stampede(fleet, 40, "/rotated"), "a cold stampede after the rotation")
    expect_eq(origin.count("/rotated"), 1, "origin fetches after the rotation")

    # A file others may read is refused on reload; the running password stays.
    os.chmod(path, 0o644)
    reload(fleet[0])
    expect(said(fleet[0], f"password_file: {path} may be read or written by others"),
           "the reload says the file is readable by others")
    expect(said(fleet[0], "keeping the running configuration"), "the reload is refused")
    expect(up(fleet[0]), "still up with the running password")
    for c in fleet:
        expect_no_secret(c)


# -- sentinels that want a password ----------------------------------------------------

class AuthSentinel(RedisProcess):
    """A sentinel that wants a password: SENTINEL_DEFAULT_PW for the
    default user, SENTINEL_PW for SENTINEL_USER."""

    auth = ("default", SENTINEL_DEFAULT_PW)


def auth_sentinel(env, primary):
    conf = "\n".join([
        "port {port}", "bind 127.0.0.1", "dir {dir}",
        f"sentinel monitor {MASTER_NAME} 127.0.0.1 {primary.port} 1",
        f"sentinel auth-user {MASTER_NAME} {ACL_USER}",
        f"sentinel auth-pass {MASTER_NAME} {PW}",
        f"requirepass {SENTINEL_DEFAULT_PW}",
        f"user {SENTINEL_USER} on >{SENTINEL_PW} ~* &* +@all", ""])
    s = env.track(AuthSentinel(env.workdir, env.name("sentinel"), [], config_text=conf))
    wait_for(lambda: s.cmd("SENTINEL", "get-master-addr-by-name", MASTER_NAME) ==
             ["127.0.0.1", str(primary.port)], what="the sentinel to name the primary")
    return s


@scenario(timeout=180)
def sentinel_requiring_auth_is_asked_and_listened_to_with_credentials(env):
    primary, origin = acl_redis(env), env.origin(delay="300ms")
    sentinel = auth_sentinel(env, primary)
    path = secret_file(env.workdir, "redis-password", PW + "\n")
    spath = secret_file(env.workdir, "sentinel-password", SENTINEL_PW + "\n")
    base = {"mode": "sentinel", "address": sentinel.address, "master_name": MASTER_NAME,
            "timeout": "1s", "username": ACL_USER, "password_file": path}
    fleet = [
        env.corral(sentinel.address, origin, wait_redis=True, extra={"redis": dict(
            base, sentinel_username=SENTINEL_USER, sentinel_password_file=spath)}),
        env.corral(sentinel.address, origin, wait_redis=True, extra={"redis": dict(
            base, sentinel_password=SENTINEL_DEFAULT_PW)}),
    ]
    env.wait_subscribed(primary, 2)
    expect_all_ok(stampede(fleet, 40, "/s"), "a cold stampede through the sentinel")
    expect_eq(origin.count("/s"), 1, "origin fetches for a cold stampede through the sentinel")
    # Each listens to +switch-master, as the user it was given.
    wait_for(lambda: len(clients(sentinel, user=SENTINEL_USER, sub="1")) == 1 and
             len(clients(sentinel, user="default", sub="1")) == 1,
             what="a +switch-master feed as each sentinel user")

    # A wrong sentinel password: down, and why; served from the origin.
    wrong = env.corral(sentinel.address, origin, wait_redis=False, extra={"redis": dict(
        base, sentinel_username=SENTINEL_USER, sentinel_password=WRONG)})
    wait_for(lambda: wrong.stats()["redis"]["auth_failures"] >= 3, timeout=30,
             what="three refused questions to the sentinel")
    reason = wrong.stats()["redis"]["down_reason"]
    expect(reason.startswith("sentinel auth failed: WRONGPASS"),
           f"/stats redis.down_reason says why: {reason!r}")
    expect("redis=down (sentinel auth failed: WRONGPASS" in wrong.admin("GET", "/health").text,
           "/health says why")
    expect_eq(len(said(wrong, "sentinel auth failed")), 1,
              "error lines about the refused sentinel password")
    r = wrong.get("/w")
    expect_eq((r.status, r.cache_status.detail), (200, "cache-unavailable"),
              "answered from the origin while the sentinel refuses")
    edit_config(wrong, f"sentinel_password = {WRONG}", f"sentinel_password = {SENTINEL_PW}")
    reload(wrong)
    wait_for(lambda: up(wrong), timeout=15, what="up once the sentinel password is fixed")
    wait_for(lambda: len(clients(sentinel, user=SENTINEL_USER, sub="1")) == 2,
             timeout=15, what="its feed listening once the password is fixed")
    for c in fleet + [wrong]:
        expect_no_secret(c)


# -- TLS through a local tunnel --------------------------------------------------------

class TlsTunnel:
    """A redis-server that speaks only TLS (--port 0 --tls-port), with a
    throwaway certificate, and stunnel in client mode in front of it: the
    plain address corral is given is stunnel's."""

    def __init__(self, workdir, name):
        self.name, self.host = name, "127.0.0.1"
        self.dir = os.path.join(workdir, name)
        os.makedirs(self.dir)
        self.cert, self.key = (os.path.join(self.dir, f) for f in ("cert.pem", "key.pem"))
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                        "-days", "1", "-subj", "/CN=localhost", "-keyout", self.key,
                        "-out", self.cert, "-addext", "subjectAltName=DNS:localhost"],
                       check=True, capture_output=True, timeout=60)
        self.procs, self.supported = [], True
        self.tls_port, self.port = free_port(), free_port()
        self.address = f"{self.host}:{self.port}"
        self.client = RespClient(self.host, self.port, auth=("default", PW))
        self.redis_log = os.path.join(self.dir, "redis.log")
        self.start_redis()
        if self.supported:
            self.start_stunnel()

    def spawn(self, argv, log):
        with open(log, "ab") as out:
            self.procs.append(subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                               stdin=subprocess.DEVNULL, cwd=self.dir))
        return self.procs[-1]

    def start_redis(self):
        proc = self.spawn([find_redis_server(), "--port", "0", "--tls-port", str(self.tls_port),
                           "--bind", self.host, "--tls-cert-file", self.cert,
                           "--tls-key-file", self.key, "--tls-ca-cert-file", self.cert,
                           "--tls-auth-clients", "no", "--requirepass", PW, "--save", "",
                           "--appendonly", "no", "--dir", self.dir], self.redis_log)

        def listening():
            if proc.poll() is not None:
                return "exited"
            return f":{self.tls_port}" in read_text(self.redis_log) or \
                "Ready to accept" in read_text(self.redis_log)
        wait_for(listening, what="redis-server with --tls-port to start")
        if proc.poll() is not None:
            self.supported = False	# built without TLS: the caller says so

    def start_stunnel(self):
        binary = shutil.which("stunnel4") or shutil.which("stunnel")
        expect(binary is not None, "stunnel4 not found: scripts/install-deps test installs "
                                   "it (Debian package stunnel4)")
        conf = os.path.join(self.dir, "stunnel.conf")
        with open(conf, "w") as f:
            f.write("foreground = yes\npid =\n\n[redis]\nclient = yes\n"
                    f"accept = {self.host}:{self.port}\n"
                    f"connect = {self.host}:{self.tls_port}\n"
                    f"CAfile = {self.cert}\nverifyChain = yes\ncheckHost = localhost\n")
        proc = self.spawn([binary, conf], os.path.join(self.dir, "stunnel.log"))

        def pong():
            if proc.poll() is not None:
                raise AssertionError(f"stunnel exited: {tail(read_text(self.dir + '/stunnel.log'))}")
            try:
                return self.client.command("PING") == b"PONG"
            except OSError:
                self.client.close()
                return False
        wait_for(pong, what="PING through the TLS tunnel")

    def cmd(self, *args):
        return _decode(self.client.command(*args))

    subscribers = RedisServer.subscribers

    def stop(self):
        self.client.close()
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()


@scenario(timeout=180)
def redis_over_a_stunnel_tls_tunnel_caches_and_locks(env):
    tunnel = env.track(TlsTunnel(env.workdir, env.name("tls")))
    if not tunnel.supported:
        print(f"SKIP: this redis-server has no TLS (--tls-port): "
              f"{tail(read_text(tunnel.redis_log))}")
        return
    origin = env.origin(delay="300ms")
    path = secret_file(env.workdir, "redis-password", PW + "\n")
    fleet = [env.corral(tunnel.address, origin, wait_redis=True,
                        extra={"redis": {"password_file": path}}) for _ in range(2)]
    env.wait_subscribed(tunnel, 2)
    expect_all_ok(stampede(fleet, 60, "/tls"), "a cold stampede through the tunnel")
    expect_eq(origin.count("/tls"), 1, "origin fetches for a cold stampede of 60 across two")
    expect_eq(tunnel.cmd("EXISTS", entry_key("/tls")), 1, "the entry is in the TLS-only Redis")
    # A new instance has nothing in memory: its hit comes through the tunnel.
    late = env.corral(tunnel.address, origin, wait_redis=True,
                      extra={"redis": {"password_file": path}})
    r = late.get("/tls")
    expect_eq((r.status, r.cache_status.hit), (200, True),
              f"a new instance's first answer is a hit: {r.cache_status.raw!r}")
    expect_eq(origin.count("/tls"), 1, "origin fetches after the new instance's request")
    for c in fleet + [late]:
        expect_no_secret(c)


# -- configuration errors --------------------------------------------------------------

@scenario
def password_file_errors_name_the_file_and_line_never_the_secret(env):
    os.environ.pop("CREDENTIALS_DIRECTORY", None)
    good = secret_file(env.workdir, "good", PW + "\n")
    world = secret_file(env.workdir, "world", PW + "\n", mode=0o644)
    empty = secret_file(env.workdir, "empty", "")
    lines = secret_file(env.workdir, "two-lines", PW + "\n" + PW2 + "\n")
    missing = os.path.join(env.workdir, "missing")
    cases = [
        ({"password_file": missing}, "password_file",
         f"password_file: cannot open {missing}: No such file or directory"),
        ({"password_file": world}, "password_file",
         f"password_file: {world} may be read or written by others (mode 0644)"),
        ({"password_file": env.workdir}, "password_file",
         f"password_file: {env.workdir} is not a regular file"),
        ({"password_file": empty}, "password_file", f"password_file: {empty} is empty"),
        ({"password_file": lines}, "password_file",
         f"password_file: {lines} holds more than one line"),
        ({"password": PW, "password_file": good}, "password_file",
         "password_file: password is set too (line "),
        ({"username": ACL_USER}, "username", "username: needs password or password_file"),
        ({"sentinel_password_file": good}, "sentinel_password_file",
         "sentinel_password_file: only with mode = sentinel"),
        ({"password_file": "redis-password"}, "password_file",
         "password_file: redis-password is a credential name but $CREDENTIALS_DIRECTORY "
         "is not set"),
    ]
    for extra, key, want in cases:
        text = corral_config("127.0.0.1:6379", "http://127.0.0.1:9", free_port(), free_port(),
                             extra={"redis": extra})
        line = next(i + 1 for i, l in enumerate(text.splitlines())
                    if l.startswith(f"{key} = "))
        conf = env.config_file(text, "bad.conf")
        p = env.run_corral("-t", "-c", conf)
        out = p.stdout + p.stderr
        expect(p.returncode != 0, f"corral -t exits non-zero for {extra}")
        expect(f"{conf}:{line}: {want}" in out, f"{extra}: says {conf}:{line}: {want}...; "
                                                f"said:\n{out}")
        for secret in SECRETS:
            expect(secret not in out, f"{extra}: a password shows in the error")
    text = corral_config("127.0.0.1:6379", "http://127.0.0.1:9", free_port(), free_port(),
                         extra={"redis": {"username": ACL_USER, "password_file": good}})
    p = env.run_corral("-t", "-c", env.config_file(text, "good.conf"))
    expect_eq((p.returncode, PW in p.stdout + p.stderr), (0, False),
              f"a good password file passes corral -t: {p.stdout + p.stderr}")
