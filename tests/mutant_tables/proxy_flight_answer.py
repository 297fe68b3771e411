# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_flight_answer.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    # -- peer streaming between workers (proxy/proxy_peer.c, proxy_flight.c) ----
    Mutant("peer_never_asked", "proxy/proxy_flight_answer.c",
           "(fl->peer_slot = peer_find(fl->px, fl->key)) >= 0)",
           "0 && (fl->peer_slot = peer_find(fl->px, fl->key)) >= 0)",
           ["waiters_of_both_workers_get_the_body_as_it_arrives"],
           "the sibling's waiters get the body only once it is stored"),
    Mutant("stream_late_joiners_each_fetch", "proxy/proxy_flight_answer.c",
           "\tif (rep->partial && waitlist_next_round(&fl->waiters, &fl->verdict)) {",
           "\tif (0 && waitlist_next_round(&fl->waiters, &fl->verdict)) {",
           ["late_joiners_of_a_body_too_long_to_keep_share_one_fetch"],
           "every request that came once a long body was past what is kept fetches its own"),
    Mutant("waiters_in_the_process_retry_a_failed_fetch", "proxy/proxy_flight_answer.c",
           "verdict_set(&fl->verdict, fl->verdict.not_forwarded ? rest : o, rest, e);\n\treturn FL_DONE;",
           "verdict_set(&fl->verdict, fl->verdict.not_forwarded ? rest : o, rest, e);\n"
           "\treturn fl->verdict.not_forwarded ? FL_DONE : FL_LOCK;",
           ["failed_fetch_answers_its_waiters_across_the_fleet"],
           "a failed fetch's flight fetches again for its waiters"),
    Mutant("maintenance_serves_nothing_expired", "proxy/proxy_flight_answer.c",
           "if (fl->prev != NULL && maint_avoids(fl->px, fl->uri))",
           "if (fl->prev != NULL && 0)",
           ["maintenance_serves_what_is_stored_and_spares_the_origin"],
           "in maintenance an entry past stale_while_revalidate gets a 503"),
]
