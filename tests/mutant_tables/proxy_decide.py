# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_decide.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("claim_entry_not_shared", "proxy/proxy_decide.c",
           "\tif (rf->claimed && why[0] == '\\0' && rf->marker == NULL &&",
           "\tif (0 && rf->claimed && why[0] == '\\0' && rf->marker == NULL &&",
           ["cluster_cold_stampede_on_dead_primary_fetches_once_per_instance"],
           "the claim's holder keeps its entry: the siblings fetch again after it"),
    Mutant("authorized_answer_shared_to_the_waiters", "proxy/proxy_decide.c",
           "\t    hdr_shareable(&rep->entry->headers, rf->authorized, &rf->rt, &why);",
           "\t    hdr_shareable(&rep->entry->headers, 0, &rf->rt, &why);",
           ["cache_authorized_on_never_hands_one_users_answer_to_another"],
           "a waiter gets another user's answer (not stored, but shared)"),
    Mutant("graphql_errors_stored", "proxy/proxy_decide.c",
           "\tif (rf->rt.graphql && graphql_errors((const char *)rep->entry->body,",
           "\tif (0 && graphql_errors((const char *)rep->entry->body,",
           ["graphql_answers_with_errors_are_never_stored"],
           "a GraphQL answer with errors is stored and served to everyone"),
    Mutant("coding_bomb_limit_off_by_a_factor", "proxy/proxy_decide.c",
           "\t\t    (size_t)rf->px->conf->max_entry_bytes, &made,",
           "\t\t    (size_t)rf->px->conf->max_entry_bytes * 100, &made,",
           ["corrupt_cut_and_bomb_bodies_are_not_stored"],
           "a gzip body that inflates to 64 times max_entry_bytes is stored"),
]
