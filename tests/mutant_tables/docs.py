# SPDX-License-Identifier: MIT
"""Mutants of HACKING.md, README.md, docs/operations.md (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    # -- the documents (README.md, HACKING.md, docs/; tests/scenarios/test_docs.py) ----
    Mutant("guide_leaves_a_key_out", "docs/operations.md",
           "| `lock_poll` | `[route PREFIX]` | the fallback re-check while waiting; waiters are "
           "normally woken at once by a notification |\n",
           "",
           ["the_configuration_guide_names_every_key_in_its_section"],
           "a key no task of the configuration guide names"),
    Mutant("metrics_table_leaves_a_family_out", "docs/operations.md",
           "| `corral_lock_busy_total` | counter | `route` | lock attempts that found the lock "
           "held by another fetch |\n",
           "",
           ["the_manual_pages_document_every_metric_counter"],
           "a metric /metrics has that neither the docs nor corral-metrics(7) describe"),
    Mutant("counters_table_leaves_a_counter_out", "docs/operations.md",
           "| `shed_refresh` | background refreshes dropped",
           "| `shed_refreshes` | background refreshes dropped",
           ["the_docs_tables_list_every_counter"],
           "a /stats counter the docs do not describe"),
    Mutant("readme_links_to_a_heading_that_is_gone", "README.md",
           "(docs/design.md#the-origin-budget)",
           "(docs/design.md#origin-budget)",
           ["every_relative_link_of_the_docs"],
           "a reader of the README follows a link to nowhere"),
    Mutant("readme_grows_back_into_the_manual", "README.md",
           "## Where to read on\n",
           "## Where to read on\n" + "\n" * 240,
           ["readme_is_short_and_starts_with_make_run"],
           "the README is no longer a short entry"),
    Mutant("layout_forgets_a_file", "HACKING.md",
           "| `proxy_hold.c`, `proxy_hold.h` |",
           "| `proxy_hold.h` |",
           ["hacking_layout_names_every_file_of_the_code"],
           "a file of the code the map does not name"),
]
