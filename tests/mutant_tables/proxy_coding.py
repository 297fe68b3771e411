# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_coding.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("coding_identity_stream_without_vary", "proxy/proxy_coding.c",
           "\treturn c != CODING_IDENTITY || route_compresses(resp, rt);",
           "\treturn c != CODING_IDENTITY && route_compresses(resp, rt);",
           ["a_streamed_identity_answer_of_a_body_stored_compressed_says_vary"],
           "the identity answer of a body stored compressed says no Vary"),
    Mutant("coding_no_transform_ignored", "proxy/proxy_coding.c",
           "\t    no_transform(&e->headers) || e->body_len > max_out ||",
           "\t    (0 && no_transform(&e->headers)) || e->body_len > max_out ||",
           ["short_or_incompressible_bodies_are_stored_as_they_came"],
           "a response that says Cache-Control: no-transform is compressed on store"),
]
