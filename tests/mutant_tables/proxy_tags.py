# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_tags.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("purge_header_ignored", "proxy/proxy_tags.c",
           "\tif (rt->purge_header[0] != '\\0')\n\t\theader_tags(rt, &resp->headers, &t);",
           "\tif (0 && rt->purge_header[0] != '\\0')\n\t\theader_tags(rt, &resp->headers, &t);",
           ["purge_header_of_a_successful_write"],
           "the tags a write's answer names are not purged"),
    Mutant("purge_header_purges_hard", "proxy/proxy_tags.c",
           "cache_purge_tag(px->cache, t.v[i], 1, on_write_purged,",
           "cache_purge_tag(px->cache, t.v[i], 0, on_write_purged,",
           ["purge_header_of_a_successful_write"],
           "a write's tags are deleted, not made stale: a stampede on popular ones"),
    Mutant("graphql_purge_lists_ignored", "proxy/proxy_tags.c",
           "\tt->lists = rt->graphql_purge_lists;", "\tt->lists = 0;",
           ["graphql_purge_lists_refreshes"],
           "graphql_purge_lists = on leaves the list queries of a mutated type stale"),
    Mutant("graphql_purge_lists_always", "proxy/proxy_tags.c",
           "\tt->lists = rt->graphql_purge_lists;", "\tt->lists = 1;",
           ["graphql_purge_lists_refreshes"],
           "every mutation refreshes every list of its types, the setting off"),
    Mutant("graphql_tags_unbounded", "proxy/proxy_tags.c",
           "\tif (fits && t->objects < GRAPHQL_TAGS_MAX) {", "\tif (fits) {",
           ["graphql_mutation_refreshes_every_query_holding_its_objects"],
           "a stored GraphQL response is filed under every object it holds: no bound"),
    Mutant("graphql_erring_mutation_purges", "proxy/proxy_tags.c",
           "\tif (graphql_errors(text, len))\n\t\treturn 0;\n", "",
           ["graphql_mutation_refreshes_every_query_holding_its_objects"],
           "a mutation that reports errors purges the objects it names"),
]
