"""The environment of one scenario (Env: starts processes and always stops
them) and the scenario registry (@scenario, SCENARIOS).
"""

import os
import subprocess
import sys
import tempfile

from .corral import WRAPPER, Corral, corral_config
from .origin import Origin, WsgiOrigin
from .postgres import PostgresServer
from .redis import RedisProxy, RedisServer
from .wait import SLOWNESS, START_TIMEOUT_S, free_port, sanitizer_report, tail, wait_for


REPORT_FILE = "report.txt"	# Env.report's lines, in the scenario's workdir


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
        """Stops every process, the last started first, whatever one of
        them raises (an interrupt too: the rest are stopped before it goes
        on); the problems, as text."""
        problems, interrupt = [], None
        for proc in reversed(self.procs):
            try:
                proc.stop()
            except Exception as e:	# noqa: BLE001 - collected, reported together
                problems.append(str(e))
            except BaseException as e:	# noqa: BLE001 - re-raised once all are stopped
                interrupt = interrupt or e
                kill = getattr(proc, "kill", None)
                if kill is not None:
                    try:
                        kill()
                    except Exception as k:	# noqa: BLE001
                        problems.append(str(k))
        self.procs = []
        if interrupt is not None:
            raise interrupt
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

    def postgres(self, settings=None):
        """A private PostgreSQL 15 (wal_level = logical) on a free port,
        its data in this scenario's directory, which is opened to the
        postgres user it runs as (PostgreSQL refuses to run as root)."""
        os.chmod(self.workdir, 0o755)
        return self.track(PostgresServer(self.workdir, self.name("postgres"),
                                         settings=settings))

    def origin(self, delay=None, port=None):
        """A new origin; on port if given (e.g. to restart one that was
        stopped, where a corral expects it)."""
        return self.track(Origin(self.workdir, self.name("origin"), delay, port))

    def wsgi_origin(self):
        """A real WSGI origin (tests/wsgi_origin.py) that reads '_' as '-'."""
        return self.track(WsgiOrigin(self.workdir, self.name("wsgi")))

    def corral(self, redis=None, origin=None, routes=None, extra=None, config=None,
               wait_redis=None, nofile=None, env=None, admin_token=None, binary=None,
               wrapper=None):
        """Starts corral with config (INI text) or with corral_config(redis,
        origin, routes, extra) on free ports. wait_redis (default: True when
        redis is a RedisServer) waits for /stats to report redis up. env:
        variables laid over this process's environment for it. admin_token:
        the Bearer token its admin requests carry. binary: another build
        than the one under test (build/release/corral); wrapper: a command
        to run it under other than WRAPPER ([]: none)."""
        if config is None:
            config = corral_config(redis, origin, free_port(), free_port(), routes, extra)
        if wait_redis is None:
            wait_redis = isinstance(redis, RedisServer)
        name = self.name("corral")
        c = Corral(binary or self.binary, config, name, self.workdir, wait_redis=wait_redis,
                   nofile=nofile, env=env, admin_token=admin_token, wrapper=wrapper)
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

    def report(self, text):
        """A figure the scenario measured: run.py prints it under the
        scenario's PASS or XFAIL line (a FAIL shows the scenario's output)."""
        print(text, flush=True)
        with open(os.path.join(self.workdir, REPORT_FILE), "a") as f:
            f.write(text.rstrip("\n") + "\n")

    def config_file(self, text, name="test.conf"):
        path = os.path.join(self.workdir, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def run_corral(self, *args, timeout=30, cwd=None, env=None):
        """Runs the corral binary to completion (e.g. -t -c FILE) in cwd (None:
        this one), with env (variables laid over this process's environment);
        returns a CompletedProcess with text stdout and stderr. Fails on
        sanitizer reports."""
        if not self.binary or not os.access(self.binary, os.X_OK):
            raise AssertionError(f"corral binary {self.binary!r} not found or not executable")
        p = subprocess.run([*WRAPPER, os.path.abspath(self.binary), *args],
                           capture_output=True, text=True, errors="replace",
                           timeout=timeout * SLOWNESS, stdin=subprocess.DEVNULL, cwd=cwd,
                           env=dict(os.environ, **(env or {})))
        marker = sanitizer_report(p.stdout + p.stderr)
        if marker:
            raise AssertionError(f"corral {' '.join(args)} reported {marker!r}:\n"
                                 f"{tail(p.stderr)}")
        return p


# -- scenario registry ----------------------------------------------------------

SCENARIOS = []
DEFAULT_SCENARIO_TIMEOUT_S = 120


def scenario(fn=None, *, timeout=DEFAULT_SCENARIO_TIMEOUT_S, alone=False):
    """Marks fn(env) as a scenario; its name is the function's name. alone:
    run.py -j runs nothing beside it (it builds in the source tree, or its
    figures need the machine to itself)."""
    def mark(f):
        f.scenario_timeout = timeout * SLOWNESS
        f.scenario_alone = alone
        f.scenario_expected_failure = getattr(f, "scenario_expected_failure", None)
        SCENARIOS.append(f)
        return f
    return mark(fn) if fn is not None else mark


def expected_failure(reason, message):
    """Marks a scenario (above or below @scenario) that fails today, for
    reason, with an AssertionError whose first line contains message:
    run.py reports that failure as XFAIL and counts it as passed. Any other
    failure is a FAIL, as is a pass ("now passes: remove the mark"), so the
    mark comes off in the change that makes the scenario pass."""
    def mark(f):
        f.scenario_expected_failure = (reason, message)
        return f
    return mark
