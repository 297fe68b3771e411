# SPDX-License-Identifier: MIT
"""Mutants of cache/cache_tag.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("tag_purge_drops_failed_keys", "cache/cache_tag.c",
           "\t\tif (pg->items[i].state == ITEM_DONE)\n\t\t\tfailed |= op_argstr(op, pg->items[i].key);",
           "\t\tif (pg->items[i].state != ITEM_WAITING)\n\t\t\tfailed |= op_argstr(op, pg->items[i].key);",
           ["hard_tag_purge_that_fails_half_way_is_finished_by_a_retry"],
           "a key whose invalidation failed leaves the tag: no retry reaches its entry"),
    Mutant("tag_store_never_prunes", "cache/cache_tag.c",
           "#define TAG_PRUNE_MAX\t\t\"16\"", "#define TAG_PRUNE_MAX\t\t\"0\"",
           ["tag_sets_drop_members_whose_entries_expired"],
           "a tag's set keeps every key ever stored under it while the tag is in use"),
    Mutant("audit_tag_snapshot_taken_again", "cache/cache_tag.c",
           "failed |= op_argstr(op, pg->snapped ? \"0\" : \"1\");",
           "failed |= op_argstr(op, \"1\");",
           ["hard_purge_of_a_50000_key_tag_deletes_them_all"],
           "a hard tag purge takes the keys stored during it as a new snapshot "
           "and purges them too"),
    Mutant("no_tag_families", "cache/cache_tag.c",
           "\tif (cache_tag_family(tag, family) == 0 &&",
           "\tif (0 && cache_tag_family(tag, family) == 0 &&",
           ["bulk_update_of_100000_rows_goes_through_the_budget"],
           "a bulk change's broad purge (the table's family, T:*) reaches no entry"),
    Mutant("failed_tag_purge_keeps_its_done_keys", "cache/cache_tag.c",
           "if (pg->last || (pg->failed && done == 0))", "if (pg->last || pg->failed)",
           ["hard_tag_purge_that_fails_half_way_is_finished_by_a_retry"],
           "the retry of a failed hard tag purge deletes entries no longer tagged"),
]
