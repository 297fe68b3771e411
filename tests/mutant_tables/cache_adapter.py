# SPDX-License-Identifier: MIT
"""Mutants of cache/cache_adapter.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    # -- Redis credentials (cache/cache_adapter.c, cache_route.c, cache_sentinel.c,
    # cache_sub.c, conf/conf_secret.c, proxy/proxy_life.c) --------------------------
    Mutant("redis_username_not_sent", "cache/cache_adapter.c",
           "if (a->user[0] == '\\0') {", "if (1) {",
           ["acl_user_with_password_file_or_credential_caches_once_for_the_fleet"],
           "AUTH goes as the default user: an ACL user's password is refused"),
]
