# SPDX-License-Identifier: MIT
"""Mutants of common/fields.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("proxy_authorization_forwarded", "common/fields.c",
           '"Connection", "Keep-Alive", "Proxy-Authenticate",\n\t"Proxy-Authorization", "Proxy-Connection",',
           '"Connection", "Keep-Alive", "Proxy-Authenticate",\n\t"Proxy-Connection",',
           ["test_hdr"],
           "the client's proxy credentials reach the origin (and a stored response)"),
]
