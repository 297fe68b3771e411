# SPDX-License-Identifier: MIT
"""Mutants of cache/cache_sub.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("subscriber_auth_refusal_ignored", "cache/cache_sub.c",
           "log_debug(\"redis: subscriber: AUTH refused: %s\", reply->str);\n\t\tlose(s);",
           "log_debug(\"redis: subscriber: AUTH refused: %s\", reply->str);",
           ["wrong_password_said_once_served_from_origin_and_back_after_reload"],
           "a subscriber connection Redis refused stays open, unsubscribed, after "
           "the password is fixed: no fills or purges heard"),
    Mutant("subscriber_unneeded_password_taken_as_refusal", "cache/cache_sub.c",
           "if (reply->type == REDIS_REPLY_ERROR &&\n\t    !adapter_auth_not_needed(reply->str)) {",
           "if (reply->type == REDIS_REPLY_ERROR) {",
           ["password_for_a_redis_that_wants_none_is_only_a_warning"],
           "a password Redis does not ask for loses every subscriber connection"),
]
