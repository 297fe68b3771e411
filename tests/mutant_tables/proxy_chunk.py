# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_chunk.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("frame_chunk_size_wraps", "proxy/proxy_chunk.c",
           "if (++digits > CHUNK_DIGITS)",
           "if (++digits > CHUNK_DIGITS + 2)",
           ["test_frame"],
           "a 17-digit chunk size wraps to a small one: the rest of the chunk is a smuggled request"),
    Mutant("frame_empty_chunk_size_ends_the_body", "proxy/proxy_chunk.c",
           '\tif (s == p)\n\t\treturn refuse(why, 400, "bad chunk size");\n',
           "",
           ["test_frame", "bad_requests_are_refused_and_their_connections_closed"],
           "an empty chunk-size line is read as the last chunk: what follows is a new request"),
]
