# SPDX-License-Identifier: MIT
"""Starting where Corral cannot run, and stopping whatever its workers do: a
port another program holds ends the start at once, with status 1 and the
port named; a second instance on the address of a running one is refused,
and the first keeps every request; workers that cannot start are
restarted a bounded number of times, then the instance stops with status
1; every stop signal ends the master, whether its workers are gone,
restarting or stopped."""

import os
import re
import shutil
import signal
import socket
import urllib.request

from harness import (HOST, START_TIMEOUT_S, STOP_TIMEOUT_S, children, corral_config, expect,
                     expect_eq, free_port, scenario, wait_for)

TWO = {"server": {"workers": "2"}}


def held_port():
    """A socket another program listens on (no SO_REUSEPORT), and its port."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", free_port()))
    sock.listen(8)
    return sock, sock.getsockname()[1]


@scenario
def a_port_in_use_ends_the_start_with_status_1_and_names_it(env):
    redis, origin = env.redis(), env.origin()
    holder, port = held_port()
    with holder:
        for workers in ("2", "1"):
            path = env.config_file(corral_config(redis, origin, port, free_port(), extra={
                "server": {"workers": workers}}), f"held{workers}.conf")
            # The alternative is a master that restarts its workers every
            # second and never exits: run_corral fails on its time limit.
            p = env.run_corral("-c", path, timeout=START_TIMEOUT_S)
            expect_eq(p.returncode, 1, f"exit status with workers = {workers}")
            said = p.stdout + p.stderr
            expect_eq(said.count(f"listen 127.0.0.1:{port}: Address already in use"), 1,
                      f"the port named once (workers = {workers}):\n{said}")
            expect(" started, pid " not in said, f"no worker was started:\n{said}")

        admin_holder, admin_port = held_port()
        with admin_holder:
            path = env.config_file(corral_config(redis, origin, free_port(), admin_port,
                                                 extra=TWO), "admin.conf")
            p = env.run_corral("-c", path, timeout=START_TIMEOUT_S)
            expect_eq(p.returncode, 1, "exit status with admin_listen in use")
            expect(f"admin_listen 127.0.0.1:{admin_port}: Address already in use" in p.stderr,
                   f"the admin port named:\n{p.stderr}")


def fresh_get(corral, path):
    """A GET on a new connection: the kernel may give it to any listener."""
    req = urllib.request.Request(corral.url + path, headers={"Host": HOST})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.status, r.read()


@scenario
def a_second_instance_on_the_same_address_is_refused_and_the_first_keeps_every_request(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/who", body="first")
    first = env.corral(redis, origin, extra=TWO)
    wait_for(lambda: len(children(first.proc.pid)) == 2, what="the first's two workers")

    for workers in ("2", "1"):
        second = corral_config(redis, origin, first.port, free_port(), routes={
            "/": {"ttl": "1h"}}, extra={"server": {"workers": workers}})
        p = env.run_corral("-c", env.config_file(second, f"second{workers}.conf"),
                           timeout=START_TIMEOUT_S)
        expect_eq(p.returncode, 1, f"the second instance's exit status (workers = {workers})")
        expect(f"listen 127.0.0.1:{first.port}: Address already in use" in p.stderr,
               f"it names the address in use:\n{p.stderr}")

    for i in range(40):
        expect_eq(fresh_get(first, "/who"), (200, b"first"), f"request {i}")
    expect_eq(first.counters()["requests"], 40, "requests the first instance answered")
    expect(first.running(), "the first instance runs on")


def worker_pids(corral, n):
    """The pids of corral's n workers, once the master says all are ready."""
    return wait_for(lambda: "ready: listening on" in corral.log() and
                    len(children(corral.proc.pid)) == n and children(corral.proc.pid),
                    what=f"{n} workers, ready")


def unstartable(env):
    """A corral of two workers whose access log's directory is then
    removed: a worker started from then on cannot open it, and exits 1."""
    logs = os.path.join(env.workdir, "logs")
    os.makedirs(logs)
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, extra={"server": {
        "workers": "2", "access_log": os.path.join(logs, "access.log")}})
    pids = worker_pids(corral, 2)
    shutil.rmtree(logs)
    return corral, pids


@scenario
def workers_that_cannot_start_are_restarted_three_times_then_the_instance_stops(env):
    corral, pids = unstartable(env)
    os.kill(pids[0], signal.SIGKILL)
    # Restarted after 1 s, 1 s and 2 s: then it gives up (against a
    # master that restarts it forever).
    corral.expect_exit(1, timeout=START_TIMEOUT_S, what="after its worker could not start")
    log = corral.log()
    expect_eq(len(re.findall(r"worker 0 \(pid \d+\) exited with 1 before it was ready", log)),
              3, f"starts that failed, each said:\n{log}")
    expect("worker 0 could not start 3 times in a row; stopping" in log,
           f"the master says why it stops:\n{log}")
    expect(not os.path.exists(f"/proc/{pids[1]}"), "the other worker stopped with it")


@scenario
def a_stop_signal_ends_the_master_while_no_worker_runs(env):
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGQUIT):
        corral, pids = unstartable(env)
        for pid in pids:
            os.kill(pid, signal.SIGKILL)
        wait_for(lambda: corral.log().count("before it was ready") >= 2 and
                 not children(corral.proc.pid),
                 what="both workers to fail to start, and none to run")
        corral.proc.send_signal(sig)
        # Against a master that ignores it (it then stops only by giving
        # up, after two more failed starts).
        corral.expect_exit(1, timeout=STOP_TIMEOUT_S, what=f"after {sig.name}")
        log = corral.log()
        expect(f"{signal.strsignal(sig)}: stopping" in log, f"it says so:\n{log}")
        expect("could not start 3 times" not in log,
               f"it stopped on {sig.name}, not by giving up:\n{log}")


@scenario
def a_stop_kills_a_stopped_worker_after_shutdown_timeout(env):
    redis, origin = env.redis(), env.origin()
    corral = env.corral(redis, origin, extra={"server": {"workers": "2",
                                                         "shutdown_timeout": "1s"}})
    pids = worker_pids(corral, 2)
    os.kill(pids[0], signal.SIGSTOP)	# never runs its loop again
    try:
        corral.proc.send_signal(signal.SIGTERM)
        # shutdown_timeout and 2 s, then SIGKILL (against waiting forever).
        corral.expect_exit(1, timeout=STOP_TIMEOUT_S, what="after SIGTERM")
    finally:
        if os.path.exists(f"/proc/{pids[0]}"):
            os.kill(pids[0], signal.SIGKILL)
    expect("1 worker still running 2000 ms past shutdown_timeout; killing" in corral.log(),
           f"the master says it killed it:\n{corral.log()}")
    wait_for(lambda: not os.path.exists(f"/proc/{pids[0]}"), what="the stopped worker to go")
