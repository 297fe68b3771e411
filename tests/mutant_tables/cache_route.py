# SPDX-License-Identifier: MIT
"""Mutants of cache/cache_route.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("cluster_dead_node_kept", "cache/cache_route.c",
           "\tif (owners > 0)\n\t\tdrop_unnamed(rt);",
           "\tif (0 && owners > 0)\n\t\tdrop_unnamed(rt);",
           ["cluster_stale_entry_on_dead_primary_is_read_from_its_replica"],
           "a dead node the map no longer names stays in the table, reconnecting"),
    Mutant("cluster_dead_node_logs_every_connect", "cache/cache_route.c",
           "\t\tif (n->quiet)\n\t\t\tlog_debug(", "\t\tif (0)\n\t\t\tlog_debug(",
           ["cluster_primary_killed_in_cold_stampede_fleet_fetches_once_per_key"],
           "every failed connect to a dead node is logged"),
    Mutant("auth_refusal_logged_at_each_reconnect", "cache/cache_route.c",
           "if (strcmp(reason, n->down_reason) != 0)\n\t\tlog_error(",
           "if (1)\n\t\tlog_error(",
           ["wrong_password_said_once_served_from_origin_and_back_after_reload"],
           "a wrong password fills the log with one error per reconnect"),
    # -- every module: tests that catch what they claim (issue 26) --------------
    # -- the six the audit found unguarded --
    Mutant("cluster_moved_never_corrects_the_map", "cache/cache_route.c",
           "\tif (rt->slots[slot] != NULL)\n\t\trt->slots[slot]->slots--;\n"
           "\trt->slots[slot] = n;\n\tn->slots++;\n\troute_refresh(rt);",
           "\t(void)n;",
           ["cluster_slot_migrated_while_refresh_holds_lock_fetches_once"],
           "after a completed migration every command is redirected; /stats keeps the old owner"),
    # -- cache/cache_route.c --
    Mutant("sentinel_switch_compares_the_host_only", "cache/cache_route.c",
           "if (old != NULL && old->port == port && strcmp(old->host, host) == 0)",
           "if (old != NULL && strcmp(old->host, host) == 0)",
           ["sentinel_manual_failover_is_followed_at_the_switch"],
           "a new primary on the old one's host (another port) is not followed"),
]
