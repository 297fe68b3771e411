# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_stream.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("stream_without_back_pressure", "proxy/proxy_stream.c",
           "if (fastest(st) <= st->window)\n\t\treturn 0;\n\tst->paused = 1;",
           "if (1)\n\t\treturn 0;\n\tst->paused = 1;",
           ["a_long_body_streams_with_bounded_memory"],
           "a slow client makes the fetch buffer the whole body"),
    Mutant("siblings_lead_the_stream", "proxy/proxy_stream.c",
           "stream_join(st, w, resp, w == first) == -1)\n\t\t\t\tcontinue;\n\t\t\tTAILQ_REMOVE(list, w, flight_link);\n\t\t\tw->flight = NULL;\n\t\t\tled |= w == first;",
           "stream_join(st, w, resp, first != NULL && !led) == -1)\n\t\t\t\tcontinue;\n\t\t\tTAILQ_REMOVE(list, w, flight_link);\n\t\t\tw->flight = NULL;\n\t\t\tled |= first != NULL;",
           ["waiters_of_both_workers_get_the_body_as_it_arrives"],
           "the sibling's stream, first in the list, is counted as the fetching request"),
    # -- streams at the fastest client's pace (proxy/proxy_stream.c, -----------
    #    proxy_flight.c, proxy_http.c)
    Mutant("stream_never_detaches_a_laggard", "proxy/proxy_stream.c",
           "\tif (low <= st->window)\n\t\tdetach_laggards(st, len);",
           "\tif (0)\n\t\tdetach_laggards(st, len);",
           ["test_stream", "a_stalled_reader_is_detached",
            "a_stalled_reader_of_a_body_too_long_to_keep_is_cut_alone"],
           "a stalled client is never let go: its share of the body grows without bound"),
    Mutant("stream_laggard_skips_bytes", "proxy/proxy_stream.c",
           "\t\tw->fed += evbuffer_get_length(piece);",
           "\t\tw->fed += 2 * evbuffer_get_length(piece);",
           ["test_stream", "a_stalled_reader_is_detached",
            "a_request_that_joins_once_the_body_has_begun"],
           "a client fed from the kept body misses part of it"),
]
