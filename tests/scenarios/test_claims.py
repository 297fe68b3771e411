# SPDX-License-Identifier: MIT
"""cache_authorized = claims: entries shared by the verified claims of a
JWT (jwt_claims = role tenant_id), not by the token. Users of one role
and tenant share one entry and one origin fetch; other claims never share;
a token that does not verify (missing, malformed, expired, not yet valid,
an unknown key, alg none, an RSA public key used as an HMAC secret, a
tampered payload, too large, duplicate members) is never answered from or
stored under a claims key: passed uncached, or refused 401 with
jwt_reject. Keys rotate by kid, reloaded when the file changes or on
SIGHUP. Tokens are signed here with the openssl command (RS256)."""

import base64
import hashlib
import hmac
import json
import os
import signal
import subprocess
import time

from harness import (HOST, Background, expect, expect_eq, release_once_joined, scenario,
                     stampede, wait_for)

SECRET = "claims-test-secret-0123456789abcdef"
ROUTE = {"cache_authorized": "claims", "jwt_claims": "role tenant_id", "lock_poll": "5s"}
LEEWAY_S = 30


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def b64json(obj):
    return b64(json.dumps(obj, separators=(",", ":")).encode())


class Signer:
    """An RSA key pair made with openssl; tokens it signs, RS256."""

    def __init__(self, env, name):
        self.key = os.path.join(env.workdir, f"{name}.key")
        subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt",
                        "rsa_keygen_bits:2048", "-out", self.key], check=True,
                       capture_output=True)
        self.pem = subprocess.run(["openssl", "pkey", "-in", self.key, "-pubout"],
                                  check=True, capture_output=True, text=True).stdout

    def sign(self, signing_input):
        return subprocess.run(["openssl", "dgst", "-sha256", "-sign", self.key],
                              input=signing_input.encode(), check=True,
                              capture_output=True).stdout

    def token(self, claims, kid="k1", header=None, payload=None):
        h = header or {"alg": "RS256", "typ": "JWT", "kid": kid}
        text = f"{b64json(h)}.{payload or b64json(claims)}"
        return f"{text}.{b64(self.sign(text))}"


def claims(role="reader", tenant=7, ttl=600, **more):
    now = int(time.time())
    return dict({"sub": "someone", "role": role, "tenant_id": tenant, "iat": now - 5,
                 "exp": now + ttl}, **more)


def short_lived(signer, sub, seconds):
    """A token with at least `seconds` to live (exp is a whole second, so
    one more is added) and its exp, for a scenario that waits it out."""
    c = claims(sub=sub, ttl=seconds + 1)
    return signer.token(c), c["exp"]


def keys_file(env, *pairs, name="keys.pem"):
    """A PEM key file of (kid, Signer) pairs; written in place (a new
    inode each time, as an editor or a deploy tool writes it)."""
    path = os.path.join(env.workdir, name)
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        for kid, signer in pairs:
            f.write(f"# kid: {kid}\n{signer.pem}")
    os.replace(tmp, path)
    return path


def claims_corral(env, redis, origin, keys, route=None, server=None, upstream=None):
    secret = os.path.join(env.workdir, "key.secret")
    with open(secret, "w") as f:
        f.write(SECRET + "\n")
    os.chmod(secret, 0o600)
    # Heads up to 128 KiB: a 64 KiB token reaches the verifier.
    extra = {"server": dict({"key_secret_file": secret, "jwt_keys_file": keys,
                             "jwt_leeway": f"{LEEWAY_S}s", "max_header_bytes": "128k"},
                            **(server or {}))}
    if upstream:
        extra["upstream"] = upstream
    return env.corral(redis, origin, routes={"/": dict(ROUTE, **(route or {}))}, extra=extra)


def bearer(token):
    return {"Authorization": f"Bearer {token}"}


