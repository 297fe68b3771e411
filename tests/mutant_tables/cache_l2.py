# SPDX-License-Identifier: MIT
"""Mutants of cache/cache_l2.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("shared_cache_copy_not_checked", "cache/cache_l2.c",
           "\tif (atomic_load_explicit(&sh->tail, memory_order_relaxed) > p) {",
           "\tif (0) {",
           ["test_l2"],
           "a copy of an entry overwritten while it was taken is served, mixed"),
    Mutant("shared_cache_not_emptied_after_a_dead_holder", "cache/cache_l2.c",
           "\t\treset(l);\n\t\tcount(&sh->resets);",
           "\t\tcount(&sh->resets);",
           ["test_l2"],
           "what a worker that died while changing it left half done is served"),
    Mutant("shared_cache_lock_waits_unbounded", "cache/cache_l2.c",
           "#define L2_LOCK_WAIT_US\t\t1000\t", "#define L2_LOCK_WAIT_US\t\t60000000\t",
           ["test_l2"],
           "a worker stalled inside the shared near cache's lock stalls every worker"),
    Mutant("shared_cache_busy_drop_forgotten", "cache/cache_l2.c",
           "\t\t\tatomic_store(&sh->reset_due, 1);",
           "\t\t\tatomic_store(&sh->reset_due, 0);",
           ["test_l2"],
           "a purge made while the lock is busy leaves the purged copy served"),
    # -- cache/cache_l2.c --
    Mutant("shared_cache_drop_misses_variants", "cache/cache_l2.c",
           "\t\t    cache_key_covers(key, kh.len, b->key, b->key_len)) {",
           "\t\t    b->key_len == kh.len && memcmp(b->key, key, kh.len) == 0) {",
           ["test_l2"],
           "a purge leaves the key's variants in the shared near cache"),
    Mutant("shared_cache_too_large_keeps_the_old", "cache/cache_l2.c",
           "\tdrop_exact(l, key, &kh);\n\tif ((held = n <= l->sh->max_block))",
           "\tif (n <= l->sh->max_block)\n\t\tdrop_exact(l, key, &kh);\n"
           "\tif ((held = n <= l->sh->max_block))",
           ["test_l2"],
           "a new version too large to keep leaves the old one served"),
    Mutant("shared_cache_prefix_drop_misses", "cache/cache_l2.c",
           "\t\tif (b->live && b->key_len >= len &&\n\t\t    memcmp(b->key, prefix, len) == 0) {",
           "\t\tif (b->live && b->key_len == len &&\n\t\t    memcmp(b->key, prefix, len) == 0) {",
           ["test_l2"],
           "a prefix purge leaves the keys under it in the shared near cache"),
    Mutant("l2_keeps_no_stale_copy", "cache/cache_l2.c",
           "if (!enabled(l) || e->stale_until_ms <= now_ms)",
           "if (!enabled(l) || e->fresh_until_ms <= now_ms)",
           ["test_l2"],
           "the shared cache refuses a stale entry read from Redis"),
]
