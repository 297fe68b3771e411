# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_req.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("cut_stream_ends_as_whole", "proxy/proxy_req.c",
           "if (req->stream_end > 0)\n\t\treturn REQ_DRAIN;",
           "if (1)\n\t\treturn REQ_DRAIN;",
           ["a_body_cut_short_is_never_served_whole"],
           "a client takes a cut body for a whole one"),
    Mutant("passed_get_invalidates", "proxy/proxy_req.c",
           "\t\t.write = unsafe && req->waiter.spec == NULL,",
           "\t\t.write = 1,",
           ["an_uncacheable_key_skips_the_lock_fleet_wide"],
           "every GET passed upstream drops its key's entry fleet-wide"),
    Mutant("client_gone_unnoticed", "proxy/proxy_req.c",
           "\treq->answer.outcome = OUT_GONE;\n\treq_finish(req, END_REPLY);",
           "\treq->answer.outcome = OUT_GONE;",
           ["clients_that_leave_while_queued_cost_the_origin_nothing"],
           "a request whose client left keeps its place in the origin queue, and its fetch goes"),
    Mutant("coding_live_stream_to_every_waiter", "proxy/proxy_req.c",
           "\t    !coding_takes(&req->ev->in, &resp->headers)))",
           "\t    !coding_takes(&req->ev->in, &req->ev->in)))",
           ["waiters_of_a_cold_miss_with_mixed_codings_share_one_fetch"],
           "a live gzip response streams to waiters that do not take gzip"),
]