@scenario
def two_users_of_one_role_share_one_origin_fetch_and_other_claims_never_do(env):
    redis, origin = env.redis(), env.origin()
    k1 = Signer(env, "k1")
    corral = claims_corral(env, redis, origin, keys_file(env, ("k1", k1)))
    origin.script("/orders", hold=True, body="orders n={n}")
    alice = k1.token(claims(sub="alice"))
    bob = k1.token(claims(sub="bob"))
    n = 10
    burst = Background(stampede, [corral], n, "/orders",
                       headers=lambda i: bearer(alice if i % 2 else bob))
    release_once_joined(origin, "/orders", [corral], n)
    results = burst.result()
    expect_eq(origin.count("/orders"), 1, "origin fetches for two users of one role")
    expect_eq({r.body for r in results}, {b"orders n=1"}, "one answer for both")
    expect(all(r.cache_status.params.get("key") == "claims" for r in results),
           f"Cache-Status names the rule: {results[0].cache_status.raw}")
    sent = origin.path_stats("/orders")["headers"].get("Authorization", "")
    expect(sent in (f"Bearer {alice}", f"Bearer {bob}"),
           "the cold miss forwards a requester's own token")
    origin.script("/orders", body="orders n={n}")
    # A renewed token of the same claims, a number written otherwise, and
    # a token within the leeway past its exp: hits.
    for what, t in (("a renewed token", k1.token(claims(sub="alice", ttl=900, jti="2"))),
                    ("tenant_id 7.0", k1.token(claims(sub="carol", tenant=7.0))),
                    ("exp 5 s ago, within the leeway", k1.token(claims(ttl=-5)))):
        r = corral.get("/orders", bearer(t))
        expect_eq((r.cache_status.hit, r.text), (True, "orders n=1"),
                  f"{what}: a hit on the shared entry ({r.cache_status.raw})")
    # Another role, another tenant: entries of their own.
    for i, (what, t) in enumerate((("another role", k1.token(claims(role="writer"))),
                                   ("another tenant", k1.token(claims(tenant=8)))), 2):
        r = corral.get("/orders", bearer(t))
        expect_eq((r.text, r.cache_status.hit), (f"orders n={i}", False), what)
    expect_eq(origin.count("/orders"), 3, "origin fetches: one per claim set")
    c = corral.counters("/")
    expect(c["key_claims_hits"] >= 3 and c["key_claims_stores"] == 3 and
           c["jwt_verified"] >= n + 5, f"the claims counters: {c}")
    # No token, and no claim in clear, in a Redis key, /stats or the log.
    secrets = (alice, bob, alice.split(".")[1], "reader")
    keys = redis.keys("*")
    expect(keys and not any(s in k for k in keys for s in secrets), f"Redis keys: {keys}")
    expect(not any(s in json.dumps(corral.stats()) for s in secrets[:3]), "no token in /stats")
    expect(not any(s in corral.log() for s in secrets[:3]), "no token in the log")


def bad_tokens(env, k1):
    """(what, headers, Cache-Status detail) of every token that must never
    be shared; each claims the warmed role and tenant."""
    other = Signer(env, "other")
    good = k1.token(claims())
    header, payload, sig = good.split(".")
    none = f"{b64json({'alg': 'none', 'typ': 'JWT'})}.{payload}."
    text = f"{b64json({'alg': 'HS256', 'typ': 'JWT', 'kid': 'k1'})}.{payload}"
    confused = f"{text}.{b64(hmac.new(k1.pem.encode(), text.encode(), hashlib.sha256).digest())}"
    tampered = f"{header}.{b64json(claims(role='admin'))}.{sig}"
    duplicate = '{"role":"writer","role":"reader","tenant_id":7,"exp":%d}' % (time.time() + 600)
    return [
        ("no token", {}, "jwt-missing"),
        ("not a JWS", bearer("not.a-token"), "jwt-malformed"),
        ("expired past the leeway", bearer(k1.token(claims(ttl=-LEEWAY_S - 60))),
         "jwt-expired"),
        ("not yet valid", bearer(k1.token(claims(nbf=int(time.time()) + 3600))),
         "jwt-not-yet-valid"),
        ("a kid not in the file", bearer(other.token(claims(), kid="k9")), "jwt-key-unknown"),
        ("alg none", bearer(none), "jwt-alg-none"),
        ("the RSA public key as an HMAC secret", bearer(confused), "jwt-alg-key-mismatch"),
        ("a tampered payload with the old signature", bearer(tampered), "jwt-bad-signature"),
        ("another key's signature under kid k1", bearer(other.token(claims())),
         "jwt-bad-signature"),
        ("64 KiB", bearer(k1.token(claims(pad="x" * 65536))), "jwt-too-large"),
        ("a member named twice", bearer(k1.token(None, payload=b64(duplicate.encode()))),
         "jwt-malformed"),
    ]


