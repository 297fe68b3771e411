"""Processes a scenario leaves behind: the members of a process group, and
the processes that carry a scenario's mark (MARK_ENV in their
environment, inherited by everything a scenario starts).

tests/run.py gives each scenario its own mark and, once it has ended,
kills whatever still carries it (and says so); a corral runs in a process
group of its own, so that its master and workers go together.
"""

import os
import signal

MARK_ENV = "CORRAL_TEST_MARK"	# "<run>/<scenario>": who started a process


def _stat_fields(pid):
    """The fields of /proc/pid/stat after the command name: state, ppid,
    pgrp, ...; None once the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def _pids():
    return [int(e) for e in os.listdir("/proc") if e.isdigit()]


def alive(pid):
    """Is pid a running process (not gone, not a zombie)?"""
    fields = _stat_fields(pid)
    return fields is not None and fields[0] != "Z"


def group_members(pgid):
    """The running processes of process group pgid."""
    found = []
    for pid in _pids():
        fields = _stat_fields(pid)
        if fields is not None and fields[0] != "Z" and int(fields[2]) == pgid:
            found.append(pid)
    return sorted(found)


def mark_of(pid):
    """The MARK_ENV value in pid's environment, or None (gone, not ours,
    not marked)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            env = f.read()
    except OSError:
        return None
    key = MARK_ENV.encode() + b"="
    for item in env.split(b"\0"):
        if item.startswith(key):
            return item[len(key):].decode(errors="replace")
    return None


def marked(mark, prefix=False):
    """{pid: command line} of the running processes whose mark is mark (or,
    prefix, starts with mark + "/"), this process excepted."""
    found = {}
    for pid in _pids():
        if pid == os.getpid() or not alive(pid):
            continue
        m = mark_of(pid)
        if m is not None and (m == mark or (prefix and m.startswith(mark + "/"))):
            found[pid] = command_line(pid)
    return found


def command_line(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace").strip()
    except OSError:
        return "?"


def kill_pids(pids):
    """SIGKILL to each of pids that still runs."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def kill_group(pgid):
    """SIGKILL to every process of group pgid (none left: nothing)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
