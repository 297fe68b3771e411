# SPDX-License-Identifier: MIT
"""HTTPS on a listener of Corral's own (listen = ... tls): real clients
(Python's ssl, openssl s_client, curl) against certificates made here with
openssl: the handshake, ALPN, SNI, TLS 1.2 and 1.3 and nothing older, a
client that stalls mid-handshake, plain HTTP sent to the TLS port, a reload
with a new certificate while connections are open, and the certificates
refused with their reason (corral -t, the start, a reload).
"""

import os
import signal
import socket
import ssl
import subprocess

from harness import (corral_config, expect, expect_eq, free_port, scenario, slow,
                     wait_for)
from origin import sized_body

HOSTNAME = "localhost"


def openssl(*args, cwd):
    p = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=60)
    expect(p.returncode == 0, f"openssl {' '.join(args)}: {p.stderr}")
    return p.stdout


def make_ca(d):
    """A certificate authority in d (ca.pem, ca.key)."""
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256",
            "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "30",
            "-subj", "/CN=Corral test CA", cwd=d)


def make_leaf(d, name, cn, days=30, start=None):
    """name.pem (the leaf, then the CA: a chain) and name.key (0600), for
    localhost and 127.0.0.1, signed by d's CA; start: its notBefore
    (YYYYMMDDHHMMSSZ) for an expired one."""
    openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
            "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN={cn}", cwd=d)
    ext = os.path.join(d, f"{name}.ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    if start is None:
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", f"{name}.leaf", "-extfile", ext,
                "-days", str(days), cwd=d)
    else:	# openssl ca sets the dates: one long past
        with open(os.path.join(d, "ca.cnf"), "w") as f:
            f.write("[ca]\ndefault_ca=d\n[d]\ndatabase=index.txt\nnew_certs_dir=.\n"
                    "serial=serial\ndefault_md=sha256\npolicy=p\nunique_subject=no\n"
                    "[p]\ncommonName=supplied\n")
        open(os.path.join(d, "index.txt"), "w").close()
        with open(os.path.join(d, "serial"), "w") as f:
            f.write("10\n")
        openssl("ca", "-batch", "-config", "ca.cnf", "-cert", "ca.pem", "-keyfile", "ca.key",
                "-in", f"{name}.csr", "-notext", "-out", f"{name}.leaf", "-extfile", ext,
                "-startdate", start, "-enddate", "20250201000000Z", cwd=d)
    with open(os.path.join(d, f"{name}.pem"), "w") as out:
        for part in (f"{name}.leaf", "ca.pem"):
            with open(os.path.join(d, part)) as f:
                out.write(f.read())
    os.chmod(os.path.join(d, f"{name}.key"), 0o600)
    return os.path.join(d, f"{name}.pem"), os.path.join(d, f"{name}.key")


def tls_corral(env, redis, origin, cert, key, server=None):
    """A corral with a plain listener and a tls one; (corral, tls port)."""
    plain, tls, admin = free_port(), free_port(), free_port()
    text = corral_config(redis, origin, plain, admin, extra={"server": dict({
        "listen": f"127.0.0.1:{plain}, 127.0.0.1:{tls} tls",
        "tls_certificate": cert, "tls_key": key}, **(server or {}))})
    return env.corral(config=text), tls


def client_context(d, alpn=("h2", "http/1.1")):
    ctx = ssl.create_default_context(cafile=os.path.join(d, "ca.pem"))
    if alpn:
        ctx.set_alpn_protocols(list(alpn))
    return ctx


def https_get(sock, path):
    """One GET (Host: localhost) on a socket kept alive, TLS or not:
    (status, headers, body)."""
    sock.sendall(f"GET {path} HTTP/1.1\r\nHost: {HOSTNAME}\r\n\r\n".encode())
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        expect(chunk, f"the connection closed before a head: {data!r}")
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    lines = head.decode().split("\r\n")
    headers = {k.lower(): v.strip() for k, v in (ln.split(":", 1) for ln in lines[1:])}
    length = int(headers.get("content-length", "0"))
    while len(body) < length:
        chunk = sock.recv(65536)
        expect(chunk, "the connection closed within a body")
        body += chunk
    return int(lines[0].split()[1]), headers, body


def connect_tls(ctx, port, server_hostname=HOSTNAME):
    raw = socket.create_connection(("127.0.0.1", port), slow(10))
    return ctx.wrap_socket(raw, server_hostname=server_hostname)


