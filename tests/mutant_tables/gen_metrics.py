# SPDX-License-Identifier: MIT
"""Mutants of man/gen_metrics.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    # -- the operator's reference (man/gen_metrics.c, man/table.awk) ------------------
    Mutant("metrics_page_without_the_counters", "man/gen_metrics.c",
           "\tSTATS_FIELDS(STATS_MAN)\n",
           "",
           ["the_manual_pages_document_every_metric_counter"],
           "corral-metrics(7) lists no /stats counter"),
]
