# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_conn_reply.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("rendered_hit_hides_the_close", "proxy/proxy_conn_reply.c",
           '\t\treturn "Connection: close\\r\\n";',
           '\t\treturn "";',
           ["a_hit_head_has_each_field_once"],
           "a hit's head does not say the connection closes after it"),
    Mutant("interim_not_relayed", "proxy/proxy_conn_reply.c",
           "if (r->minor < 1 || c->replied || c->streaming || c->st == CS_DEAD)",
           "if (1)",
           ["interim_103_is_relayed_before_the_response"],
           "a 103 Early Hints from the origin never reaches the client"),
    # -- Corral's own HTTP server (proxy/proxy_conn*.c) ---------------------------
    Mutant("server_head_carries_a_body", "proxy/proxy_conn_reply.c",
           "\treturn r->method != HM_HEAD && status >= 200 && status != 204 &&",
           "\treturn status >= 200 && status != 204 &&",
           ["a_head_carries_no_body"],
           "a HEAD's answer carries the GET's body, read as the next answer"),
    Mutant("server_unknown_length_not_chunked", "proxy/proxy_conn_reply.c",
           "\tint chunked = with && !sized && r->minor >= 1;",
           "\tint chunked = 0;",
           ["a_body_of_unknown_length_is_chunked"],
           "an HTTP/1.1 client gets a body of unknown length ended by the close"),
    Mutant("server_chunked_for_http10", "proxy/proxy_conn_reply.c",
           "\tint chunked = with && !sized && r->minor >= 1;",
           "\tint chunked = with && !sized;",
           ["a_body_of_unknown_length_is_chunked"],
           "an HTTP/1.0 client gets chunked coding it cannot read"),
    Mutant("tls_hits_make_body_files", "proxy/proxy_conn_reply.c",
           "\treturn r->conn->bev == NULL;", "\treturn 1;",
           ["large_hits_over_tls_go_from_memory_and_plain_ones_from_a_file"],
           "TLS hits make files they can never send from (a second copy for nothing)"),
]
