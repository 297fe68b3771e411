# SPDX-License-Identifier: MIT
"""Mutants of cache/cache_graphql.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("mutation_cached", "cache/cache_graphql.c",
           "if (depth == 0 && (word_is(q + i, n, \"mutation\") ||",
           "if (0 && (word_is(q + i, n, \"mutation\") ||",
           ["identical_graphql_queries_cost_one_fetch_and_mutations_always_go",
            "test_keyrule"],
           "a mutation is coalesced and cached: sent once, answered from the cache"),
    Mutant("graphql_variables_not_keyed", "cache/cache_graphql.c",
           "keyrule_digest_part(d, buf + 2 * len, vlen);",
           "keyrule_digest_part(d, buf + 2 * len, 0 * vlen);",
           ["identical_graphql_queries_cost_one_fetch_and_mutations_always_go",
            "test_keyrule"],
           "queries with other variables get the first one's answer"),
    Mutant("graphql_member_named_twice_accepted", "cache/cache_graphql.c",
           "if (*seen)\n\t\t\treturn -1;", "if (0)\n\t\t\treturn -1;",
           ["test_keyrule"],
           "a body whose two query members two parsers read differently is cached"),
    Mutant("graphql_escaped_member_name_accepted", "cache/cache_graphql.c",
           "if (!plain_name(name))", "if (!plain_name(name) && 0)",
           ["graphql_member_names_that_parsers_read_otherwise_are_passed", "test_keyrule"],
           "\"qu\\u0065ry\" hides a mutation from the key: cached as the query "
           "while the server runs the mutation"),
    Mutant("graphql_member_name_case_ignored", "cache/cache_graphql.c",
           "strncasecmp(known[i].name, name->p, n) != 0)",
           "memcmp(known[i].name, name->p, n) != 0)",
           ["graphql_member_names_that_parsers_read_otherwise_are_passed"],
           "\"QUERY\" beside \"query\" is cached as the query while Go or .NET "
           "servers run the other"),
    Mutant("graphql_empty_operation_name_is_absent", "cache/cache_graphql.c",
           "if (m.has_opname && *m.opname.p == '\"' && olen == 0)", "if (0)",
           ["test_keyrule"],
           "operationName \"\" (an error to graphql-js) shares the key of a "
           "request without one"),
    Mutant("graphql_media_type_parameters_ignored", "cache/cache_graphql.c",
           "\tif (*p == ';') {\n\t\tp = ows(p + 1);",
           "\tif (*p == ';') {\n\t\treturn 1;",
           ["test_keyrule"], "application/json; charset=utf-16 is read as UTF-8"),
    Mutant("graphql_other_members_not_keyed", "cache/cache_graphql.c",
           "\t\tfor (int i = 0; i < m.nextra; i++) {\n\t\t\tkeyrule_digest_part(d, EXTRA_PART,",
           "\t\tfor (int i = 0; i < 0; i++) {\n\t\t\tkeyrule_digest_part(d, EXTRA_PART,",
           ["graphql_bodies_that_name_a_document_get_keys_of_their_own", "test_keyrule"],
           "a body naming a persisted document shares the plain query's entry"),
    Mutant("graphql_compact_forgets_escapes", "cache/cache_graphql.c",
           "\t\t\tif (*p == '\\\\' && p + 1 < v->end)\n\t\t\t\tout[n++] = *++p;\n"
           "\t\t\telse if (*p == '\"')",
           "\t\t\tif (*p == '\"')",
           ["test_keyrule"],
           "variables \"a\\\" b\" and \"a\\\"b\" share a key"),
]