@scenario
def https_and_http_listeners_serve_one_cache(env):
    d = env.workdir
    make_ca(d)
    cert, key = make_leaf(d, "a", "first")
    redis, origin = env.redis(), env.origin()
    corral, tls = tls_corral(env, redis, origin, cert, key)

    with connect_tls(client_context(d), tls) as s:
        expect_eq(s.version(), "TLSv1.3", "the protocol a modern client gets")
        expect_eq(s.selected_alpn_protocol(), "http/1.1", "ALPN, h2 offered first")
        status, h, body = https_get(s, "/t")
        expect_eq((status, h.get("cache-status", "")[:27]), (200, "corral; fwd=miss; fwd-statu"),
                  "the miss over TLS")
        status, h, body2 = https_get(s, "/t")	# kept alive: the same connection
        expect_eq((status, body2), (200, body), "the hit over TLS, kept alive")
        expect("hit" in h.get("cache-status", ""), f"Cache-Status: {h}")
    expect_eq(origin.count("/t"), 1, "origin requests for /t")
    expect_eq(origin.path_stats("/t")["headers"].get("X-Forwarded-Proto"), "https",
              "X-Forwarded-Proto the origin heard")
    with socket.create_connection((corral.host, corral.port), slow(10)) as plain:
        status, h, _ = https_get(plain, "/t")	# the same exchange, in the clear
    expect_eq((status, "hit" in h.get("cache-status", "")), (200, True),
              "the plain listener's hit on what the tls one stored")

    # TLS 1.2 and nothing older; SNI read; h2 alone refused.
    for version, ok in (("-tls1_2", True), ("-tls1_3", True), ("-tls1_1", False)):
        p = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{tls}", version,
                            "-servername", HOSTNAME, "-CAfile", os.path.join(d, "ca.pem")],
                           input="", capture_output=True, text=True, timeout=30)
        expect_eq("Verify return code: 0 (ok)" in p.stdout and p.returncode == 0, ok,
                  f"openssl s_client {version}: {p.stdout[-400:]} {p.stderr[-400:]}")
    with socket.create_connection(("127.0.0.1", tls), slow(10)) as raw:
        try:
            client_context(d, alpn=("h2",)).wrap_socket(raw, server_hostname=HOSTNAME)
            refused = False
        except ssl.SSLError as e:
            refused = "no application protocol" in str(e).lower()
    expect(refused, "a client offering h2 alone is refused (no_application_protocol)")
    p = subprocess.run(["curl", "-sS", "--cacert", os.path.join(d, "ca.pem"), "-o",
                        os.devnull, "-w", "%{http_code} %{http_version}",
                        f"https://{HOSTNAME}:{tls}/t"], capture_output=True, text=True,
                       timeout=30)
    expect_eq(p.stdout, "200 1.1", f"curl --cacert: {p.stderr}")

    stats = corral.stats()["tls"]
    expect(stats["handshakes"] >= 4, f"/stats tls: {stats}")
    expect(stats["failures"]["mismatch"] >= 2, f"the refused TLS 1.1 and h2: {stats}")
    metrics = corral.admin("GET", "/metrics").text
    expect("corral_tls_handshakes_total" in metrics and
           'corral_tls_handshake_failures_total{reason="mismatch"}' in metrics,
           "the TLS metrics")


@scenario
def large_hits_over_tls_go_from_memory_and_plain_ones_from_a_file(env):
    """A TLS connection encrypts what it sends, so a large body goes from
    memory however often it is asked for (no file is made for it), whole;
    the same entry's hits on the plain listener get its file."""
    d = env.workdir
    make_ca(d)
    cert, key = make_leaf(d, "a", "first")
    redis, origin = env.redis(), env.origin()
    origin.script("/big", size=256 * 1024, headers={"Content-Type": "application/octet-stream"})
    corral, tls = tls_corral(env, redis, origin, cert, key)
    want = sized_body(256 * 1024)
    with connect_tls(client_context(d), tls) as s:
        for i in range(12):
            status, _, body = https_get(s, "/big")
            expect_eq((status, len(body), body == want), (200, len(want), True),
                      f"over TLS {i}: whole")
    expect_eq(corral.stats()["near_cache"]["body_files"], 0, "no file for TLS hits")
    with socket.create_connection((corral.host, corral.port), slow(10)) as plain:
        for i in range(8):
            status, _, body = https_get(plain, "/big")
            expect_eq((status, body == want), (200, True), f"in the clear {i}: whole")
    n = corral.stats()["near_cache"]
    expect_eq((n["body_files"], n["body_file_bytes"]), (1, len(want)),
              "its file, once plain hits asked for it")
    expect_eq(origin.count("/big"), 1, "one origin fetch")


