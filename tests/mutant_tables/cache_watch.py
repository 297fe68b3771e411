# SPDX-License-Identifier: MIT
"""Mutants of cache/cache_watch.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("watch_misses_a_fill_that_came_first", "cache/cache_watch.c",
           "strcmp(reply->str, w->holder) != 0)\n\t\tc->on_fill(w->key, NULL, c->fill_arg);",
           "strcmp(reply->str, w->holder) != 0)\n\t\t(void)0;",
           ["fill_missed_while_unsubscribed_wakes_the_waiter_on_resubscribing",
            "fill_that_overtakes_the_lock_reply_wakes_the_waiter_at_once"],
           "a fill published before the waiter subscribed (or while it was "
           "unsubscribed) is lost: the waiter polls"),
]
