# SPDX-License-Identifier: MIT
"""Mutants of common/host.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("host_port_unchecked", "common/host.c",
           "return port == NULL ? 0 : port_parse(port, portlen, &h->port);",
           "return 0;",
           ["a_host_with_a_bad_port_is_refused_before_the_origin", "test_frame"],
           "app.test: and app.test:evil are served as app.test"),
    Mutant("host_name_allows_every_port", "common/host.c",
           "if (h->port != HOST_PORT_DEFAULT && h->port != listen_port)\n\t\t\treturn 0;",
           "if (0)\n\t\t\treturn 0;",
           ["a_host_with_a_bad_port_is_refused_before_the_origin",
            "key_host_keys_only_the_ports_the_listener_serves", "test_conf"],
           "a name in hosts lets any port in, and each port makes a key"),
    Mutant("host_wildcard_any_suffix", "common/host.c",
           "return h->len > sfx && strncasecmp(h->name + h->len - sfx,\n\t\t    p + 1, sfx) == 0;",
           "return h->len >= sfx - 1 && strncasecmp(h->name + h->len - sfx + 1,\n"
           "\t\t    p + 2, sfx - 1) == 0;",
           ["a_host_with_a_bad_port_is_refused_before_the_origin",
            "hosts_allow_list_answers_421_to_other_names", "test_conf"],
           "*.example.com lets evilexample.com and example.com in"),
    Mutant("host_wildcard_matches_inside_the_name", "common/host.c",
           "return h->len > sfx && strncasecmp(h->name + h->len - sfx,\n\t\t    p + 1, sfx) == 0;",
           "return h->len > sfx && memmem(h->name, h->len, p + 1, sfx) != NULL;",
           ["test_conf", "hosts_allow_list_answers_421_to_other_names"],
           "*.example.com lets a.example.com.evil in"),
    Mutant("host_name_matches_as_a_prefix", "common/host.c",
           "return h->len == namelen && strncasecmp(h->name, p, namelen) == 0;",
           "return h->len >= namelen && strncasecmp(h->name, p, namelen) == 0;",
           ["test_conf", "hosts_allow_list_answers_421_to_other_names"],
           "app.test lets app.test.evil in"),
]
