# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_conn_send.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("sendfile_rest_from_the_files_start", "proxy/proxy_conn_send.c",
           "\tif (evbuffer_add_file_segment(out, seg, (ev_off_t)skip,",
           "\tif (evbuffer_add_file_segment(out, seg, (ev_off_t)0,",
           ["large_near_cache_hits_go_out_whole_to_a_slow_reader"],
           "what a slow reader's socket did not take is sent again from the body's start"),
    Mutant("sendfile_sent_bytes_forgotten", "proxy/proxy_conn_send.c",
           "\tsent += off;\n", "",
           ["large_near_cache_hits_go_out_whole_to_a_slow_reader",
            "a_large_body_goes_by_sendfile_from_its_eighth_answer_and_its_file_goes_with_it"],
           "bytes sendfile sent are queued again: the client reads the body twice"),
]
