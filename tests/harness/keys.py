# SPDX-License-Identifier: MIT
"""The Redis keys corral keeps for a path (entry, lock, backoff, hfm, fails),
the Host every client sends (HOST), the key prefix (PREFIX), and what a
refresh-lock token looks like.
"""

import re

# Every client sends this Host header, so every instance of a fleet (each on
# its own port) builds the same cache key for a path.
HOST = "app.test"
PREFIX = "corral:"


def cache_key(path, host=HOST):
    """The cache KEY of a request, as Corral builds it (host + path [+ ?query])."""
    host = host.lower()
    if host.endswith(":80"):
        host = host[:-3]
    return host + path


def entry_key(path, host=HOST, prefix=PREFIX):
    return f"{prefix}{{{cache_key(path, host)}}}:entry"


def lock_key(path, host=HOST, prefix=PREFIX):
    return f"{prefix}{{{cache_key(path, host)}}}:lock"


def backoff_key(path, host=HOST, prefix=PREFIX):
    """The key whose presence makes path's refreshes back off (its value:
    the failure that started it, e.g. "503" or "timeout")."""
    return f"{prefix}{{{cache_key(path, host)}}}:backoff"


def hfm_key(path, host=HOST, prefix=PREFIX):
    """The key whose presence marks path as uncacheable fleet-wide
    (hit_for_miss): its requests go upstream without the lock."""
    return f"{prefix}{{{cache_key(path, host)}}}:hfm"


def fails_key(path, host=HOST, prefix=PREFIX):
    """The count of path's failed refreshes since its last store."""
    return f"{prefix}{{{cache_key(path, host)}}}:fails"


TOKEN_RE = re.compile(r"[0-9a-fA-F]{32}")


def is_token(value):
    """A refresh-lock token: 32 hex digits."""
    return isinstance(value, str) and TOKEN_RE.fullmatch(value) is not None
