# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_outcome.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("tags_warning_unpaced", "proxy/proxy_outcome.c",
           "if (!pace_due(&pace, (uint64_t)n, &since))",
           "if (!pace_due(&pace, (uint64_t)n, &since) && 0)",
           ["tags_past_the_limit_in_a_burst_are_all_counted",
            "tags_past_the_limit_are_counted_and_logged"],
           "every response with too many tags writes a log line: a flood of them"),
]
