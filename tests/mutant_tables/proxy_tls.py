# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_tls.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    # -- TLS on the listeners (proxy/proxy_tls*.c) -------------------------------
    Mutant("tls_allows_tls11", "proxy/proxy_tls.c",
           "#define TLS_VERSION_MIN\t\tTLS1_2_VERSION",
           "#define TLS_VERSION_MIN\t\tTLS1_1_VERSION",
           ["test_tls"],
           "a client that speaks at most TLS 1.1 is served"),
    Mutant("tls_allows_cbc", "proxy/proxy_tls.c",
           "\t\"ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305\"",
           "\t\"ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305:\"\t\\\n"
           "\t\"ECDHE-ECDSA-AES128-SHA\"",
           ["test_tls"],
           "a CBC suite with SHA-1 is offered in TLS 1.2"),
    Mutant("tls_alpn_mismatch_proceeds", "proxy/proxy_tls.c",
           "\t    sizeof(alpn_protos) - 1, in, inlen) != OPENSSL_NPN_NEGOTIATED)\n"
           "\t\treturn SSL_TLSEXT_ERR_ALERT_FATAL;",
           "\t    sizeof(alpn_protos) - 1, in, inlen) != OPENSSL_NPN_NEGOTIATED)\n"
           "\t\treturn SSL_TLSEXT_ERR_NOACK;",
           ["test_tls"],
           "a client that asked for h2 alone is served HTTP/1.1 (ALPACA)"),
    Mutant("tls_plaintext_unanswered", "proxy/proxy_tls.c",
           "\t\tif (c->fail == TLS_FAIL_PLAINTEXT)\n\t\t\tanswer_plaintext(SSL_get_fd(ssl));",
           "\t\t(void)answer_plaintext;",
           ["test_tls"],
           "plain HTTP on a TLS port is closed without its 400"),
    Mutant("tls_connection_without_reference", "proxy/proxy_tls.c",
           "\tc->tls = tls_ref(t);", "\tc->tls = t;",
           ["test_tls"],
           "a reload frees the context open connections still use"),
    Mutant("tls_done_counted_as_failed", "proxy/proxy_tls.c",
           "\tif (c->live && c->state != TLS_HANDSHAKE_DONE)",
           "\tif (c->live)",
           ["test_tls"],
           "every finished handshake is counted again as failed when it closes"),
    Mutant("tls_close_without_notify", "proxy/proxy_tls.c",
           "\tif (SSL_shutdown(ssl) < 0)", "\tif (0)",
           ["test_tls"],
           "a Connection: close response ends in a cut, not a TLS close"),
    Mutant("tls_two_tickets_a_handshake", "proxy/proxy_tls.c",
           "\tSSL_CTX_set_num_tickets(ctx, 1);\n", "",
           ["one_session_ticket_a_handshake_and_it_resumes"],
           "every full handshake seals and sends a second ticket nobody needs"),
]
