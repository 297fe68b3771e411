"""PostgreSQL for the change-feed tests: PostgresServer (a private
PostgreSQL 15 cluster with wal_level = logical in a temporary directory,
on a free port) and its psql client. Standard library only.

PostgreSQL refuses to run as root: when the tests run as root, initdb and
postgres run as the "postgres" system user (the Debian package makes it),
in a directory that user owns (and the directories above it must let that
user through: Env.postgres opens the scenario's directory to it).
"""

import os
import pwd
import shutil
import signal
import subprocess
import tempfile

from .wait import (START_TIMEOUT_S, STOP_TIMEOUT_S, expect_eq, free_port, read_text, tail,
                   wait_for)

PG_BINDIRS = ("/usr/lib/postgresql/15/bin",)
SERVICE_USER = "postgres"	# who runs the server when we are root
SUPERUSER = "postgres"		# the cluster's bootstrap superuser
PSQL_TIMEOUT_S = 30		# one psql command


def find_pg_bindir():
    """The directory of initdb and postgres (Debian keeps them off PATH)."""
    for path in PG_BINDIRS:
        if os.access(os.path.join(path, "postgres"), os.X_OK):
            return path
    found = shutil.which("postgres")
    if found:
        return os.path.dirname(found)
    raise AssertionError(f"postgres not found in {PG_BINDIRS} or PATH")


class PsqlError(Exception):
    """psql failed: the server's error text is in the message."""


