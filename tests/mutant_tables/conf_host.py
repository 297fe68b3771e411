# SPDX-License-Identifier: MIT
"""Mutants of conf/conf_host.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("host_keyed_any_port_without_hosts", "conf/conf_host.c",
           'return !keyed || pattern_takes(c, "*", 1, &h);',
           "return 1;",
           ["key_host_keys_only_the_ports_the_listener_serves", "test_conf"],
           "with key_host, every port a client names makes a key and a fetch"),
    Mutant("conf_hosts_first_pattern_only", "conf/conf_host.c",
           "\t\t\treturn 1;\n\t\tp += len;\n\t}\n\treturn 0;",
           "\t\t\treturn 1;\n\t\tbreak;\n\t}\n\treturn 0;",
           ["test_conf"],
           "only the first name of hosts is served"),
    Mutant("conf_no_authority_allowed_with_a_list", "conf/conf_host.c",
           "\t\treturn c->hosts[0] == '\\0';\t/* RFC 9112 3.2: no authority */",
           "\t\treturn 1;\t/* RFC 9112 3.2: no authority */",
           ["test_conf"],
           "a request without a Host passes a hosts list"),
    Mutant("audit_conf_cidr_masks_the_low_bits", "conf/conf_host.c",
           "(0xff << (8 - rest)) & 0xff) == 0)",
           "(0xff >> (8 - rest)) & 0xff) == 0)",
           ["test_conf", "trusted_proxies_off_a_byte_boundary_cover_their_prefix_only"],
           "a trusted_proxies prefix not on a byte boundary (/12, /20) compares "
           "the wrong bits"),
]
