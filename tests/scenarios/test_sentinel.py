# SPDX-License-Identifier: MIT
"""Corral behind Redis Sentinel (1 primary, 1 replica, 3 sentinels): it
asks the sentinels for the primary, and follows a failover."""

import socket
import time

from harness import entry_key, expect, expect_eq, scenario, stampede, wait_for
from harness.cluster import MASTER_NAME, expect_all_ok, redis_figures, start_sentinels

ROUTE = {"/": {"lock_poll": "5s"}}


class HungSentinel:
    """An address that takes connections and never answers: a sentinel
    that hangs (stopped, or its host overloaded)."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.address = "127.0.0.1:%d" % self.sock.getsockname()[1]

    def stop(self):
        self.sock.close()


@scenario(timeout=180)
def sentinel_primary_killed_corral_follows_the_promoted_replica(env):
    group, origin = start_sentinels(env), env.origin(delay="300ms")
    fleet = [env.corral(group.address, origin, routes=ROUTE,
                        extra=group.corral_extra(), wait_redis=True) for _ in range(2)]
    expect_eq([n["address"] for n in redis_figures(fleet[0])["nodes"]],
              [group.primary.address], "the node corral uses")
    expect_eq(redis_figures(fleet[0])["mode"], "sentinel", "mode in /stats")

    expect_all_ok(stampede(fleet, 100, "/before"), "cold stampede")
    expect_eq(origin.count("/before"), 1, "origin fetches before the failover")
    expect(group.primary.cmd("EXISTS", entry_key("/before")) == 1, "entry on the primary")

    group.primary.kill()
    answers = []
    while group.named_primary() != group.replica.address:
        answers.append(fleet[len(answers) % 2].get(f"/during/{len(answers)}"))
        expect(len(answers) < 2000, "the sentinels never promoted the replica")
    expect_all_ok(answers, "requests during the failover")

    wait_for(lambda: all(redis_figures(c)["up"] and
                         [n["address"] for n in redis_figures(c)["nodes"]] ==
                         [group.replica.address] for c in fleet),
             timeout=15, what="every corral to use the promoted replica")
    expect_all_ok(stampede(fleet, 100, "/after"), "cold stampede after the failover")
    expect_eq(origin.count("/after"), 1, "origin fetches after the failover")
    expect(group.replica.reconnect().cmd("EXISTS", entry_key("/after")) == 1,
           "the new entry is on the promoted replica")


@scenario(timeout=120)
def sentinel_manual_failover_is_followed_at_the_switch_with_the_old_primary_up(env):
    # SENTINEL FAILOVER with the old primary still up: nothing drops a
    # connection, so only +switch-master tells Corral. The sentinels demote
    # the old primary only at their next look at it (~10 s), and writes it
    # takes until then are lost: Corral must follow within a second or two.
    # A second instance names a hung sentinel first: it asks the next, and
    # listens for +switch-master to the next.
    group, origin = start_sentinels(env), env.origin()
    corral = env.corral(group.address, origin, routes=ROUTE,
                        extra=group.corral_extra(), wait_redis=True)
    hung = env.track(HungSentinel())
    extra = group.corral_extra()
    extra["redis"]["address"] = f"{hung.address}, {group.address}"
    second = env.corral(group.address, origin, routes=ROUTE, extra=extra, wait_redis=True)
    expect_eq([n["address"] for n in redis_figures(second)["nodes"]],
              [group.primary.address], "the node the second instance found past the hung one")
    expect_all_ok(stampede(corral, 10, "/before"), "before the failover")
    wait_for(lambda: group.replica.cmd("EXISTS", entry_key("/before")) == 1,
             what="the replica to have the entry (it is in sync)")

    group.sentinels[0].cmd("SENTINEL", "FAILOVER", MASTER_NAME)
    wait_for(lambda: group.named_primary() == group.replica.address, timeout=20,
             what="the sentinels to name the replica")
    t0 = time.monotonic()
    wait_for(lambda: all([n["address"] for n in redis_figures(c)["nodes"]] ==
                         [group.replica.address] and redis_figures(c)["up"]
                         for c in (corral, second)), timeout=5,	# ~10 s unwarned
             what="both instances to follow +switch-master to the new primary")
    took = time.monotonic() - t0
    expect(group.primary.running(), "the old primary is still up")
    r = corral.get("/after")
    expect_eq((r.status, r.cache_status.stored), (200, True), f"a cold miss after the switch: {r}")
    expect_eq(group.replica.reconnect().cmd("EXISTS", entry_key("/after")), 1,
              f"the write on the new primary ({took:.1f} s after the switch)")