@scenario
def one_session_ticket_a_handshake_and_it_resumes(env):
    """A TLS 1.3 handshake gets one session ticket (not OpenSSL's two);
    the ticket resumes, on a worker of its own or another, and the
    resumption gets a new one."""
    d = env.workdir
    make_ca(d)
    cert, key = make_leaf(d, "a", "first")
    redis, origin = env.redis(), env.origin()
    corral, tls = tls_corral(env, redis, origin, cert, key, server={"workers": "2"})
    sess = os.path.join(d, "session.pem")

    def s_client(*more):
        p = subprocess.run(["openssl", "s_client", "-connect", f"127.0.0.1:{tls}", "-tls1_3",
                            "-servername", HOSTNAME, "-CAfile", os.path.join(d, "ca.pem"),
                            "-ign_eof", *more],
                           input=f"GET /t HTTP/1.1\r\nHost: {HOSTNAME}\r\nConnection: close"
                                 "\r\n\r\n", capture_output=True, text=True, timeout=30)
        expect("HTTP/1.1 200" in p.stdout, f"s_client {more}: {p.stdout[-300:]} {p.stderr[-300:]}")
        return p.stdout

    out = s_client("-sess_out", sess)
    expect_eq(out.count("Post-Handshake New Session Ticket arrived"), 1,
              "tickets of a full handshake")
    expect("Reused, TLSv1.3" not in out, "the first handshake is a full one")
    for i in range(4):	# a worker or the other: the keys are shared
        out = s_client("-sess_in", sess)
        expect("Reused, TLSv1.3" in out, f"resumption {i + 1} from the ticket")
        expect_eq(out.count("Post-Handshake New Session Ticket arrived"), 1,
                  f"a new ticket for resumption {i + 1}")
    wait_for(lambda: (corral.stats()["tls"]["handshakes"], corral.stats()["tls"]["resumed"]) ==
             (5, 4), timeout=10, what="/stats tls: 5 handshakes, 4 resumed (both workers')")


@scenario
def plain_http_to_the_tls_port_gets_a_400_and_a_clean_close(env):
    d = env.workdir
    make_ca(d)
    cert, key = make_leaf(d, "a", "first")
    redis, origin = env.redis(), env.origin()
    corral, tls = tls_corral(env, redis, origin, cert, key)
    with socket.create_connection(("127.0.0.1", tls), slow(10)) as s:
        s.sendall(b"GET /plain HTTP/1.1\r\nHost: localhost\r\n\r\n")
        data = b""
        while chunk := s.recv(65536):	# a reset would raise here
            data += chunk
    expect(data.startswith(b"HTTP/1.1 400 "), f"the answer: {data[:80]!r}")
    expect(b"plain HTTP request was sent to HTTPS port" in data, f"why: {data!r}")
    expect_eq(origin.count(), 0, "origin requests")
    wait_for(lambda: corral.stats()["tls"]["failures"]["plaintext"] == 1,
             what="/stats tls.failures.plaintext")


@scenario
def a_stalled_handshake_is_cut_at_client_timeout_and_blocks_nobody(env):
    d = env.workdir
    make_ca(d)
    cert, key = make_leaf(d, "a", "first")
    redis, origin = env.redis(), env.origin()
    corral, tls = tls_corral(env, redis, origin, cert, key,
                             server={"client_timeout": "1s"})
    stalled = socket.create_connection(("127.0.0.1", tls), slow(10))
    stalled.sendall(b"\x16\x03\x01\x02\x00")	# a ClientHello's record head, no more
    # Meanwhile another client is served at once.
    with connect_tls(client_context(d), tls) as s:
        expect_eq(https_get(s, "/other")[0], 200, "a client beside the stalled one")
    # Closed by Corral: not never (the alternative), whatever the machine.
    stalled.settimeout(slow(20))
    try:
        closed = stalled.recv(1) == b""
    except ConnectionResetError:
        closed = True
    except socket.timeout:
        closed = False
    stalled.close()
    expect(closed, "the stalled handshake was closed by Corral")
    wait_for(lambda: corral.stats()["tls"]["failures"]["timeout"] == 1,
             what="/stats tls.failures.timeout")


