# SPDX-License-Identifier: MIT
"""Mutants of cache/cache_keyrule.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("ignored_parameter_left_in_the_key", "cache/cache_keyrule.c",
           "return only != NULL ? any : !all;", "return only != NULL ? any : 1;",
           ["cache_busted_requests_for_one_page_cost_one_fetch", "test_keyrule"],
           "every cache-buster is its own cold miss"),
    Mutant("header_value_not_trimmed", "cache/cache_keyrule.c",
           "\tin += strspn(in, \" \\t\");\n", "",
           ["key_headers_key_on_normalised_header_values", "test_keyrule"],
           "padded header values split one entry in several"),
    Mutant("parts_not_filed_under_the_url", "cache/cache_keyrule.c",
           "\tif (keyrule_url_tag(url, tag) == -1)\n\t\treturn -1;\n\tmemcpy(key + strlen(key)",
           "\tmemcpy(key + strlen(key)",
           ["purge_by_url_drops_every_credentials_entry", "test_keyrule"],
           "a purge by URL leaves every credential's entry"),
    Mutant("digest_parts_run_together", "cache/cache_keyrule.c",
           "digest_hmac_update(&d->m, n, sizeof(n));", "digest_hmac_update(&d->m, n, 0);",
           ["test_keyrule"],
           "two credentials or bodies split otherwise share a digest"),
    Mutant("semicolon_piece_dropped_whole", "cache/cache_keyrule.c",
           "if (*p != ';')\n\t\t\tbreak;", "if (1)\n\t\t\tbreak;",
           ["a_semicolon_cannot_cloak_a_parameter_the_key_ignores", "test_keyrule"],
           "?id=1&utm_x=a;id=666 is keyed as id=1: id=666's answer (to an origin "
           "that splits on ';') served for id=1"),
    Mutant("key_query_drops_names_read_as_listed", "cache/cache_keyrule.c",
           "\t\t    (only != NULL && reads_as_listed(list, p, name)));",
           "\t\t    (only != NULL && 0 && reads_as_listed(list, p, name)));",
           ["key_query_keeps_only_the_names_listed", "test_keyrule"],
           "?id=1&ID=evil shares ?id=1's entry on an origin that reads ID as id"),
]
