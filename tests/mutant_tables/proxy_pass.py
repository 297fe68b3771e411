# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_pass.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("hit_for_miss_outlives_a_shareable_answer", "proxy/proxy_pass.c",
           "on_pass_unpassed,\n\t    p)) != NULL)", "on_pass_unpassed,\n\t    p)) != NULL && 0)",
           ["a_shareable_answer_ends_hit_for_miss"],
           "one per-user answer sends every request upstream for hit_for_miss"),
    Mutant("pool_passed_post_replayable", "proxy/proxy_pass.c",
           ".replayable = strcmp(a->method, \"GET\") == 0 ||",
           ".replayable = 1 ||",
           ["cached_post_query_reset_is_retried_elsewhere_a_mutation_never",
            "post_reset_after_reaching_a_server_is_never_sent_again"],
           "a passed POST (a GraphQL mutation) reset by a server is sent to another"),
    # -- writes that readers see --------------------------------------------------
    Mutant("write_invalidates_only_the_plain_entry", "proxy/proxy_pass.c",
           "purge_target(p->px, p->key, !objects &&\n\t\t    key_has_parts(rt),",
           "purge_target(p->px, p->key, !objects &&\n\t\t    0,",
           ["a_write_invalidates_every_stored_response_of_its_target"],
           "a write leaves the credentials' and POST bodies' entries of its target"),
    Mutant("write_answered_before_its_invalidation", "proxy/proxy_pass.c",
           "\t\tSTAT_INC(p->px->stats, p->a.route, invalidations);\n\t\treturn PS_INVALIDATE;",
           "\t\tSTAT_INC(p->px->stats, p->a.route, invalidations);\n\t\treturn PS_DONE;",
           ["a_read_right_after_a_write_on_one_connection_never_gets_the_old_entry"],
           "a read sent right after a write's answer can find the old entry"),
    Mutant("graphql_mutation_drops_every_query", "proxy/proxy_pass.c",
           "p->invalidation = purge_target(p->px, p->key, !objects &&",
           "p->invalidation = purge_target(p->px, p->key, (objects || 1) &&",
           ["graphql_mutation_refreshes_every_query_holding_its_objects"],
           "a mutation drops every stored query of its endpoint, not only those "
           "holding its objects"),
]
