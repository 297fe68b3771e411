# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_near.c (tests/mutants.py runs them)."""

from . import Mutant

KEPT = "a_fresh_entry_is_kept_by_a_worker_once_its_shared_copy_was_read_twice"

MUTANTS = [
    Mutant("near_l1_on_the_first_shared_read", "proxy/proxy_near.c",
           "#define NEAR_L1_READS\t2", "#define NEAR_L1_READS\t1",
           [KEPT],
           "every worker keeps its own copy of a key read once: one copy per worker"),
    Mutant("near_stale_copy_waits_for_reads", "proxy/proxy_near.c",
           "(reads >= NEAR_L1_READS || entry_state(e, now_ms) != ENTRY_FRESH))",
           "reads >= NEAR_L1_READS)",
           [KEPT],
           "a stale copy read from the shared cache is not kept by the worker"),
    Mutant("near_put_keeps_every_fresh_entry", "proxy/proxy_near.c",
           "\telse\n\t\t(void)l1_replace(px->l1, key, e);",
           "\telse\n\t\tl1_put(px->l1, key, e);",
           [KEPT],
           "a fresh entry fetched is kept by its worker too: a copy per worker"),
    Mutant("near_put_ignores_a_shared_cache_that_kept_nothing", "proxy/proxy_near.c",
           "\tif (!l2_put(px->l2, key, e, now_ms) ||",
           "\tif ((l2_put(px->l2, key, e, now_ms) && 0) ||",
           [KEPT],
           "without the shared cache a fresh entry is kept nowhere near"),
]
