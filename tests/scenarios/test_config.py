"""The command line: `corral -t` checks a configuration and reports every
error in one run as FILE:LINE: message; -V and -h. A comment after a
value, with ';' or '#', is a comment in every key."""

import glob
import os
import re

from harness import (TESTS_DIR, RedisServer, corral_config, docs, expect, expect_eq,
                     free_port, read_text, scenario, wait_for)

FIXTURES = os.path.join(TESTS_DIR, "fixtures")
BAD_FIXTURE = os.path.join(FIXTURES, "bad.conf")
MAKEFILE = os.path.join(os.path.dirname(TESTS_DIR), "Makefile")

# One config with four kinds of error on known lines. Each row is the line's
# text and, for a wrong line, the lines an error may be reported on (an
# unknown section may be reported at its header or at its first key).
BAD_CONFIG = [
    ("[server]", None),
    ("listen = 127.0.0.1:18080", None),
    ("admin_listen = 127.0.0.1:18081", None),
    ("colour = blue", "unknown key"),
    ("[redis]", None),
    ("address = 127.0.0.1:6379", None),
    ("timeout = 12parsecs", "bad duration"),
    ("[upstream]", None),
    ("url = http://127.0.0.1:9000", None),
    ("[route /]", None),
    ("ttl = 10s", None),
    ("lock_ttl = 9999h", "lock_ttl out of range"),
    ("[frobnicate]", "unknown section"),
    ("speed = 11", "unknown section"),
]


def reported_lines(path, stderr):
    """Line numbers of every "PATH:LINE:" in stderr."""
    return {int(n) for n in re.findall(re.escape(path) + r":(\d+):", stderr)}


def expected_fixture_lines(text):
    """The lines a fixture's leading comment says must be reported, from its
    "; expect-error-lines: 9 10 11" line. None if it has no such line."""
    for raw in text.splitlines():
        line = raw.strip()
        if line and not line.startswith((";", "#")):
            break
        m = re.search(r"expect-error-lines:\s*([\d\s,]*)", line)
        if m:
            return {int(n) for n in re.findall(r"\d+", m.group(1))}
    return None


@scenario
def bad_config_reports_every_error_with_file_and_line(env):
    text = "\n".join(row for row, _ in BAD_CONFIG) + "\n"
    path = env.config_file(text, "bad.conf")
    p = env.run_corral("-t", "-c", path)
    expect_eq(p.returncode, 1, f"exit status of corral -t on a bad config (stderr: {p.stderr!r})")
    expect("configuration OK" not in p.stdout + p.stderr, "a bad config reported OK")
    reported = reported_lines(path, p.stderr)
    wanted = {}
    for number, (_, error) in enumerate(BAD_CONFIG, start=1):
        if error:
            wanted.setdefault(error, set()).add(number)
    for error, numbers in wanted.items():
        expect(reported & numbers, f"no {path}:LINE: error for {error} (line "
               f"{' or '.join(map(str, sorted(numbers)))}); stderr:\n{p.stderr}")
    allowed = set().union(*wanted.values())
    expect_eq(sorted(reported - allowed), [], "errors reported on correct lines")

    good = env.config_file(corral_config(f"127.0.0.1:{free_port()}", "http://127.0.0.1:9",
                                         free_port(), free_port(),
                                         routes={"/": {}, "/reports/": {"ttl": "5m"}}),
                           "good.conf")
    p = env.run_corral("-t", "-c", good)
    expect_eq(p.returncode, 0, f"exit status of corral -t on a good config (stderr: {p.stderr!r})")
    expect("configuration OK" in p.stdout + p.stderr,
           f"corral -t says 'configuration OK' (stdout {p.stdout!r}, stderr {p.stderr!r})")


@scenario
def bad_conf_fixtures_report_their_expected_lines(env):
    # tests/fixtures/bad.conf and its siblings list, in a leading
    # "; expect-error-lines: ..." comment, every line corral must report.
    expect(os.path.exists(BAD_FIXTURE), f"{BAD_FIXTURE} is missing")
    for path in sorted(glob.glob(os.path.join(FIXTURES, "*.conf"))):
        with open(path) as f:
            expected = expected_fixture_lines(f.read())
        if expected is None:
            expect(path != BAD_FIXTURE, f"{path} has no '; expect-error-lines:' comment")
            continue
        p = env.run_corral("-t", "-c", path)
        expect_eq(p.returncode, 1, f"exit status of corral -t -c {path}")
        expect_eq(sorted(reported_lines(path, p.stderr)), sorted(expected),
                  f"lines reported for {path} (stderr:\n{p.stderr})")