def warmed(env, reject):
    redis, origin = env.redis(), env.origin()
    k1 = Signer(env, "k1")
    corral = claims_corral(env, redis, origin, keys_file(env, ("k1", k1)),
                           route={"jwt_reject": "on" if reject else "off"})
    origin.script("/orders", body="orders n={n} auth=[{h:Authorization}]")
    good = k1.token(claims())
    first = corral.get("/orders", bearer(good)).text
    expect(first.startswith("orders n=1 "), f"the reader's entry: {first}")
    return corral, origin, k1, good, first


@scenario
def every_bad_token_is_passed_uncached_and_never_shared(env):
    corral, origin, k1, good, first = warmed(env, reject=False)
    bad = bad_tokens(env, k1)
    n = 1
    for what, headers, detail in bad:
        r = corral.get("/orders", headers)
        expect_eq((r.cache_status.params.get("fwd"), r.cache_status.params.get("detail")),
                  ("bypass", detail), f"{what}: Cache-Status {r.cache_status.raw}")
        if detail == "jwt-too-large":
            continue	# passed too: the origin's own server refuses such a head
        n += 1
        expect(r.status == 200 and r.text.startswith(f"orders n={n} "),
               f"{what}: passed to the origin ({r.status} {r.text[:40]})")
    expect_eq(origin.count("/orders"), n, "each bad token went to the origin")
    r = corral.get("/orders", bearer(good))
    expect_eq((r.cache_status.hit, r.text), (True, first), "the reader's entry is untouched")
    c = corral.counters("/")
    expect_eq((c["jwt_passed"], c["jwt_rejected"], c["key_claims_stores"]), (len(bad), 0, 1),
              "passed, none refused, one entry stored")
    log = corral.log()
    expect(good not in log and good.split(".")[2] not in log, "no token in the log")


@scenario
def every_bad_token_is_refused_401_with_jwt_reject(env):
    corral, origin, k1, good, first = warmed(env, reject=True)
    bad = bad_tokens(env, k1)
    for what, headers, detail in bad:
        r = corral.get("/orders", headers)
        challenge = r.headers.get("WWW-Authenticate") or ""
        expect_eq(r.status, 401, f"{what}: refused")
        expect(challenge.startswith('Bearer realm="corral"') and
               (("error=" not in challenge) == (detail == "jwt-missing")),
               f"{what}: WWW-Authenticate {challenge!r}")
        expect_eq(r.cache_status.params.get("detail"), detail,
                  f"{what}: Cache-Status {r.cache_status.raw}")
    expect_eq(origin.count("/orders"), 1, "nothing refused reached the origin")
    r = corral.get("/orders", bearer(good))
    expect_eq((r.cache_status.hit, r.text), (True, first), "the reader's entry is untouched")
    c = corral.counters("/")
    expect_eq((c["jwt_rejected"], c["jwt_passed"]), (len(bad), 0), "refusals counted")
    expect(c["jwt_expired"] == 1 and c["jwt_alg_refused"] == 2 and
           c["jwt_bad_signature"] == 2 and c["jwt_missing"] == 1,
           f"each refusal counted by its kind: {c}")


