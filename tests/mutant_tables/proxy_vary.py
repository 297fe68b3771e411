# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_vary.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("variant_ignores_header_values", "proxy/proxy_vary.c",
           "\t\t\tkeyrule_digest_part(&d, kv->value, strlen(kv->value));",
           "\t\t\tkeyrule_digest_part(&d, \"\", 0);",
           ["vary_stores_one_variant_per_header_value"],
           "one variant is served whatever the headers it varies on say"),
    Mutant("vary_credential_hashed_unkeyed", "proxy/proxy_vary.c",
           "\tkeyrule_digest_init(&d, vk->secret != NULL ? vk->secret : \"\",\n"
           "\t    vk->secret != NULL ? vk->secret_len : 0, VARIANT_LABEL);",
           "\tkeyrule_digest_init(&d, \"\", 0, VARIANT_LABEL);",
           ["vary_on_a_credential_keeps_no_unkeyed_hash_of_it_in_redis"],
           "a Redis key holds an unkeyed hash of the token: guesses can be "
           "tested against it"),
    Mutant("vary_credential_kept_per_credential", "proxy/proxy_vary.c",
           "if (vk->keyed_header != NULL &&\n\t\t    (field_is_credential(name, *n) ||",
           "if (0 &&\n\t\t    (field_is_credential(name, *n) ||",
           ["vary_on_a_credential_keeps_no_unkeyed_hash_of_it_in_redis"],
           "a per-credential key gets a variant named by the token's unkeyed hash"),
    # -- variant ids no one can make collide (proxy/proxy_vary.c) -----------------
    Mutant("variant_id_of_the_values_lengths_only", "proxy/proxy_vary.c",
           "\t\t\tkeyrule_digest_part(&d, kv->value, strlen(kv->value));",
           "\t\t\tkeyrule_digest_part(&d, kv->value, 0 * strlen(kv->value));",
           ["values_computed_to_collide_never_share_a_variant"],
           "two values of one length share a variant: one is served the other's answer"),
]