@scenario
def version_and_usage_are_printed(env):
    with open(MAKEFILE) as f:
        version = re.search(r"^VERSION\s*:?=\s*(\S+)", f.read(), re.MULTILINE).group(1)
    p = env.run_corral("-V")
    expect_eq(p.returncode, 0, "exit status of corral -V")
    expect(version in p.stdout + p.stderr, f"corral -V prints {version}: {p.stdout!r}")
    p = env.run_corral("-h")
    expect_eq(p.returncode, 0, "exit status of corral -h")
    usage = p.stdout + p.stderr
    for option in ("-c FILE", "-t", "-s ADDR", "-V", "-h"):
        expect(re.search(rf"^\s+{re.escape(option)}\s+\w", usage, re.MULTILINE),
               f"corral -h describes {option} on a line of its own: {usage!r}")
    keys = sorted(docs.guide_keys())
    expect(len(keys) >= 30, f"configuration keys found in {docs.OPERATIONS}: {keys}")
    for section, key in keys:
        expect(re.search(rf"^{re.escape(section)}\s+{re.escape(key)}\s+\S", usage,
                         re.MULTILINE),
               f"corral -h lists {section} {key} with its default: {usage!r}")


class PasswordRedis(RedisServer):
    """A redis-server that wants the password s3cret."""

    auth = ("default", "s3cret")

    def argv(self, binary):
        return super().argv(binary) + ["--requirepass", "s3cret"]


@scenario
def a_hash_after_a_value_starts_a_comment_in_every_key(env):
    redis = env.track(PasswordRedis(env.workdir, env.name("redis")))
    origin = env.origin()
    logs = os.path.join(env.workdir, "logs")
    os.makedirs(logs)
    access = os.path.join(logs, "access.log")
    text = corral_config(redis, origin, free_port(), free_port(), routes={
        "/": {"ttl": "1h # an hour"}}, extra={
        "server": {"access_log": f"{access} # one line a request"},
        "redis": {"password": "s3cret # from the vault"},
        "upstream": {"health_path": "/health\t# the probe", "health_interval": "100ms"}})
    p = env.run_corral("-t", "-c", env.config_file(text))
    expect_eq((p.returncode, p.stdout.strip()), (0, "configuration OK"),
              f"corral -t (stderr: {p.stderr!r})")

    corral = env.corral(redis, origin, config=text)	# waits for Redis: the password
    r = corral.get("/a")
    expect_eq(r.status, 200, "a request")
    expect(r.cache_status.stored, f"stored, for an hour: {r.cache_status.raw!r}")
    expect(0 < int(re.search(r"ttl=(\d+)", corral.get("/a").cache_status.raw).group(1)) <= 3600,
           "the hit's ttl is the hour")
    wait_for(lambda: origin.count("/health") >= 2, what="two health checks of /health")
    states = {u["server"]: u["state"] for u in corral.stats()["upstreams"]}
    expect_eq(list(states.values()), ["up"], f"the server, probed at /health: {states}")
    wait_for(lambda: "/a" in read_text(access), what="/a in the access log")
    expect_eq(os.listdir(logs), ["access.log"], "files in the log directory")


EXAMPLE = os.path.join(os.path.dirname(TESTS_DIR), "conf", "corral.conf")


def example_keys(text):
    """{(section, key): value} of the example's [server], [redis],
    [upstream] and [route /] (the sections it says show the defaults)."""
    out, section = {}, None
    for raw in text.splitlines():
        line = re.split(r"\s[;#]", " " + raw)[0].strip()
        if not line or line.startswith((";", "#")):
            continue
        m = re.fullmatch(r"\[([^]]+)\]", line)
        if m:
            section = {"route /": "[route PREFIX]"}.get(m.group(1), f"[{m.group(1)}]")
            continue
        if section in ("[server]", "[redis]", "[upstream]", "[route PREFIX]"):
            key, _, value = line.partition("=")
            out[(section, key.strip())] = value.strip() or "(empty)"
    return out


@scenario
def example_config_shows_every_key_at_its_default_and_starts_without_a_warning(env):
    usage = env.run_corral("-h").stdout
    defaults = {}
    for line in usage.splitlines():
        m = re.match(r"(\[(?:server|redis|upstream|route PREFIX)\])\s+(\S+)\s+(\S+)", line)
        if m:
            defaults[(m.group(1), m.group(2))] = m.group(3)
    expect(len(defaults) > 60, f"the keys of corral -h: {len(defaults)}")
    with open(EXAMPLE) as f:
        shown = example_keys(f.read())
    expect_eq(sorted(set(defaults) - set(shown)), [], "keys conf/corral.conf leaves out")
    expect_eq(sorted(set(shown) - set(defaults)), [], "keys conf/corral.conf has that -h lacks")
    differ = {k: (shown[k], v) for k, v in defaults.items()
              if shown[k] != v and k != ("[upstream]", "url")}
    expect_eq(differ, {}, "values that are not the default (the example's, -h's)")
    p = env.run_corral("-t", "-c", EXAMPLE)
    expect_eq((p.returncode, p.stdout.strip(), p.stderr.strip()), (0, "configuration OK", ""),
              "corral -t on the example: OK, with no warning")
@scenario
def every_config_key_is_set_otherwise_by_some_scenario(env):
    """Every key of `corral -h` is given a value other than its default by
    at least one scenario (tests/config_keys.py reads their text)."""
    import sys
    sys.path.insert(0, TESTS_DIR)
    import config_keys
    missing = config_keys.uncovered(env.binary)
    expect_eq([f"[{section}] {key}" for section, key, _ in missing], [],
              "keys no scenario sets to a value other than their default")
