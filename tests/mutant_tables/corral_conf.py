# SPDX-License-Identifier: MIT
"""Mutants of conf/corral.conf (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    # -- the shipped configuration (conf/corral.conf, Makefile) ----------------------
    Mutant("example_config_leaves_a_key_out", "conf/corral.conf",
           "max_variants = 100                ; variants a key may have (Vary); more are served, not stored\n",
           "",
           ["example_config_shows_every_key_at_its_default"],
           "the example says it shows every key but lacks one"),
]
