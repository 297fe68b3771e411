# SPDX-License-Identifier: MIT
"""Mutants of auth/jwt_claims.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("jwt_claim_dropped_from_key", "auth/jwt_claims.c",
           "\twhile ((n = next_name(&names, name)) > 0)",
           "\tif ((n = next_name(&names, name)) > 0)",
           ["two_users_of_one_role_share_one_origin_fetch_and_other_claims_never_do"],
           "only the first of jwt_claims is keyed: two tenants of one role share"),
]
