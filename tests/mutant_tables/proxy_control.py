# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_control.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("refresh_without_the_lock", "proxy/proxy_control.c",
           "a.mode = RF_LOCKED;", "a.mode = RF_DIRECT;",
           ["refresh_of_100_entries_under_load_across_two_instances"],
           "an operator's refresh fetches beside the fleet's own refreshes "
           "and stores nothing: the entries stay stale"),
    Mutant("warm_fetches_what_is_cached", "proxy/proxy_control.c",
           "} else if (r == CACHE_FOUND && job->kind == JOB_WARM) {",
           "} else if (0) {",
           ["warm_fetches_what_is_not_cached"],
           "a warm-up fetches every URL again, cached or not"),
    Mutant("warm_unbounded", "proxy/proxy_control.c",
           "return job->urls <= WARM_URLS_MAX ? 0 : -1;", "return 0;",
           ["warm_fetches_what_is_not_cached"],
           "a warm-up of any size is taken at once"),
    # -- the operator's refresh and per-credential keys (proxy/proxy_control.c) ----
    Mutant("operator_refresh_fetches_credential_entries", "proxy/proxy_control.c",
           "\t} else if (strchr(k->key, KEYRULE_SEP) != NULL) {",
           "\t} else if (0) {",
           ["an_operators_refresh_never_fetches_a_credentials_entry_without_it"],
           "POST /refresh fetches a credential's entry without the credential and stores "
           "the anonymous answer under that credential's key"),
]
