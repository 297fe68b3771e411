# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_linger.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("linger_bytes_unbounded", "proxy/proxy_linger.c",
           "if (n == 0 || g->dropped >= LINGER_BYTES_MAX ||",
           "if (n == 0 ||",
           ["lingering_413_is_closed_once_its_drain_bound_is_reached"],
           "a refused upload is read and dropped for 5 s whatever its size"),
    Mutant("linger_time_unbounded", "proxy/proxy_linger.c",
           "if ((what & EV_TIMEOUT) || util_now_ms() >= g->until_ms) {",
           "if (what & EV_TIMEOUT) {",
           ["lingering_413_is_closed_once_its_drain_bound_is_reached"],
           "a client that trickles bytes keeps a refused connection open for ever"),
    Mutant("linger_count_unbounded", "proxy/proxy_linger.c",
           "l->n >= l->max)",
           "l->n >= l->max * 2)",
           ["refused_connections_past_the_lingering_bound_are_closed_at_once"],
           "refused connections linger past LINGER_MAX, holding descriptors"),
]
