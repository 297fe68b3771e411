# SPDX-License-Identifier: MIT
"""What a failing or per-user upstream costs: the error backoff starts only
after error_backoff_after failures in a row, fleet-wide, and answers with
the origin's own last error response; a key whose response is one user's
is remembered fleet-wide (hit_for_miss) so that its requests go upstream
in parallel instead of queueing on the lock."""

from harness import (backoff_key, expect, expect_eq, fleet_counters, hfm_key, scenario,
                     stampede, HOST)

PATH = "/e/x"


@scenario
def one_error_is_not_a_backoff_and_the_backoff_replays_the_origins_error(env):
    redis, origin = env.redis(), env.origin()
    origin.script(PATH, status=503, body="origin says no {n}",
                  headers={"X-Origin-Error": "yes", "Retry-After": "5"})
    corral = env.corral(redis, origin, routes={"/": {"error_backoff": "20s"}})
    first = corral.get(PATH, {"Host": HOST})
    expect_eq((first.status, first.text), (503, "origin says no 1"), "the first 503")
    expect_eq(redis.get(backoff_key(PATH)), None, "a backoff after one failure")
    second = corral.get(PATH, {"Host": HOST})
    expect_eq((second.status, second.text), (503, "origin says no 2"),
              "the second request reaches the origin")
    expect_eq(redis.get(backoff_key(PATH)), "503", "the backoff after two failures in a row")
    for i in range(3):
        r = corral.get(PATH, {"Host": HOST})
        expect_eq((r.status, r.text, r.headers.get("X-Origin-Error"),
                   r.headers.get("Retry-After")),
                  (503, "origin says no 2", "yes", "5"),
                  f"request {i} during the backoff: the origin's last response, as sent")
        expect_eq(r.cache_status.detail, "error-backoff", "its Cache-Status detail")
    expect_eq(origin.count(PATH), 2, "origin requests")


@scenario
def error_backoff_after_counts_failures_fleet_wide(env):
    redis, origin = env.redis(), env.origin()
    origin.script(PATH, status=502, body="bad {n}")
    a, b = env.fleet(2, redis, origin, routes={"/": {"error_backoff": "20s",
                                                     "error_backoff_after": "3"}})
    for i, c in enumerate((a, b, a)):
        expect_eq(c.get(PATH, {"Host": HOST}).text, f"bad {i + 1}", f"failure {i + 1}")
    r = b.get(PATH, {"Host": HOST})
    expect_eq((r.status, r.text, r.cache_status.detail), (502, "bad 3", "error-backoff"),
              "the fourth request, on the instance that failed once")
    expect_eq(origin.count(PATH), 3, "origin requests")


@scenario
def an_uncacheable_key_skips_the_lock_fleet_wide(env):
    redis, origin = env.redis(), env.origin()
    origin.script("/h/me", delay_ms=200, body="me {n}", headers={"Set-Cookie": "s={n}"})
    a, b = env.fleet(2, redis, origin, routes={"/": {"hit_for_miss": "20s",
                                                     "lock_poll": "5s"}})
    first = a.get("/h/me", {"Host": HOST})
    expect_eq(first.status, 200, "the first request")
    expect(0 < redis.pttl(hfm_key("/h/me")) <= 20000,
           "the key is remembered as uncacheable for hit_for_miss")
    before = fleet_counters([a, b])
    results = stampede([a, b], 20, "/h/me")
    expect_eq(sorted({r.status for r in results}), [200], "statuses")
    expect(all(r.cache_status.detail == "hit-for-miss" and r.cache_status.fwd == "bypass"
               for r in results),
           f"every request passed as hit-for-miss: {[r.cache_status.raw for r in results][:3]}")
    expect_eq(len({r.body for r in results}), 20, "each client got its own response")
    after = fleet_counters([a, b])
    expect_eq(after["waiters"] - before["waiters"], 0, "requests that waited on the lock")
    expect_eq(after["locks_acquired"] - before["locks_acquired"], 0, "locks taken")
    expect_eq(after["invalidations"] - before["invalidations"], 0,
              "invalidations: a GET passed upstream drops no entry")
    expect(after["hit_for_miss"] - before["hit_for_miss"] >= 2,
           "both instances saw the fleet-wide hit-for-miss")
    expect_eq(origin.count("/h/me"), 21, "origin requests")


@scenario
def a_shareable_answer_ends_hit_for_miss_and_a_per_user_one_starts_it_again(env):
    # One Set-Cookie answer marks the key uncacheable fleet-wide. Once the
    # origin answers it shareably again, the first passed request that gets
    # such an answer ends the mark: the next request takes the lock and
    # stores, and the rest are hits on both instances (not 30 s of origin
    # requests). A per-user answer to a locked fetch marks it again.
    path, hfm_ms, requests = "/h/now", 30000, 10
    redis, origin = env.redis(), env.origin()
    origin.script(path, body="me {n}", headers={"Set-Cookie": "s={n}"})
    a, b = env.fleet(2, redis, origin, routes={"/": {"hit_for_miss": f"{hfm_ms}ms"}})
    expect_eq(a.get(path).text, "me 1", "the per-user answer")
    expect(0 < redis.pttl(hfm_key(path)) <= hfm_ms, "the key is marked uncacheable")

    origin.script(path, body="shared {n}")
    r = b.get(path)
    expect_eq((r.text, r.cache_status.fwd, r.cache_status.detail),
              ("shared 2", "bypass", "hit-for-miss"), "the request passed as hit-for-miss")
    results = [(a, b)[i % 2].get(path) for i in range(requests)]
    expect_eq(origin.count(path), 3, "origin requests: the per-user answer, the passed "
              "shareable one, the stored one")
    expect_eq([r.text for r in results], ["shared 3"] * requests, "the answers after it")
    expect(results[0].cache_status.stored and
           all(r.cache_status.hit for r in results[1:]),
           f"stored once, then hits: {[r.cache_status.raw for r in results][:3]}")
    expect(not redis.exists(hfm_key(path)), "the mark is gone")

    origin.script(path, body="me {n}", headers={"Set-Cookie": "s={n}"})
    expect_eq(a.purge(url=f"http://{HOST}{path}").status, 200, "purge")
    r = a.get(path)
    expect_eq((r.text, r.cache_status.fwd), ("me 4", "miss"), "a locked fetch, per user")
    expect(0 < redis.pttl(hfm_key(path)) <= hfm_ms, "the key is marked uncacheable again")
    r = b.get(path)
    expect_eq((r.text, r.cache_status.detail), ("me 5", "hit-for-miss"),
              "the next request passes as hit-for-miss")
