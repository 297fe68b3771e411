# SPDX-License-Identifier: MIT
"""Mutants of man/table.awk (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("manual_tables_without_their_text", "man/table.awk",
           "\tprint roff(body)\n",
           "",
           ["the_manual_pages_document_every_metric_counter"],
           "corral(8) names each Cache-Status value and failure but never says what it means"),
]
