# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_sf.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("sf_string_takes_any_escape", "proxy/proxy_sf.c",
           "if (s[1] != '\"' && s[1] != '\\\\')\n\t\t\t\treturn -1;",
           "if (s[1] == '\\0')\n\t\t\t\treturn -1;",
           ["test_hdr", "targeted_cache_control_that_is_not_a_dictionary_falls_back"],
           "an invalid CDN-Cache-Control (a string escaping 'a') is obeyed"),
]
