# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_feed.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    # -- the change feeds (proxy/proxy_feed.c, proxy_apply.c, changes/) --------
    Mutant("ack_before_the_purge", "proxy/proxy_feed.c",
           "\tf->commits++;\n\tapply_commit(f->ap, c);",
           "\tf->commits++;\n\tchanges_ack(f->ch, c->lsn);\n\tapply_commit(f->ap, c);",
           ["redis_stopped_for_10_s_nothing_acknowledged_then_everything_applied"],
           "a commit is acknowledged to PostgreSQL before its purges are applied: "
           "with Redis away, it is lost"),
    Mutant("leader_reads_on_after_losing_its_lease", "proxy/proxy_feed.c",
           "\t} else if (a->r == LEADER_OTHER && f->leading) {",
           "\t} else if (a->r == LEADER_OTHER && f->leading && 0) {",
           ["one_leader_and_a_leader_that_loses_its_lease"],
           "a leader whose lease another holds reads until its own time runs out"),
]
