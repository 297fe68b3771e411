# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_hit.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    # -- stale copies in the near caches (proxy_hit.c, cache_l1.c, cache_l2.c) --
    Mutant("near_hit_never_stale", "proxy/proxy_hit.c",
           "if ((e = near_get(px, key, now_ms, 1)) == NULL)",
           "if ((e = near_get(px, key, now_ms, 0)) == NULL)",
           ["a_stale_copy_in_memory_is_served_without_redis_while_its_refresh_runs"],
           "every stale hit reads the entry from Redis again"),
    Mutant("stale_copy_asks_for_the_lock_every_hit", "proxy/proxy_hit.c",
           "\t    near_refresh_asked(px, key, rt->lock_poll_ms))",
           "\t    (0 && near_refresh_asked(px, key, rt->lock_poll_ms)))",
           ["stale_hits_while_another_instance_refreshes_ask_redis_once_per_lock_poll"],
           "while another instance refreshes, every stale hit runs the lock script"),
]