@scenario
def a_reload_brings_a_new_certificate_and_open_connections_keep_theirs(env):
    d = env.workdir
    make_ca(d)
    cert, key = make_leaf(d, "a", "first")
    redis, origin = env.redis(), env.origin()
    corral, tls = tls_corral(env, redis, origin, cert, key)
    ctx = client_context(d)
    old = connect_tls(ctx, tls)
    try:
        expect_eq(https_get(old, "/r")[0], 200, "on the first certificate")
        expect_eq(dict(x[0] for x in old.getpeercert()["subject"])["commonName"], "first",
                  "the first certificate's name")
        # The same files, rewritten with another certificate.
        make_leaf(d, "b", "renewed")
        os.replace(os.path.join(d, "b.pem"), cert)
        os.replace(os.path.join(d, "b.key"), key)
        corral.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: "TLS certificate" in corral.log() and "loaded" in corral.log(),
                 what="the reload to load the new certificate")
        expect_eq(https_get(old, "/r")[0], 200, "the open connection, after the reload")
        with connect_tls(ctx, tls) as new:
            expect_eq(dict(x[0] for x in new.getpeercert()["subject"])["commonName"],
                      "renewed", "a new connection's certificate")
            expect_eq(https_get(new, "/r")[0], 200, "a new connection's request")
        # A reload with a key that does not match keeps the running one.
        make_leaf(d, "c", "mismatch")
        os.replace(os.path.join(d, "c.pem"), cert)
        corral.proc.send_signal(signal.SIGHUP)
        wait_for(lambda: "the running certificate goes on" in corral.log(),
                 what="the failed reload said")
        with connect_tls(ctx, tls) as again:
            expect_eq(dict(x[0] for x in again.getpeercert()["subject"])["commonName"],
                      "renewed", "still the renewed certificate")
    finally:
        old.close()


@scenario
def certificates_are_refused_with_their_reason(env):
    d = env.workdir
    make_ca(d)
    cert, key = make_leaf(d, "a", "first")
    expired, expired_key = make_leaf(d, "old", "old", start="20250101000000Z")
    other_cert, _ = make_leaf(d, "o", "other")
    redis, origin = env.redis(), env.origin()

    def check(c, k, server=None):
        text = corral_config(redis, origin, free_port(), free_port(), extra={"server": dict({
            "listen": f"127.0.0.1:{free_port()} tls", "tls_certificate": c,
            "tls_key": k}, **(server or {}))})
        return env.run_corral("-t", "-c", env.config_file(text))

    p = check(cert, key)
    expect_eq((p.returncode, p.stdout.strip()), (0, "configuration OK"), p.stderr)
    for c, k, want, what in (
            (expired, expired_key, "expired", "an expired certificate"),
            (other_cert, key, "match", "a key for another certificate"),
            (os.path.join(d, "missing.pem"), key, "missing.pem", "a missing file")):
        p = check(c, k)
        expect(p.returncode == 1 and want in p.stderr, f"{what}: {p.returncode} {p.stderr}")
    os.chmod(key, 0o644)
    p = check(cert, key)
    expect(p.returncode == 1 and "others" in p.stderr, f"a key others may read: {p.stderr}")
    os.chmod(key, 0o600)
    text = corral_config(redis, origin, free_port(), free_port(), extra={"server": {
        "listen": f"127.0.0.1:{free_port()} tls"}})
    p = env.run_corral("-t", "-c", env.config_file(text))
    expect(p.returncode == 1 and "tls_certificate and tls_key" in p.stderr,
           f"a tls listener without a certificate: {p.stderr}")
    # The start refuses an expired one, with the file's name.
    text = corral_config(redis, origin, free_port(), free_port(), extra={"server": {
        "listen": f"127.0.0.1:{free_port()} tls", "tls_certificate": expired,
        "tls_key": expired_key}})
    path = env.config_file(text, "start.conf")
    p = subprocess.run([env.binary, "-c", path], capture_output=True, text=True,
                       timeout=slow(30), stdin=subprocess.DEVNULL)
    expect(p.returncode == 1 and "old.pem" in p.stderr + p.stdout,
           f"the start with an expired certificate: {p.returncode} {p.stderr[-300:]}")
