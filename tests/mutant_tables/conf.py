# SPDX-License-Identifier: MIT
"""Mutants of conf/conf.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("conf_admin_on_the_public_port", "conf/conf.c",
           "if (pline == -1 || aline == -1 || !same_listener(l, adm))",
           "if (1 || pline == -1 || aline == -1 || !same_listener(l, adm))",
           ["test_conf"],
           "admin_listen on the public address is accepted: /purge open to clients"),
    Mutant("conf_route_first_match", "conf/conf.c",
           "\t\tif (len > bestlen &&\n\t\t    strncmp(path, c->routes[i].prefix, len) == 0) {",
           "\t\tif (bestlen == 0 &&\n\t\t    strncmp(path, c->routes[i].prefix, len) == 0) {",
           ["test_conf"],
           "the first route that matches wins, not the longest prefix"),
    Mutant("conf_sentinel_without_master_name", "conf/conf.c",
           "if (c->redis_mode == REDIS_SENTINEL && c->redis_master_name[0] == '\\0')",
           "if (0 && c->redis_mode == REDIS_SENTINEL && c->redis_master_name[0] == '\\0')",
           ["test_conf"],
           "mode = sentinel without master_name starts and never finds a primary"),
    # -- a comment after a value (conf/conf.c) ------------------------------------
    Mutant("hash_after_a_value_is_kept_in_it", "conf/conf.c",
           "\t\tif (*q == '#' && q > p && (q[-1] == ' ' || q[-1] == '\\t'))",
           "\t\tif (0 && *q == '#' && q > p && (q[-1] == ' ' || q[-1] == '\\t'))",
           ["test_conf", "a_hash_after_a_value_starts_a_comment_in_every_key"],
           "health_path = /health # probe takes every server out; a password fails AUTH"),
    Mutant("route_prefix_past_ascii_accepted", "conf/conf.c",
           "\t\tif ((unsigned char)prefix[i] > 0x7e) {",
           "\t\tif (0) {",
           ["test_conf"],
           "a route that can match no request passes corral -t"),
]