@scenario
def keys_rotate_by_kid_when_the_file_changes(env):
    redis, origin = env.redis(), env.origin()
    k1, k2 = Signer(env, "k1"), Signer(env, "k2")
    path = keys_file(env, ("k1", k1))
    corral = claims_corral(env, redis, origin, path)
    origin.script("/orders", body="orders n={n}")
    old, new = k1.token(claims()), k2.token(claims(), kid="k2")
    expect_eq(corral.get("/orders", bearer(old)).cache_status.params.get("key"), "claims",
              "k1's token verifies")
    r = corral.get("/orders", bearer(new))
    expect_eq(r.cache_status.params.get("detail"), "jwt-key-unknown", "k2 not yet in the file")
    keys_file(env, ("k1", k1), ("k2", k2))
    wait_for(lambda: corral.get("/orders", bearer(new)).cache_status.hit, timeout=10,
             what="k2's token verified (and a hit on the claim set's entry) once the file "
                  "holds k2")
    keys_file(env, ("k2", k2))
    wait_for(lambda: corral.get("/orders", bearer(old)).cache_status.params.get("detail") ==
             "jwt-key-unknown", timeout=10, what="k1's token refused once k1 left the file")
    expect(corral.get("/orders", bearer(new)).cache_status.hit, "k2's still verifies")
    expect(corral.counters()["jwt_keys_reloads"] >= 3, "each load counted")
    # A file that no longer loads leaves the keys in use.
    with open(path, "w") as f:
        f.write("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
    wait_for(lambda: corral.counters()["jwt_keys_reload_errors"] >= 1, timeout=10,
             what="the broken file's load failing")
    expect(corral.get("/orders", bearer(new)).cache_status.hit, "k2 still verifies")


@scenario
def sighup_loads_the_keys_file_the_configuration_names(env):
    redis, origin = env.redis(), env.origin()
    k1, k2 = Signer(env, "k1"), Signer(env, "k2")
    corral = claims_corral(env, redis, origin, keys_file(env, ("k1", k1)))
    origin.script("/orders", body="orders n={n}")
    new = k2.token(claims(), kid="k2")
    expect_eq(corral.get("/orders", bearer(new)).cache_status.params.get("detail"),
              "jwt-key-unknown", "k2 unknown before the reload")
    other = keys_file(env, ("k2", k2), name="other.pem")
    with open(corral.config_path) as f:
        text = f.read()
    with open(corral.config_path, "w") as f:
        f.write(text.replace(os.path.join(env.workdir, "keys.pem"), other))
    corral.proc.send_signal(signal.SIGHUP)
    wait_for(lambda: "jwt_keys_file (SIGHUP)" in corral.log(), timeout=10,
             what="the keys loaded again on SIGHUP")
    expect_eq(corral.get("/orders", bearer(new)).cache_status.params.get("key"), "claims",
              "k2's token verifies after the reload")
    expect_eq(corral.get("/orders", bearer(k1.token(claims()))).cache_status.params.get(
        "detail"), "jwt-key-unknown", "k1 is gone with the old file")


@scenario
def claims_that_are_arrays_objects_or_nested_key_by_their_whole_value(env):
    """A claim keys by its canonical JSON value: an array or an object is
    never taken for the string inside it, and a nested claim (a path)
    keys by the value it names."""
    redis, origin = env.redis(), env.origin()
    k1 = Signer(env, "k1")
    corral = claims_corral(env, redis, origin, keys_file(env, ("k1", k1)),
                           route={"jwt_claims": "role app.org"})
    origin.script("/orders", body="orders n={n}")
    tokens = [("role reader", claims(), "orders n=1"),
              ("role [reader]", claims(role=["reader"]), "orders n=2"),
              ("role {name: reader}", claims(role={"name": "reader"}), "orders n=3"),
              ("app.org 1", claims(app={"org": 1, "plan": "a"}), "orders n=4"),
              ("app.org 2", claims(app={"org": 2}), "orders n=5"),
              ("app.org 1.0, another plan", claims(app={"plan": "b", "org": 1.0}),
               "orders n=4")]
    for what, c, body in tokens:
        r = corral.get("/orders", bearer(k1.token(c)))
        expect_eq((r.text, r.cache_status.params.get("key")), (body, "claims"), what)
    expect_eq(origin.count("/orders"), 5, "one fetch per claim set")


@scenario
def a_stale_hits_refresh_sends_the_token_of_the_request_that_started_it(env):
    """The background refresh of a claims key is fetched with the token of
    the verified request whose stale hit started it: the most recent
    requester of that claim set, never a stored token and never none."""
    redis, origin = env.redis(), env.origin()
    k1 = Signer(env, "k1")
    corral = claims_corral(env, redis, origin, keys_file(env, ("k1", k1)),
                           route={"ttl": "1s", "stale_while_revalidate": "60s"})
    origin.script("/orders", body="orders n={n}")
    alice, bob = k1.token(claims(sub="alice")), k1.token(claims(sub="bob"))
    expect_eq(corral.get("/orders", bearer(alice)).text, "orders n=1", "alice fills it")
    stored = time.time()
    wait_for(lambda: time.time() > stored + 2.2, timeout=10, what="the entry to go stale")
    r = corral.get("/orders", dict(bearer(bob), Cookie="sid=bob"))
    expect_eq((r.text, r.cache_status.stale), ("orders n=1", True), "bob: a stale hit")
    wait_for(lambda: origin.count("/orders") == 2, timeout=10, what="the background refresh")
    expect_eq(origin.path_stats("/orders")["headers"].get("Authorization"), f"Bearer {bob}",
              "the refresh sent the token of the request that started it")
    expect("Cookie" not in origin.path_stats("/orders")["headers"],
           "and not bob's cookie: the key does not hold it")
    wait_for(lambda: corral.get("/orders", bearer(alice)).text == "orders n=2", timeout=10,
             what="the refreshed entry served to the claim set")


@scenario
def a_purge_by_url_drops_the_entry_of_every_claim_set(env):
    """Claims keys are filed under their URL's tag, as every key with
    parts after its URL: POST /purge?url= reaches each claim set's entry."""
    redis, origin = env.redis(), env.origin()
    k1 = Signer(env, "k1")
    corral = claims_corral(env, redis, origin, keys_file(env, ("k1", k1)))
    origin.script("/orders", body="orders n={n}")
    reader, writer = k1.token(claims()), k1.token(claims(role="writer"))
    for t in (reader, writer):
        corral.get("/orders", bearer(t))
    expect(corral.get("/orders", bearer(writer)).cache_status.hit, "stored")
    p = corral.purge(url=f"http://{HOST}/orders")
    expect_eq((p.status, p.json()["purged"]), (200, 2), "both claim sets' entries purged")
    for t in (reader, writer):
        r = corral.get("/orders", bearer(t))
        expect(not r.cache_status.hit, f"fetched again after the purge: {r.cache_status.raw}")
    expect_eq(origin.count("/orders"), 4, "one fetch per claim set, twice")


@scenario
def only_the_issuer_audience_and_typ_configured_are_keyed_by_claims(env):
    """jwt_issuer, jwt_audience and jwt_typ: a token from another issuer,
    for another audience or of another typ is never shared (passed
    uncached, its refusal named); one that names them is keyed."""
    redis, origin = env.redis(), env.origin()
    k1 = Signer(env, "k1")
    corral = claims_corral(env, redis, origin, keys_file(env, ("k1", k1)), server={
        "jwt_issuer": "https://auth.example", "jwt_audience": "orders-api",
        "jwt_typ": "at+jwt"})
    origin.script("/orders", body="orders n={n}")
    at = {"alg": "RS256", "typ": "at+jwt", "kid": "k1"}
    good = dict(iss="https://auth.example", aud=["billing", "orders-api"])
    r = corral.get("/orders", bearer(k1.token(claims(**good), header=at)))
    expect_eq((r.text, r.cache_status.params.get("key")), ("orders n=1", "claims"),
              f"issuer, audience and typ as configured: keyed ({r.cache_status.raw})")
    for what, c, h in (
            ("aud a string, typ with application/",
             claims(iss="https://auth.example", aud="orders-api"),
             dict(at, typ="application/AT+JWT")),):
        r = corral.get("/orders", bearer(k1.token(c, header=h)))
        expect_eq((r.text, r.cache_status.hit), ("orders n=1", True), what)
    for what, c, h, detail in (
            ("another issuer", claims(iss="https://evil.example", aud="orders-api"), at,
             "jwt-issuer"),
            ("no issuer", claims(aud="orders-api"), at, "jwt-issuer"),
            ("another audience", claims(iss="https://auth.example", aud="billing"), at,
             "jwt-audience"),
            ("no audience", claims(iss="https://auth.example"), at, "jwt-audience"),
            ("typ JWT, not at+jwt", claims(**good), dict(at, typ="JWT"), "jwt-malformed")):
        r = corral.get("/orders", bearer(k1.token(c, header=h)))
        expect_eq((r.cache_status.params.get("fwd"), r.cache_status.params.get("detail")),
                  ("bypass", detail), f"{what}: Cache-Status {r.cache_status.raw}")
        expect(not r.cache_status.hit and r.text != "orders n=1",
               f"{what}: never the shared entry ({r.text})")
    expect_eq(origin.count("/orders"), 6, "the keyed fetch and the five passed")
    c = corral.counters("/")
    expect_eq((c["key_claims_stores"], c["jwt_passed"]), (1, 5), "one entry, five passed")


@scenario
def an_expired_token_starts_no_refresh_and_the_next_verified_requester_refreshes(env):
    """A refresh whose only token has expired: the stale entry of alice's
    claim set, and alice's token now past exp (no leeway). Her request is
    passed uncached with its own token: it is not served the stale entry
    and starts no refresh, so no background fetch ever sends the expired
    token. The next verified requester of the claim set (a renewed token)
    gets the stale hit, and its refresh sends that requester's token."""
    redis, origin = env.redis(), env.origin()
    k1 = Signer(env, "k1")
    corral = claims_corral(env, redis, origin, keys_file(env, ("k1", k1)),
                           route={"ttl": "1s", "stale_while_revalidate": "60s"},
                           server={"jwt_leeway": "0s"})
    origin.script("/orders", body="orders n={n} auth=[{h:Authorization}]")
    alice, expires = short_lived(k1, "alice", 2)
    first = corral.get("/orders", bearer(alice)).text
    expect_eq(first, f"orders n=1 auth=[Bearer {alice}]", "alice fills her claim set's entry")
    wait_for(lambda: time.time() > expires + 1.2, timeout=10,
             what="alice's token expired and the entry stale")
    r = corral.get("/orders", bearer(alice))
    expect_eq((r.cache_status.params.get("fwd"), r.cache_status.params.get("detail")),
              ("bypass", "jwt-expired"), f"the expired token: {r.cache_status.raw}")
    expect_eq(r.text, f"orders n=2 auth=[Bearer {alice}]",
              "passed with its own token, not served the stale entry")
    c = corral.counters("/")
    expect_eq((c["key_claims_stores"], c["key_claims_hits"], origin.count("/orders")),
              (1, 0, 2), "no stale hit, no refresh: the entry is as alice left it")
    renewed = k1.token(claims(sub="alice", ttl=600, jti="renewed"))
    r = corral.get("/orders", bearer(renewed))
    expect_eq((r.text, r.cache_status.stale), (first, True),
              "the renewed token: a stale hit on the claim set's entry")
    wait_for(lambda: origin.count("/orders") == 3, timeout=10, what="the background refresh")
    wait_for(lambda: corral.get("/orders", bearer(renewed)).text ==
             f"orders n=3 auth=[Bearer {renewed}]", timeout=10,
             what="the refreshed entry, fetched with the renewed token (never the expired one)")
    expect_eq(origin.count("/orders"), 3, "one refresh, and no other fetch")


@scenario
def a_64_kib_token_at_the_default_max_header_bytes_is_refused_at_the_door(env):
    """max_header_bytes (16k by default) is met before the verifier: a
    64 KiB token's head is refused 431 at the door, never sent to the
    origin nor keyed. Raised past the token (128k, as the other scenarios
    run), the verifier refuses it as jwt-too-large (every_bad_token_*)."""
    redis, origin = env.redis(), env.origin()
    k1 = Signer(env, "k1")
    corral = claims_corral(env, redis, origin, keys_file(env, ("k1", k1)),
                           server={"max_header_bytes": "16k"})
    origin.script("/orders", body="orders n={n}")
    good = k1.token(claims())
    expect_eq(corral.get("/orders", bearer(good)).text, "orders n=1", "the reader's entry")
    r = corral.get("/orders", bearer(k1.token(claims(pad="x" * 65536))))
    expect_eq(r.status, 431, "a 64 KiB token's head: too large")
    expect_eq(origin.count("/orders"), 1, "not sent to the origin")
    c = corral.counters("/")
    expect_eq((c["jwt_verified"], c["jwt_malformed"], c["jwt_passed"]), (1, 0, 0),
              "never reached the verifier")
    r = corral.get("/orders", bearer(good))
    expect_eq((r.cache_status.hit, r.text), (True, "orders n=1"), "the entry is untouched")


@scenario
def a_refresh_whose_token_expires_while_it_waits_for_a_slot_is_not_sent(env):
    """A refresh verifies its requester's token once more as its fetch is
    about to go: bob's stale hit starts a refresh that waits for the only
    origin slot (max_requests = 1, held by another fetch) while bob's
    token expires; once the slot is free the refresh is not sent, the
    lock goes with no failure, and the next verified requester (carol)
    refreshes with her own token."""
    redis, origin = env.redis(), env.origin()
    k1 = Signer(env, "k1")
    corral = claims_corral(env, redis, origin, keys_file(env, ("k1", k1)),
                           route={"ttl": "1s", "stale_while_revalidate": "60s",
                                  "lock_poll": "500ms"},
                           server={"jwt_leeway": "0s"},
                           upstream={"max_requests": "1", "queue_timeout": "60s",
                                     "timeout": "60s"})
    origin.script("/orders", body="orders n={n} auth=[{h:Authorization}]")
    origin.script("/slow", hold=True, body="slow")
    alice = k1.token(claims(sub="alice"))
    first = corral.get("/orders", bearer(alice)).text
    stored = time.time()
    slow = Background(corral.get, "/slow", bearer(alice))
    wait_for(lambda: origin.held("/slow") == 1, timeout=10, what="the only slot taken")
    wait_for(lambda: time.time() > stored + 1.2, timeout=10, what="the entry to go stale")
    bob, expires = short_lived(k1, "bob", 3)
    r = corral.get("/orders", bearer(bob))
    expect_eq((r.text, r.cache_status.stale), (first, True), "bob: a stale hit")
    wait_for(lambda: corral.stats()["origin_budget"]["queue_length"] == 1, timeout=10,
             what="bob's refresh waiting for the slot")
    wait_for(lambda: time.time() > expires + 1.2, timeout=10, what="bob's token to expire")
    origin.release("/slow")
    expect_eq(slow.result().text, "slow", "the fetch that held the slot")
    wait_for(lambda: corral.counters("/")["jwt_refresh_expired"] == 1, timeout=10,
             what="bob's refresh held back: its token expired")
    expect_eq(origin.count("/orders"), 1, "bob's expired token was never sent")
    carol = k1.token(claims(sub="carol"))
    wait_for(lambda: corral.get("/orders", bearer(carol)).text ==
             f"orders n=2 auth=[Bearer {carol}]", timeout=15,
             what="carol's stale hit refreshing the entry with her own token")
    expect("not fetched: its requester's token expired" in corral.log(), "logged")
