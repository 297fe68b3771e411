# SPDX-License-Identifier: MIT
"""Mutants of cache/cache_sentinel.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("sentinel_auth_skipped", "cache/cache_sentinel.c",
           "\t(void)adapter_auth(s->ask, &s->auth, on_ask_auth, NULL);\n",
           "\t(void)on_ask_auth;\n",
           ["sentinel_requiring_auth_is_asked_and_listened_to_with_credentials"],
           "the sentinels are asked without AUTH: one that wants it never answers"),
    Mutant("sentinel_feed_without_auth", "cache/cache_sentinel.c",
           "s->auth.user,\n\t    s->auth.pass, NULL, on_feed_reply, s);",
           "s->auth.user,\n\t    NULL, NULL, on_feed_reply, s);",
           ["sentinel_requiring_auth_is_asked_and_listened_to_with_credentials"],
           "+switch-master goes unheard from a sentinel that wants a password"),
    Mutant("sentinel_switch_master_ignored", "cache/cache_sentinel.c",
           "\ts->hooks->primary(host, port, s->arg);", "\t(void)port;",
           ["sentinel_manual_failover_is_followed_at_the_switch"],
           "after a manual failover, writes go to the demoted primary for ~10 s, then are lost"),
    Mutant("audit_sentinel_asks_the_same_sentinel_again", "cache/cache_sentinel.c",
           "\tif (!ok)\n\t\ts->ask_at++;\n\ts->hooks->answered(ok, s->arg);\n",
           "\ts->hooks->answered(ok, s->arg);\n",
           ["sentinel_manual_failover_is_followed_at_the_switch"],
           "a sentinel that does not answer is asked again instead of the next"),
    Mutant("sentinel_feed_stays_on_a_hung_sentinel", "cache/cache_sentinel.c",
           "\tevtimer_add(s->feed_timer, &tv);\n",
           "\t(void)tv;\n",
           ["sentinel_manual_failover_is_followed_at_the_switch"],
           "a first sentinel that hangs keeps the +switch-master feed: a manual "
           "failover is not heard"),
]
