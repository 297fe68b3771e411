# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_stats.h (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("stat_observe_reads_its_clock_twice", "proxy/proxy_stats.h",
           "\t\thist_observe(&(st)->route[(ri)].h, stat_s_);",
           "\t\thist_observe(&(st)->route[(ri)].h, (seconds));",
           ["test_hist"],
           "a route's observation can fall in another bucket than the total's, and the "
           "unrouted figures (total less the routes) wrap below zero"),
]
