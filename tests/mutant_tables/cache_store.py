# SPDX-License-Identifier: MIT
"""Mutants of cache/cache_store.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    # -- late replies, hit-for-miss, the shared near cache's lock ------------------
    Mutant("late_acquire_keeps_its_lock", "cache/cache_store.c",
           "if (!op->finished || op->script != SCRIPT_ACQUIRE ||",
           "if (1 || op->script != SCRIPT_ACQUIRE ||",
           ["redis_stall_past_lock_ttl_leaves_no_lock_behind"],
           "a lock taken by an acquire given up on bars the key for lock_ttl"),
    Mutant("store_full_reply_not_read", "cache/cache_store.c",
           "strcmp(reply->str, STORE_FULL) == 0)",
           "strcmp(reply->str, STORE_FULL) == 0 && 0)",
           ["vary_variants_past_max_variants_are_not_stored"],
           "a variant refused for max_variants is taken for a Redis error, "
           "neither counted nor logged"),
    Mutant("full_redis_outlives_a_store", "cache/cache_store.c",
           "\t\top->cache->full_ms = 0;\t\t/* it has room again */",
           "\t\t(void)0;",
           ["a_full_redis_is_said_in_health_cache_status_and_the_log_once_a_second"],
           "/health says full for seconds after Redis took a store"),
]
