# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_tls_ticket.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("tls_ticket_keys_per_context", "proxy/proxy_tls_ticket.c",
           "\tassert(chain.ready);\n",
           "\tchain.ready = 0;\n\t(void)ticket_init(err, errlen);\n",
           ["test_tls"],
           "every reload (each worker's own) forgets the tickets issued before it"),
    Mutant("tls_ticket_not_renewed", "proxy/proxy_tls_ticket.c",
           "\treturn enc ? SEALED : RENEW;", "\treturn SEALED;",
           ["test_tls"],
           "a TLS 1.3 client that resumed once does a full handshake next"),
]
