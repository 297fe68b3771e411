# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_tls_load.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("tls_expired_certificate_taken", "proxy/proxy_tls_load.c",
           "\tif (X509_cmp_current_time(na) < 0) {",
           "\tif (0) {",
           ["test_tls_check"],
           "an expired certificate is served"),
    Mutant("tls_encrypted_key_unexplained", "proxy/proxy_tls_load.c",
           "\t*(int *)arg = 1;", "\t(void)arg;",
           ["test_tls_check"],
           "an encrypted key is called \"no PEM private key\""),
]
