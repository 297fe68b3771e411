# SPDX-License-Identifier: MIT
"""Mutants of common/uri.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("double_slash_target_read_as_authority", "common/uri.c",
           "\tif (n > 0 && s[0] == '/') {\n\t\tsplit_rest(s, n, u);",
           "\tif (n > 0 && s[0] == '/' && (n < 2 || s[1] != '/')) {\n\t\tsplit_rest(s, n, u);",
           ["maintenance_covers_every_spelling_of_its_route"],
           "GET //m/new is sent to the origin as /new, of the host m"),
]
