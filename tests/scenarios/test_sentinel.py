"""Corral behind Redis Sentinel (1 primary, 1 replica, 3 sentinels): it
asks the sentinels for the primary, and follows a failover."""

from harness import entry_key, expect, expect_eq, scenario, stampede, wait_for
from harness.cluster import expect_all_ok, redis_figures, start_sentinels

ROUTE = {"/": {"lock_poll": "5s"}}


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
