# SPDX-License-Identifier: MIT
"""Mutants of common/util.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    # -- the token (common/util.c) -----------------------------------------------
    Mutant("constant_lock_token", "common/util.c",
           "out[i * 2] = hex[raw[i] >> 4];\n\t\tout[i * 2 + 1] = hex[raw[i] & 0xf];",
           "out[i * 2] = hex[10];\n\t\tout[i * 2 + 1] = hex[11];",
           ["waiter_sees_by_the_generation_that_another_instance_refreshed"],
           "an entry's generation no longer tells that someone else refreshed it"),
]
