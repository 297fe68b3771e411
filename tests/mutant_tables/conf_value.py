# SPDX-License-Identifier: MIT
"""Mutants of conf/conf_value.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    # -- conf/conf.c, conf_value.c, conf_host.c --
    Mutant("conf_maximum_off_by_one", "conf/conf_value.c",
           "\tif (v > k->max) {\n\t\tvalue_format_number(k, k->max, limit, sizeof(limit));",
           "\tif (v > k->max + 1) {\n\t\tvalue_format_number(k, k->max, limit, sizeof(limit));",
           ["test_conf"],
           "a value one above a key's maximum is taken"),
]
