# SPDX-License-Identifier: MIT
"""Mutants of cache/cache_lease.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    # -- the origin budget (cache/cache_lease.c, proxy/proxy_budget.c) ------------
    Mutant("slot_never_released", "cache/cache_lease.c",
           "\"local n = redis.call('ZREM', KEYS[1], ARGV[1])\\n\"",
           "\"local n = 0\\n\"",
           ["flood_of_cold_keys_never_exceeds_the_fleet_budget"],
           "a finished fetch keeps its slot until its lease runs out"),
    Mutant("slot_lease_never_expires", "cache/cache_lease.c",
           "\"local reaped = redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)\\n\"",
           "\"local reaped = 0\\n\"",
           ["instance_killed_holding_slots_gives_them_back_within_the_lease"],
           "a dead instance's slots are lost to the fleet for good"),
    Mutant("slot_priorities_ignored", "cache/cache_lease.c",
           "\"  local free = max == 0 or redis.call('ZCARD', KEYS[1]) + ahead < max\\n\"",
           "\"  local free = max == 0 or redis.call('ZCARD', KEYS[1]) < max\\n\"",
           ["budget_full_of_pass_through_gives_the_next_slot_to_a_cold_miss"],
           "a freed slot goes to whoever asks first, not to the waiting cold miss"),
    Mutant("lease_release_without_publish", "cache/cache_lease.c",
           "\"  redis.call('SPUBLISH', ARGV[3], 'freed')\\n\"", "\"\"",
           ["budget_full_of_pass_through_gives_the_next_slot_to_a_cold_miss"],
           "other instances' waiters sleep until their re-check, not woken"),
    Mutant("slot_release_without_publish", "cache/cache_lease.c",
           "\"  redis.call('SPUBLISH', ARGV[3], 'freed')\\n\"", "\"\"",
           ["budget_full_of_pass_through_gives_the_next_slot_to_a_cold_miss"],
           "other instances' waiters sleep until their re-check, not woken"),
    # -- cache/cache_lease.c --
    Mutant("lease_one_over_the_budget", "cache/cache_lease.c",
           '"  local free = max == 0 or redis.call(\'ZCARD\', KEYS[1]) + ahead < max\\n"',
           '"  local free = max == 0 or redis.call(\'ZCARD\', KEYS[1]) + ahead <= max\\n"',
           ["flood_of_cold_keys_never_exceeds_the_fleet_budget"],
           "the fleet sends the origin max_requests + 1 at once"),
    Mutant("lease_dead_tickets_kept", "cache/cache_lease.c",
           '"  redis.call(\'ZREM\', KEYS[2], dead[i])\\n"',
           '""',
           ["instance_killed_holding_slots_gives_them_back_within_the_lease"],
           "a dead instance's queued tickets stay ahead of the living for good"),
    Mutant("lease_dead_instances_counted", "cache/cache_lease.c",
           '\t"redis.call(\'ZREMRANGEBYSCORE\', KEYS[1], \'-inf\', now)\\n"\n\t"redis.call(\'ZADD\', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])\\n"',
           '\t"redis.call(\'ZADD\', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])\\n"',
           ["instance_killed_holding_slots_gives_them_back_within_the_lease"],
           "a dead instance is counted alive: the others' local shares stay small"),
    Mutant("pool_per_server_cap_ignored", "cache/cache_lease.c",
           "\"  if left > 0 then\\n\"", "\"  if true then\\n\"",
           ["origin_budget_and_per_server_cap_apply_to_each_pool",
            "per_server_cap_holds_across_two_instances_of_two_workers"],
           "one server takes more than max_requests_per_server"),
    Mutant("server_slot_only_on_the_first_choice", "cache/cache_lease.c",
           "\"    room = room + left\\n\"",
           "\"    if i == 1 then room = room + left end\\n\"",
           ["full_server_sends_the_request_to_another_with_room_at_once"],
           "a request whose preferred server is full waits for it, though another "
           "has room"),
    Mutant("dead_instances_server_slots_never_reaped", "cache/cache_lease.c",
           "\t\"for i = 4, 3 + n do\\n\"\n"
           "\t\"  reaped = reaped + redis.call('ZREMRANGEBYSCORE', KEYS[i], '-inf', now)\\n\"\n"
           "\t\"end\\n\"\n", "",
           ["instance_killed_holding_a_server_slot_gives_it_back_within_the_lease"],
           "a killed instance's server slots stay taken: 503 origin-busy for good"),
]
