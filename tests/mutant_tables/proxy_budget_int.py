# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_budget_int.h (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    # -- proxy/proxy_budget.c --
    Mutant("budget_local_share_rounds_down", "proxy/proxy_budget_int.h",
           "\treturn (c->max_requests + n - 1) / n;",
           "\treturn c->max_requests / n;",
           ["redis_down_each_instance_keeps_to_its_local_share"],
           "with Redis down, max_requests 3 over 2 instances gives each 1, not 2"),
    Mutant("pool_budget_shared_by_every_pool", "proxy/proxy_budget_int.h",
           "return b->cp->max_requests;", "return b->main->cp->max_requests;",
           ["origin_budget_and_per_server_cap_apply_to_each_pool"],
           "a named pool gets the default pool's max_requests"),
    Mutant("server_local_share_is_the_whole_cap", "proxy/proxy_budget_int.h",
           "\treturn (server_cap(b) + instances(b) - 1) / instances(b);",
           "\treturn server_cap(b);",
           ["redis_down_each_instance_keeps_to_its_share_of_each_servers_cap"],
           "with Redis down, every instance sends each server its whole cap"),
    Mutant("explicit_local_share_ignored", "proxy/proxy_budget_int.h",
           "\tif (c->local_share > 0)\n\t\treturn c->local_share;\n", "",
           ["redis_down_an_instance_keeps_to_the_local_share_it_is_given"],
           "with Redis down, local_share = 2 lets max_requests through at once"),
]
