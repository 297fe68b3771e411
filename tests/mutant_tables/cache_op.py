# SPDX-License-Identifier: MIT
"""Mutants of cache/cache_op.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("noscript_without_eval_fallback", "cache/cache_op.c",
           "argv[1] = op->src;", "argv[1] = \"return nil\";",
           ["flushed_scripts_are_sent_again_as_eval"],
           "after SCRIPT FLUSH or a Redis restart, no lock script runs"),
    # -- a cluster primary that dies (cache/cache_slots.c, cache_op.c, claims) --
    Mutant("cluster_no_replica_reads", "cache/cache_op.c",
           "if ((n == NULL || !n->up) && op->readonly && op->ask == NULL &&",
           "if (0 && (n == NULL || !n->up) && op->readonly && op->ask == NULL &&",
           ["cluster_stale_entry_on_dead_primary_is_read_from_its_replica"],
           "a stale entry on a dead primary's slot is not served until the promotion"),
    # -- cache/cache_op.c --
    Mutant("cluster_ask_taken_as_moved", "cache/cache_op.c",
           "\t\tif (err[0] == 'M') {",
           "\t\tif (1) {",
           ["cluster_slot_migrated_while_refresh_holds_lock_fetches_once"],
           "an ASK during a migration moves the whole slot: the source's keys are missed"),
    Mutant("fence_count_of_two_read_as_variants_full", "cache/cache_op.c",
           "op->cb.fence(reply->integer >= 1 ? FENCE_OK :",
           "op->cb.fence(reply->integer == 2 ? FENCE_FULL :\n"
           "\t\t\t    reply->integer >= 1 ? FENCE_OK :",
           ["purges_of_keys_with_one_vary_variant_count_each_key"],
           "a purge of a key with one Vary variant (two entries) answers purged 0"),
    # -- Redis full (cache/cache_op.c, cache_store.c, proxy/proxy_refresh.c) -----
    Mutant("oom_is_an_error_like_any_other", "cache/cache_op.c",
           "\tif (strncmp(err, \"OOM \", 4) == 0) {",
           "\tif (0) {",
           ["a_full_redis_is_said_in_health_cache_status_and_the_log_once_a_second"],
           "a full Redis is invisible: redis=up, a bare fwd=miss, a log line a request"),
    Mutant("full_redis_said_once_a_request", "cache/cache_op.c",
           "\tif (c->full_logged_ms != 0 && now - c->full_logged_ms < FULL_LOG_MS) {",
           "\tif (0) {",
           ["a_full_redis_is_said_in_health_cache_status_and_the_log_once_a_second"],
           "the error log gets a line per refused write"),
]
