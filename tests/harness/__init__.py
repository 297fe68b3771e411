# SPDX-License-Identifier: MIT
"""Building blocks for Corral's scenario tests (Python 3 standard library only).

A scenario is a function decorated with @scenario that takes an Env. The Env
starts real processes -- redis-server on a free port, the scriptable origin
(tests/origin.py) and any number of corral instances -- and always stops them
again, checking corral's exit status and its log for sanitizer reports:

    @scenario
    def cold_miss_fleet_of_three_fetches_once(env):
        redis, origin = env.redis(), env.origin()
        fleet = env.fleet(3, redis, origin, routes={"/": {"lock_poll": "5s"}})
        results = stampede(fleet, 200, "/users/1")
        expect_eq(origin.count("/users/1"), 1, "origin fetches")

Waiting is always for a condition (wait_for), never for a fixed time.

This package re-exports the names of its modules, so a scenario imports
them from harness. Each module imports only those above it:

    procs    MARK_ENV, group_members, marked, kill_pids (what a scenario left)
    resp     RespClient, RespError
    wait     time limits (SLOWNESS, slow), wait_for, expect, free_port, logs
    keys     HOST, PREFIX, entry_key, lock_key and the other Redis keys
    http     Headers, CacheStatus, Response, http_request, raw_exchange
    redis    RedisServer, RedisProxy, expect_entry and the other entry helpers
    postgres PostgresServer (a private PostgreSQL 15), PsqlError
    origin   Origin (runs tests/origin.py)
    corral   corral_config, Corral, fleet_counters, children, tcp_socket_owner
    clients  stampede, Background, paced
    env      Env, @scenario, @expected_failure and SCENARIOS
    cluster  Redis Cluster and Sentinel (imported as harness.cluster)
    docs     the markdown documents, their tables, headings and links, and
             the configuration guide's keys (imported as harness.docs)
"""

from .clients import Background, StampedeResult, closed_by_server, paced, stampede
from .corral import (COUNTERS, DEFAULT_ROUTE, VALGRIND_ERROR_EXIT, WRAPPER, Corral, children,
                     corral_config, expect_fetches, fetch_story, fills_that_woke, fleet_counters,
                     nofile_limit, release_once_joined, server_addresses, split_hostport,
                     tcp_socket_owner)
from .env import DEFAULT_SCENARIO_TIMEOUT_S, REPORT_FILE, SCENARIOS, Env, expected_failure, scenario
from .http import (CacheStatus, Headers, RawReply, Response, get_request, http_request,
                   raw_exchange, read_head, send_and_leave)
from .keys import (HOST, PREFIX, TOKEN_RE, backoff_key, cache_key, entry_key, fails_key,
                   hfm_key, is_token, lock_key)
from .origin import ORIGIN_PY, TESTS_DIR, Origin, WsgiOrigin, origin_max_active
from .postgres import PostgresServer, PsqlError
from .procs import MARK_ENV, group_members, kill_pids, marked
from .redis import (RedisProxy, RedisServer, entry_fresh_until, entry_is_fresh, expect_entry,
                    expect_entry_pttl, expect_no_entries, expect_pttl, find_redis_server,
                    stale_fleet, wait_until_stale)
from .resp import RespClient, RespError
from .wait import (CLIENT_TIMEOUT_S, LOG_TAIL_LINES, NOT_YET, POLL_S, SANITIZER_MARKERS,
                   SLOWNESS, START_TIMEOUT_S, STOP_TIMEOUT_S, expect, expect_eq, free_port,
                   read_text, sanitizer_report, slow, tail, wait_for)

__all__ = [
    "CLIENT_TIMEOUT_S", "COUNTERS", "DEFAULT_ROUTE", "DEFAULT_SCENARIO_TIMEOUT_S", "HOST",
    "LOG_TAIL_LINES", "MARK_ENV", "NOT_YET", "ORIGIN_PY", "POLL_S", "PREFIX", "REPORT_FILE",
    "SANITIZER_MARKERS",
    "SCENARIOS", "SLOWNESS", "START_TIMEOUT_S", "STOP_TIMEOUT_S", "TESTS_DIR", "TOKEN_RE",
    "VALGRIND_ERROR_EXIT", "WRAPPER",
    "Background", "CacheStatus", "WsgiOrigin", "closed_by_server", "Corral", "Env", "Headers", "Origin", "RawReply",
    "PostgresServer", "PsqlError",
    "RedisProxy", "RedisServer", "RespClient", "RespError", "Response", "StampedeResult",
    "backoff_key", "cache_key", "children", "corral_config", "entry_fresh_until",
    "entry_is_fresh", "entry_key", "expect",
    "expect_entry", "expect_entry_pttl", "expect_eq", "expect_fetches", "expect_no_entries",
    "expected_failure",
    "expect_pttl", "fails_key", "fetch_story", "fills_that_woke", "find_redis_server", "fleet_counters",
    "free_port", "get_request", "group_members", "hfm_key", "http_request", "is_token",
    "kill_pids", "lock_key", "marked",
    "nofile_limit", "origin_max_active", "paced", "raw_exchange", "read_head", "read_text",
    "release_once_joined", "sanitizer_report", "scenario", "send_and_leave",
    "server_addresses", "slow", "split_hostport", "tcp_socket_owner", "stale_fleet", "stampede", "tail",
    "wait_for", "wait_until_stale",
]
