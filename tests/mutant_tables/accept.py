# SPDX-License-Identifier: MIT
"""Mutants of codec/accept.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("accept_q0_ignored", "codec/accept.c",
           "\treturn q > 0 ? q : WEIGHT_REFUSED;",
           "\treturn q >= 0 ? q : WEIGHT_REFUSED;",
           ["every_origin_coding_reaches_every_client", "test_accept"],
           "a coding the client refused with q=0 is sent to it"),
]
