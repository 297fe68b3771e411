# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_reply.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("coding_transformed_keeps_strong_etag", "proxy/proxy_reply.c",
           "\tif (cr->transformed && strcasecmp(h->key, \"ETag\") == 0)",
           "\tif (0 && strcasecmp(h->key, \"ETag\") == 0)",
           ["every_origin_coding_reaches_every_client",
            "if_none_match_and_head_work_across_codings"],
           "a body Corral compressed or decoded carries the origin's strong ETag"),
    Mutant("coding_vary_dropped", "proxy/proxy_reply.c",
           "\tif (cr->vary)\n\t\temit(arg, \"Vary\", VARY_CODING);",
           "\tif (0)\n\t\temit(arg, \"Vary\", VARY_CODING);",
           ["every_origin_coding_reaches_every_client"],
           "answers of a coded entry lack Vary: Accept-Encoding: a cache "
           "downstream serves gzip to a client that did not ask for it"),
]
