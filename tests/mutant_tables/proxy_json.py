# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_json.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("json_string_copies_bytes_past_ascii", "proxy/proxy_json.c",
           "\t\telse if (ch < 0x20 || ch > 0x7e)",
           "\t\telse if (ch < 0x20)",
           ["test_regressions"],
           "/stats is invalid JSON when a string holds invalid UTF-8"),
]
