# SPDX-License-Identifier: MIT
"""Mutants of conf/conf_key.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("secret_readable_by_others_accepted", "conf/conf_key.c",
           "if ((st.st_mode & (S_IRWXO | S_IWGRP)) != 0) {", "if (0) {",
           ["per_credential_needs_a_private_secret_file", "test_conf"],
           "a secret any local user can read keys every credential's digest"),
    Mutant("per_credential_without_secret_accepted", "conf/conf_key.c",
           "r->cache_authorized == CONF_AUTHZ_CREDENTIAL &&\n\t    c->key_secret_len == 0",
           "0",
           ["per_credential_needs_a_private_secret_file", "test_conf"],
           "credential digests keyed with nothing: a token can be tested against a key"),
    Mutant("credential_header_in_key_headers_accepted", "conf/conf_key.c",
           "if (fields_name(r->key_headers, name)) {",
           "if (fields_name(r->key_headers, name) && 0) {",
           ["test_conf"], "a token in clear in every Redis key"),
    Mutant("credential_header_hop_by_hop_accepted", "conf/conf_key.c",
           "if (strcasecmp(v, refused[i].name) == 0) {", "if (0) {",
           ["test_conf"], "credential_header = Proxy-Authorization: keyed on a "
           "field the origin never sees"),
    Mutant("credential_header_without_per_credential_accepted", "conf/conf_key.c",
           "if (strcasecmp(r->credential_header, CONF_CREDENTIAL_HEADER) != 0 &&",
           "if (0 &&",
           ["test_conf"], "credential_header on a shared route keys nothing"),
    Mutant("key_secret_others_may_write", "conf/conf_key.c",
           "if ((st.st_mode & (S_IRWXO | S_IWGRP)) != 0) {",
           "if ((st.st_mode & (S_IROTH | S_IWGRP)) != 0) {",
           ["test_conf"],
           "a key secret others may write (0602) is used"),
]