class PostgresServer:
    """A private PostgreSQL cluster: initdb once in workdir/name, then
    start(), stop() and start() again on the same port and data.
    listen_addresses is 127.0.0.1, the Unix socket lives in the data
    directory of its own under /tmp (a socket's path is at most 107
    bytes), and pg_hba trusts local socket connections (the
    test's psql) and asks TCP clients for a SCRAM password, replication
    connections included."""

    def __init__(self, workdir, name="postgres", port=None, settings=None):
        self.name = name
        self.bindir = find_pg_bindir()
        self.root = os.path.join(workdir, name)
        self.datadir = os.path.join(self.root, "data")
        self.sockdir = None	# made by start(): a socket's path is short
        self.log_path = os.path.join(self.root, "postgres.log")
        self.host = "127.0.0.1"
        self.settings = {"wal_level": "logical", "max_wal_senders": "10",
                         "max_replication_slots": "10", "fsync": "off",
                         "shared_buffers": "16MB", "log_min_messages": "info"}
        self.settings.update(settings or {})
        self.proc = None
        self.port = None
        self.as_user = self.service_user()
        self.initdb()
        self.start(port)

    @staticmethod
    def service_user():
        """(uid, gid) to run as, or None when we are not root."""
        if os.geteuid() != 0:
            return None
        try:
            entry = pwd.getpwnam(SERVICE_USER)
        except KeyError:
            raise AssertionError(f"running as root and there is no {SERVICE_USER} user")
        return entry.pw_uid, entry.pw_gid

    def popen_user(self):
        if self.as_user is None:
            return {}
        return {"user": self.as_user[0], "group": self.as_user[1], "extra_groups": []}

    def initdb(self):
        os.makedirs(self.root)
        if self.as_user is not None:
            os.chown(self.root, *self.as_user)
        argv = [os.path.join(self.bindir, "initdb"), "-D", self.datadir, "-U", SUPERUSER,
                "-A", "trust", "-E", "UTF8", "--locale=C", "--no-sync"]
        done = subprocess.run(argv, capture_output=True, text=True, cwd=self.root,
                              timeout=START_TIMEOUT_S * 3, **self.popen_user())
        if done.returncode != 0:
            raise AssertionError(f"initdb failed:\n{tail(done.stdout + done.stderr)}")
        self.write_hba(["local all all trust",
                        "local replication all trust",
                        "host all all 127.0.0.1/32 scram-sha-256",
                        "host replication all 127.0.0.1/32 scram-sha-256"])

    def write_hba(self, lines):
        """pg_hba.conf's lines (a running server needs reload_conf())."""
        with open(os.path.join(self.datadir, "pg_hba.conf"), "w") as f:
            f.write("".join(line + "\n" for line in lines))

    def reload_conf(self):
        expect_eq(self.sql("SELECT pg_reload_conf()"), "t", "pg_reload_conf()")

    def argv(self):
        """The command line for self.port (settings as -c options)."""
        argv = [os.path.join(self.bindir, "postgres"), "-D", self.datadir,
                "-c", f"port={self.port}", "-c", f"listen_addresses={self.host}",
                "-c", f"unix_socket_directories={self.sockdir}"]
        for key, value in self.settings.items():
            argv += ["-c", f"{key}={value}"]
        return argv

    def make_sockdir(self):
        if self.sockdir is None or not os.path.isdir(self.sockdir):
            self.sockdir = tempfile.mkdtemp(prefix="corral-pg-")
            if self.as_user is not None:
                os.chown(self.sockdir, *self.as_user)

    def start(self, port=None):
        """Starts it on port, on the port it had, or on a free port (tried
        three times)."""
        self.make_sockdir()
        port = port or self.port
        for attempt in range(3):	# free_port() can race with other processes
            self.port = port or free_port()
            with open(self.log_path, "ab") as log:
                self.proc = subprocess.Popen(self.argv(), stdout=log, stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL, cwd=self.root,
                                             **self.popen_user())
            try:
                wait_for(self.ready_or_died, timeout=START_TIMEOUT_S,
                         what=f"{self.name} to answer on port {self.port}")
                return
            except AssertionError:
                self.kill()
                if port or attempt == 2:
                    raise AssertionError(f"{self.name} did not start; log:\n{tail(self.log())}")

    def ready_or_died(self):
        if self.proc.poll() is not None:
            raise AssertionError(f"{self.name} exited with {self.proc.returncode}")
        try:
            return self.sql("SELECT 1") == "1"
        except PsqlError:
            return False

    def psql_argv(self, db="postgres", user=SUPERUSER):
        return [os.path.join(self.bindir, "psql"), "-X", "-q", "-A", "-t", "-v",
                "ON_ERROR_STOP=1", "-h", self.sockdir, "-p", str(self.port), "-U", user,
                "-d", db]

    def sql(self, text, db="postgres", user=SUPERUSER):
        """Runs text (one or more statements) through psql over the Unix
        socket; the output of the last, unaligned and without headers.
        Raises PsqlError with psql's error text."""
        done = subprocess.run(self.psql_argv(db, user) + ["-c", text], capture_output=True,
                              text=True, timeout=PSQL_TIMEOUT_S)
        if done.returncode != 0:
            raise PsqlError(done.stderr.strip() or f"psql exited with {done.returncode}")
        return done.stdout.strip()

    def rows(self, text, db="postgres"):
        """The rows of a query, each a list of its fields ('|'-separated)."""
        out = self.sql(text, db)
        return [line.split("|") for line in out.splitlines()] if out else []

    def conninfo(self, db, user):
        """A libpq connection string over TCP, without a password."""
        return f"host={self.host} port={self.port} dbname={db} user={user}"

    def log(self):
        return read_text(self.log_path)

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self):
        """A fast shutdown (SIGINT): sessions are ended, a checkpoint is
        written, as pg_ctl stop -m fast does; an immediate one (SIGQUIT)
        if that takes over STOP_TIMEOUT_S."""
        if self.running():
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.kill()
        self.remove_sockdir()

    def kill(self):
        """An immediate shutdown (SIGQUIT: the server's processes end at
        once, no checkpoint); SIGKILL if even that hangs."""
        if self.running():
            self.proc.send_signal(signal.SIGQUIT)
            try:
                self.proc.wait(STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        if self.proc is not None:
            self.proc.wait()
        self.remove_sockdir()

    def remove_sockdir(self):
        """The socket's directory goes with the server (start() makes
        one again)."""
        if self.sockdir is not None and not self.running():
            shutil.rmtree(self.sockdir, ignore_errors=True)
            self.sockdir = None

    def remove(self):
        """Stops it and deletes its directory."""
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)
