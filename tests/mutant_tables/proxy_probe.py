# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_probe.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("rush_of_one_timed", "proxy/proxy_probe.c",
           "if (n > 1)\n", "if (n > 0)\n",
           ["fill_probes_time_a_short_entrys_message_and_its_waiters_wake"],
           "a flight of one request counts as a hand-out to many"),
]
