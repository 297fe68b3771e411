# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_inspect.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("entry_state_always_fresh", "proxy/proxy_inspect.c",
           "state_name(entry_state(e, util_now_ms()))", "state_name(ENTRY_FRESH)",
           ["entry_shows_what_redis_holds_field_by_field"],
           "/entry calls a stale entry fresh"),
    Mutant("entry_lock_holder_unknown", "proxy/proxy_inspect.c",
           "PRId64 \"}\", refresh_running(a->px, a->key) ?",
           "PRId64 \"}\", 0 ?",
           ["entry_shows_what_redis_holds_field_by_field"],
           "/entry cannot tell that this process holds the lock"),
    Mutant("entry_every_lock_held_here", "proxy/proxy_inspect.c",
           "PRId64 \"}\", refresh_running(a->px, a->key) ?",
           "PRId64 \"}\", 1 ?",
           ["entry_of_a_key_another_instance_is_fetching_names_that_holder"],
           "/entry says this process holds a lock another instance holds"),
    Mutant("entry_tags_missing", "proxy/proxy_inspect.c",
           "hdr_tags(&e->headers, add_tag, tags);", "(void)add_tag;",
           ["entry_shows_what_redis_holds_field_by_field"],
           "/entry hides the tags a purge by tag would reach"),
]
