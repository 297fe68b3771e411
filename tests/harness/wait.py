# SPDX-License-Identifier: MIT
"""Waiting and asserting: the time limits of the harness (SLOWNESS, slow()),
wait_for, expect, expect_eq, free ports, and reading logs (tail, read_text,
sanitizer_report).
"""

import http.client
import os
import random
import socket
import threading
import time

from .resp import RespError

# How much slower than under ASan corral runs here (CORRAL_TEST_SLOWNESS,
# e.g. 10 under valgrind). Every time limit of the harness, and the timing
# bounds a scenario passes through slow(), are multiplied by it.
SLOWNESS = max(1.0, float(os.environ.get("CORRAL_TEST_SLOWNESS") or 1))

START_TIMEOUT_S = 20 * SLOWNESS	# corral under ASan, redis, origin: ready within this
# SIGTERM, then SIGKILL after this long: past the default shutdown_timeout
# (10 s), which a request still in progress at the stop may take.
STOP_TIMEOUT_S = 20 * SLOWNESS
CLIENT_TIMEOUT_S = 30 * SLOWNESS	# one HTTP exchange
POLL_S = 0.01			# wait_for's polling interval
LOG_TAIL_LINES = 40

SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "runtime error:", "LeakSanitizer")


def slow(seconds):
    """A timing bound, stretched by SLOWNESS (1 unless CORRAL_TEST_SLOWNESS)."""
    return seconds * SLOWNESS


# -- waiting and asserting ----------------------------------------------------

# What cond() of wait_for may raise while the thing it watches is not yet
# there: a socket that refuses, resets or times out, an HTTP exchange cut
# short, Redis still loading. Anything else is a bug in the test or a wrong
# answer, and fails at once.
NOT_YET = (OSError, http.client.HTTPException)


def wait_for(cond, timeout=10, what="condition", interval=POLL_S):
    """Polls cond() until it returns something truthy and returns that.

    Connection errors (NOT_YET, or a Redis error reply) from cond() count
    as "not yet", and the last one is named in the AssertionError raised
    after timeout seconds (times SLOWNESS). Any other exception fails at
    once: an AssertionError (e.g. "the process exited"), or a KeyError or
    TypeError that says the condition itself is wrong."""
    deadline = time.monotonic() + timeout * SLOWNESS
    last_exc = None
    while True:
        try:
            value = cond()
            if value:
                return value
            last_exc = None
        except (NOT_YET + (RespError,)) as e:	# "not yet", reported below
            last_exc = e
        if time.monotonic() >= deadline:
            why = f" (last error: {last_exc!r})" if last_exc else ""
            raise AssertionError(f"timed out waiting for {what}{why}")
        time.sleep(interval)


def expect(cond, message):
    if not cond:
        raise AssertionError(message)


def expect_eq(actual, expected, what):
    if actual != expected:
        raise AssertionError(f"{what}: expected {expected!r}, got {actual!r}")


# Every port free_port() handed out in this process: the kernel may offer a
# port again as soon as the probing socket is closed, so two calls (listen
# and admin_listen of one config, two instances of a fleet) could otherwise
# get the same one.
_ports_handed_out = set()
_ports_lock = threading.Lock()
# Scenarios run side by side (run.py -j) each take ports of their own
# class: port % PORT_CLASSES == PORT_CLASS, so that two of them never pick
# the same free port before either binds it. Ports are drawn below the
# kernel's ephemeral range (ip_local_port_range), which outgoing
# connections take theirs from (and bind(0) its, even ones first).
PORT_CLASSES = int(os.environ.get("CORRAL_TEST_PORT_CLASSES", "1"))
PORT_CLASS = int(os.environ.get("CORRAL_TEST_PORT_CLASS", "0"))
PORT_LOW = 10000


def _ephemeral_low():
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


_PORT_HIGH = max(_ephemeral_low(), PORT_LOW + 1000)
_ports_drawn = random.Random()


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on right now, that no
    earlier call in this process returned, and of this process's class."""
    with _ports_lock:
        while True:
            port = _ports_drawn.randrange(PORT_LOW, _PORT_HIGH)
            port -= (port - PORT_CLASS) % PORT_CLASSES
            if port < PORT_LOW or port in _ports_handed_out:
                continue
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                try:
                    s.bind(("127.0.0.1", port))
                except OSError:
                    continue
            _ports_handed_out.add(port)
            return port


def tail(text, lines=LOG_TAIL_LINES):
    return "\n".join(text.splitlines()[-lines:])


def read_text(path):
    try:
        with open(path, "r", encoding="utf-8", errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


def sanitizer_report(text):
    """The first sanitizer marker found in text, or None."""
    for marker in SANITIZER_MARKERS:
        if marker in text:
            return marker
    return None
