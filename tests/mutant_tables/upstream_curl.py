# SPDX-License-Identifier: MIT
"""Mutants of upstream/upstream_curl.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    # -- the upstream's framing (upstream/upstream_curl.c) -----------------------
    Mutant("truncated_body_accepted", "upstream/upstream_curl.c",
           "if (rc == CURLE_OK) {", "if (rc == CURLE_OK || rc == CURLE_PARTIAL_FILE) {",
           ["test_upstream"],
           "a body cut short of its Content-Length is stored and served"),
    Mutant("stream_first_piece_not_short", "upstream/upstream_curl.c",
           "\tif (!f->streamed || f->body_handed || whole || n <= FIRST_PIECE_MAX)\n\t\treturn f->pending;",
           "\tif (1 || !f->streamed || f->body_handed || whole || n <= FIRST_PIECE_MAX)\n\t\treturn f->pending;",
           ["test_upstream"],
           "a streamed read is handed over whole: the last waiter's first byte "
           "waits for every other waiter's whole read"),
    Mutant("upstream_listener_unchecked", "upstream/upstream_curl.c",
           "\tif (!listener_ok(f))\n\t\treturn ABORT_LISTENER;", "\tif (0 && !listener_ok(f))\n\t\treturn ABORT_LISTENER;",
           ["test_upstream"],
           "a worker reads a response from whoever took a sibling's socket name"),
    Mutant("folded_response_header_dropped", "upstream/upstream_curl.c",
           "\"obs-fold (a header line starts with whitespace)\");\n"
           "\t\treturn ABORT_FRAMING;",
           "\"obs-fold (a header line starts with whitespace)\");\n"
           "\t\treturn ABORT_NONE;",
           ["folded_response_header_line_is_a_502"],
           "a folded header line is dropped silently and the response stored"),
]
