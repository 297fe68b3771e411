# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_share.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("slot_local_share_ignored", "proxy/proxy_share.c",
           "if (sum <= share)\n\t\treturn col;",
           "if (1)\n\t\treturn col;",
           ["redis_down_each_instance_keeps_to_its_local_share",
            "redis_down_each_instance_keeps_to_its_share_of_each_servers_cap"],
           "with Redis down, every instance sends the origin all it gets"),
    Mutant("share_summed_by_column_not_by_cap", "proxy/proxy_share.c",
           "\t\t\tif (atomic_load(&r->id[i]) == id)\n\t\t\t\tsum +=",
           "\t\t\tif (i == col)\n\t\t\t\tsum +=",
           ["test_share"],
           "with Redis down, workers whose pools differ add up unrelated caps"),
]
