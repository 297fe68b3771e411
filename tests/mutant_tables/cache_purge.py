# SPDX-License-Identifier: MIT
"""Mutants of cache/cache_purge.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    # -- purges of many keys and tag sets (cache/cache_purge.c, cache_tag.c) ----
    Mutant("purge_counts_keys_tried", "cache/cache_purge.c",
           "\t\t} else if (r == FENCE_OK) {\n\t\t\tpg->purged++;",
           "\t\t} else {\n\t\t\tpg->purged++;",
           ["twenty_concurrent_prefix_purges_all_succeed_without_reconnecting"],
           "a purge answers with the keys it tried, twice for a key two purges reach"),
    Mutant("purges_without_a_limit", "cache/cache_purge.c",
           "\tif (c->npurges >= PURGES_MAX) {", "\tif (0 && c->npurges >= PURGES_MAX) {",
           ["purges_past_the_limit_are_refused_with_retry_after"],
           "purges pile up without bound: each holds its batch in memory"),
    Mutant("refresh_lists_nothing", "cache/cache_purge.c",
           "pg->visit(it->key, pg->arg);\t/* reached, as it is */", "(void)0;",
           ["refresh_of_100_entries_under_load_across_two_instances"],
           "a refresh by prefix only softens: nothing is refreshed until asked"),
    Mutant("prefix_purge_question_mark_is_a_glob", "cache/cache_purge.c",
           "if (strchr(\"*?[]\\\\\", *p) != NULL)", "if (strchr(\"*[]\\\\\", *p) != NULL)",
           ["prefix_purge_takes_glob_characters_as_themselves"],
           "a purge of prefix /p?id=1 deletes /p/id=1 too"),
]
