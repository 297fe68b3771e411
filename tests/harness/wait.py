"""Waiting and asserting: the time limits of the harness (SLOWNESS, slow()),
wait_for, expect, expect_eq, free ports, and reading logs (tail, read_text,
sanitizer_report).
"""

import http.client
import os
import socket
import threading
import time

from .resp import RespError

# How much slower than under ASan corral runs here (CORRAL_TEST_SLOWNESS,
# e.g. 10 under valgrind). Every time limit of the harness, and the timing
# bounds a scenario passes through slow(), are multiplied by it.
SLOWNESS = max(1.0, float(os.environ.get("CORRAL_TEST_SLOWNESS") or 1))

START_TIMEOUT_S = 20 * SLOWNESS	# corral under ASan, redis, origin: ready within this
STOP_TIMEOUT_S = 10 * SLOWNESS	# SIGTERM, then SIGKILL after this long
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


def free_port():
    """A TCP port on 127.0.0.1 that nothing listens on right now and that
    no earlier call in this process returned."""
    with _ports_lock:
        while True:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            if port not in _ports_handed_out:
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
