# SPDX-License-Identifier: MIT
"""Mutants of cache/cache_l1.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("near_cache_without_admission", "cache/cache_l1.c",
           "\t\tif (l->counters.bytes + charge > l->max_bytes &&",
           "\t\tif (0 && l->counters.bytes + charge > l->max_bytes &&",
           ["a_loop_over_more_keys_than_the_near_cache_holds"],
           "a loop over more keys than fit evicts every entry before its next hit"),
    # -- cache/cache_l1.c --
    Mutant("near_cache_serves_stale", "cache/cache_l1.c",
           "\tif (st == ENTRY_STALE && !stale_ok) {",
           "\tif (0) {",
           ["test_l1"],
           "a lookup for fresh entries gets a stale one (a sibling's fill served stale)"),
    Mutant("near_cache_drop_misses_variants", "cache/cache_l1.c",
           "\t\t    cache_key_covers(key, ki.len, n->key, n->len)) {",
           "\t\t    n->len == ki.len && memcmp(n->key, key, ki.len) == 0) {",
           ["test_l1"],
           "a purge leaves the key's variants served from memory"),
    Mutant("near_cache_never_evicts", "cache/cache_l1.c",
           "\twhile (l->counters.bytes > l->max_bytes &&",
           "\twhile (0 && l->counters.bytes > l->max_bytes &&",
           ["test_l1"],
           "the near cache grows past l1_max_bytes"),
    Mutant("near_cache_keeps_an_older_copy", "cache/cache_l1.c",
           "\tif (n != NULL && (n->e == e ||\n\t    (e->gen[0] != '\\0' && strcmp(n->e->gen, e->gen) == 0))) {",
           "\tif (n != NULL) {",
           ["test_l1"],
           "a refreshed entry does not replace the copy held: the old body is served"),
    Mutant("near_cache_too_large_keeps_the_old", "cache/cache_l1.c",
           "\t\tif (n != NULL) {\n\t\t\tunlink_node(l, &n);\n\t\t\tl->counters.drops++;\n\t\t}\n\t\treturn;",
           "\t\treturn;",
           ["test_l1"],
           "a new version too large to keep leaves the old one served"),
    Mutant("l1_drops_stale_copies", "cache/cache_l1.c",
           "if ((st = entry_state(n->e, now_ms)) == ENTRY_EXPIRED) {",
           "if ((st = entry_state(n->e, now_ms)) != ENTRY_FRESH) {",
           ["test_l1", "a_stale_copy_in_memory_is_served_without_redis_while_its_refresh_runs"],
           "a worker's copy goes as soon as it is stale: its stale hits read Redis"),
]
