# SPDX-License-Identifier: MIT
"""Mutants of cache/cache_control.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("inspect_lock_unread", "cache/cache_control.c",
           "reply_text(reply->element[2], in.lock_token, sizeof(in.lock_token));",
           "(void)0;",
           ["entry_shows_what_redis_holds_field_by_field"],
           "/entry shows no lock while a fetch holds one"),
    Mutant("maintenance_not_kept", "cache/cache_control.c",
           "\"  redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])\\n\"", "\"\"",
           ["maintenance_serves_what_is_stored_and_spares_the_origin"],
           "a new or restarted instance sends the origin what the fleet avoids"),
    Mutant("maintenance_not_announced", "cache/cache_control.c",
           "\"redis.call('PUBLISH', ARGV[4], ARGV[5])\\n\"\n\t\"return 1\\n\";",
           "\"return 1\\n\";",
           ["maintenance_serves_what_is_stored_and_spares_the_origin"],
           "the other instances never hear that a route went back to normal"),
]
