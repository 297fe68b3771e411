# SPDX-License-Identifier: MIT
"""Mutants of cache/cache_entry.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("stale_entry_not_served", "cache/cache_entry.c",
           "\tif (now_ms < e->stale_until_ms)\n\t\treturn ENTRY_STALE;", "",
           ["stale_key_fleet_of_three_served_stale_then_refreshed_once"],
           "clients of a stale key wait for the refresh"),
    # -- cache/cache_entry.c --
    Mutant("entry_fresh_at_its_end", "cache/cache_entry.c",
           "\tif (now_ms < e->fresh_until_ms)\n\t\treturn ENTRY_FRESH;",
           "\tif (now_ms <= e->fresh_until_ms)\n\t\treturn ENTRY_FRESH;",
           ["test_entry"],
           "an entry is fresh one millisecond past its ttl"),
    Mutant("entry_trailing_bytes_taken", "cache/cache_entry.c",
           "\tif (body_len < r->left && after == 0) {",
           "\tif (0) {",
           ["test_entry"],
           "a record with bytes after its body (another writer's) is served"),
    Mutant("entry_times_unchecked", "cache/cache_entry.c",
           '\tif (!valid_times(e->stored_ms, e->fresh_until_ms, e->stale_until_ms)) {\n\t\tset_err(err, errlen, "times out of order");',
           '\tif (0) {\n\t\tset_err(err, errlen, "times out of order");',
           ["test_entry"],
           "a corrupt record with times out of order is served"),
    Mutant("entry_version_unchecked", "cache/cache_entry.c",
           "\tif (*version != ENTRY_VERSION && *version != ENTRY_VERSION_REQUEST) {",
           "\tif (0) {",
           ["test_entry"],
           "a record of another format version is read as this one"),
    Mutant("encoded_body_holds_no_reference", "cache/cache_entry.c",
           "struct cache_entry *held = entry_ref((struct cache_entry *)e);",
           "struct cache_entry *held = (struct cache_entry *)e;",
           ["cold_miss_fleet_of_three_fetches_once", "test_l2"],
           "an encoded entry refers to a body it does not keep: freed under the store"),
]
