# SPDX-License-Identifier: MIT
"""Mutants of common/hist.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("histogram_bucket_wider_than_half_its_bound", "common/hist.c",
           "\t0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.75,",
           "\t0.1, 0.15, 0.2, 0.25, 0.3, 0.31, 0.5, 0.75,",
           ["test_hist"],
           "a 300 ms fetch and a 500 ms one fall in one bucket"),
    Mutant("hist_round_ignores_the_bucket_width", "common/hist.c",
           "\t*step = pow(10, floor(log10(width * WIDTH_SLACK)));",
           "\t*step = pow(10, floor(log10(width * WIDTH_SLACK)) - 4);",
           ["test_hist"],
           "corral -s shows a quantile to the microsecond whatever its bucket"),
]
