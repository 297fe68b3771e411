# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_forward.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    # -- what goes upstream (proxy/proxy_req.c) ----------------------------------
    Mutant("no_x_forwarded_for", "proxy/proxy_forward.c",
           "if (peer != NULL) {\n\t\tevbuffer_add_printf(xff, \"%s\", peer);",
           "if (0) {\n\t\tevbuffer_add_printf(xff, \"%s\", peer);",
           ["client_forwarded_headers_are_replaced_by_corrals_own"],
           "the origin cannot tell who asked"),
    Mutant("no_x_forwarded_host", "proxy/proxy_forward.c",
           "if (name[0] != '\\0')",
           "if (0)",
           ["client_forwarded_headers_are_replaced_by_corrals_own"],
           "the origin cannot tell which host was asked for"),
    # -- hosts: what the key ignores never reaches the origin (common/host.c,
    #    conf/conf_host.c, proxy/proxy_forward.c) -------------------------------
    Mutant("host_client_name_sent_unkeyed", "proxy/proxy_forward.c",
           "const char *name = keyed ? asked : conf->forwarded_host;",
           "const char *name = asked;",
           ["a_clients_host_never_reaches_a_shared_entry",
            "without_key_host_the_origin_hears_the_canonical_name"],
           "one client's Host builds the page every other name is served"),
    Mutant("host_trusted_forwarded_host_kept", "proxy/proxy_forward.c",
           "(fwd = hdr_forwarded_without(h->value, \"host\")) != NULL",
           "(fwd = strdup(h->value)) != NULL",
           ["without_key_host_the_origin_hears_the_canonical_name",
            "trusted_proxies_keep_and_extend_forwarded_headers"],
           "a trusted proxy's Forwarded host= reaches the origin past the key"),
    Mutant("host_keyed_raw", "proxy/proxy_forward.c",
           "if (raw[0] == '\\0' || host_parse(raw, strlen(raw), &h) == -1)\n\t\treturn raw;",
           "if (1)\n\t\treturn raw;",
           ["key_host_keys_only_the_ports_the_listener_serves"],
           "A.EXAMPLE:080 and a.example are two keys and two fetches"),
]
