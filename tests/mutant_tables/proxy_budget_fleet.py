# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_budget_fleet.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("budget_instances_never_counted", "proxy/proxy_budget_fleet.c",
           "\t\tb->instances = f->instances;",
           "\t\t(void)f;",
           ["redis_down_each_instance_keeps_to_its_local_share"],
           "with Redis down, every instance takes all of max_requests"),
    Mutant("fleet_figures_of_the_last_acquire", "proxy/proxy_budget_fleet.c",
           "\tb->fleet.held = f->held;\n\tb->fleet.queued = f->queued;\n\tb->fleet_ms = util_now_ms();\n}",
           "\t(void)0;\n}",
           ["budget_gauges_say_now_and_never_more_than_max_requests"],
           "an idle fleet reads the slots and queue of its last acquire for ever"),
]
