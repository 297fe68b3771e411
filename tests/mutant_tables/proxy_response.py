# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_response.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("hop_by_hop_headers_stored", "proxy/proxy_response.c",
           "hdr_copy(&resp->headers, &e->headers, HDR_DROP_LENGTH);",
           "(void)hl_copy(&e->headers, &resp->headers); "
           "(void)hl_remove_all(&e->headers, \"Content-Length\");",
           ["hop_by_hop_response_headers_are_neither_stored_nor_served"],
           "Connection, the headers it names and Keep-Alive are served on every hit"),
]
