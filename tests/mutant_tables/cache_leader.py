# SPDX-License-Identifier: MIT
"""Mutants of cache/cache_leader.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("two_leaders", "cache/cache_leader.c",
           "\t\"elseif not cur and ARGV[3] == '1' and\\n\"\n"
           "\t\"    redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then\\n\"",
           "\t\"elseif ARGV[3] == '1' and\\n\"\n"
           "\t\"    redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2]) then\\n\"",
           ["one_leader_and_a_leader_that_loses_its_lease"],
           "every instance takes the lease: two leaders read (and are refused) in turn"),
]
