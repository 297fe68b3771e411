# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_jwt.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("jwt_leeway_ignored", "proxy/proxy_jwt.c",
           "\tstruct jwt_policy policy = { c->jwt_leeway_ms / MS_PER_S,",
           "\tstruct jwt_policy policy = { 0,",
           ["two_users_of_one_role_share_one_origin_fetch_and_other_claims_never_do"],
           "jwt_leeway is not applied: a token a clock's skew past exp is refused"),
    Mutant("jwt_key_from_the_token", "proxy/proxy_jwt.c",
           "\tkeyrule_digest_part(&d, set, len);",
           "\tkeyrule_digest_part(&d, v->token, v->len);",
           ["two_users_of_one_role_share_one_origin_fetch_and_other_claims_never_do"],
           "the key is the token's digest, not its claim set's: users of one role "
           "never share and a renewed token starts cold"),
]
