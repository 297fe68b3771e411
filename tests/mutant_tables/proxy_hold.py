# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_hold.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("lock_wait_never_runs_out", "proxy/proxy_hold.c",
           "\th->expired = 1;\n\th->cb(h->arg);",
           "\th->cb(h->arg);",
           ["waiter_past_lock_wait_is_answered_without_a_fetch"],
           "a waiter waits for the holder however long it takes"),
    Mutant("lock_wait_default_shorter_than_the_upstream_timeout", "proxy/proxy_hold.c",
           "return fetch_max_ms + rt->lock_ttl_ms + rt->lock_poll_ms;",
           "return 3000;",
           ["slow_query_over_two_instances_of_two_workers_is_fetched_once"],
           "with the defaults, the waiters of a query slower than 3 s give up"),
    Mutant("lock_wait_not_counted_again_for_a_new_holder", "proxy/proxy_hold.c",
           "(same || rt->lock_wait_ms > 0)",
           "(same || 1)",
           ["waiter_counts_its_budget_again_for_a_new_holder"],
           "the waiters of a takeover give up while its fetch runs"),
    # -- proxy/proxy_hold.c --
    Mutant("lock_wait_setting_ignored", "proxy/proxy_hold.c",
           "\tif (rt->lock_wait_ms > 0)\n\t\treturn rt->lock_wait_ms;",
           "\tif (0)\n\t\treturn rt->lock_wait_ms;",
           ["waiter_past_lock_wait_is_answered_without_a_fetch"],
           "lock_wait has no effect: waiters stay the whole default budget"),
    Mutant("lock_wait_restarted_by_every_poll", "proxy/proxy_hold.c",
           "(same || rt->lock_wait_ms > 0)",
           "((same && 0) || rt->lock_wait_ms > 0)",
           ["waiter_of_a_holder_that_never_finishes_gives_up"],
           "with lock_wait 0, each busy answer from the same holder restarts the wait: no bound"),
    Mutant("audit_hold_new_holder_restarts_lock_wait", "proxy/proxy_hold.c",
           "if (h->expired || (h->started && (same || rt->lock_wait_ms > 0)))",
           "if (h->expired || (h->started && same))",
           ["waiter_with_lock_wait_keeps_its_arrival_budget_across_new_holders"],
           "a set lock_wait starts again for each new holder: a waiter waits "
           "past its client-facing budget"),
]
