# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_log.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("access_log_key_left_out", "proxy/proxy_log.c",
           "\tif (r->key != NULL)\n\t\tevbuffer_add_printf(out, \" key=%s\", r->key);\n",
           "",
           ["the_access_log_names_the_rule_that_made_the_key"],
           "the access log does not say which rule made a key"),
]
