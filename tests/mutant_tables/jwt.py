# SPDX-License-Identifier: MIT
"""Mutants of auth/jwt.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("jwt_exp_not_checked", "auth/jwt.c",
           "\tif (has_exp && ck->now >= exp + ck->leeway)",
           "\tif (0 && has_exp && ck->now >= exp + ck->leeway)",
           ["every_bad_token_is_passed_uncached_and_never_shared",
            "every_bad_token_is_refused_401_with_jwt_reject"],
           "an expired token is verified and served its claims' entry"),
    Mutant("jwt_alg_none_accepted", "auth/jwt.c",
           "\tif ((r = read_token(&t, token, len, &rd, err, errlen)) == JWT_OK &&\n"
           "\t    (r = check_signature(keys, &t, err, errlen)) == JWT_OK &&",
           "\tif (((r = read_token(&t, token, len, &rd, err, errlen)) == JWT_OK ||\n"
           "\t    r == JWT_ALG_NONE) && (r == JWT_ALG_NONE ||\n"
           "\t    (r = check_signature(keys, &t, err, errlen)) == JWT_OK) &&",
           ["every_bad_token_is_passed_uncached_and_never_shared",
            "every_bad_token_is_refused_401_with_jwt_reject"],
           "an unsigned token (alg none) is taken at its word and served its "
           "claims' entry"),
    Mutant("jwt_signature_not_checked", "auth/jwt.c",
           "\t\tif ((v = verify_with(&keys->key[i], t)) == 1)",
           "\t\tif ((v = verify_with(&keys->key[i], t)) >= 0)",
           ["test_jwt", "every_bad_token_is_passed_uncached_and_never_shared",
            "every_bad_token_is_refused_401_with_jwt_reject"],
           "a tampered payload under the old signature is verified and keyed by "
           "the claims it was given"),
    Mutant("jwt_claims_read_when_verification_failed", "auth/jwt.c",
           "\t    (r = check_signature(keys, &t, err, errlen)) == JWT_OK &&\n"
           "\t    (r = read_claims(&t, claims, err, errlen)) == JWT_OK) {",
           "\t    ((r = check_signature(keys, &t, err, errlen)) == JWT_OK ||\n"
           "\t    r == JWT_KEY_UNKNOWN || r == JWT_BAD_SIGNATURE) &&\n"
           "\t    (r = read_claims(&t, claims, err, errlen)) == JWT_OK) {",
           ["test_jwt", "every_bad_token_is_passed_uncached_and_never_shared",
            "every_bad_token_is_refused_401_with_jwt_reject"],
           "the payload's claims are taken when the signature did not verify or "
           "no key has the kid: anyone can claim any role"),
]
