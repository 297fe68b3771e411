# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_life.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    # -- reload and respawn; the admin listener's cap (proxy_life.c, main.c, proxy_http.c) --
    Mutant("reload_takes_restart_only_keys", "proxy/proxy_life.c",
           "\t\tif (changed & (1u << f->key))\n\t\t\tmemcpy(",
           "\t\tif (0 && (changed & (1u << f->key)))\n\t\t\tmemcpy(",
           ["a_worker_respawned_after_a_reload_runs_what_the_instance_runs"],
           "a worker started after a crash listens on the file's new port and "
           "writes under its new prefix"),
    Mutant("restart_pending_never_clears", "proxy/proxy_life.c",
           "\tnew->restart_pending = changed;",
           "\tnew->restart_pending = changed | running->restart_pending;",
           ["restart_pending_clears_when_the_file_goes_back"],
           "restart_pending still lists a key the file has put back"),
    Mutant("password_file_not_reread_on_reload", "proxy/proxy_life.c",
           "\t\tcache_credentials(px->cache, new);", "\t\t(void)0;",
           ["rotated_password_in_redis_and_file_keeps_working_after_reload",
            "wrong_password_said_once_served_from_origin_and_back_after_reload"],
           "a reload reads the new password but connections keep using the old"),
    Mutant("stop_ignores_background_refreshes", "proxy/proxy_life.c",
           "if (px->nrequests == 0 && px->nrefreshes == 0 &&",
           "if (px->nrequests == 0 &&",
           ["graceful_stop_with_only_a_refresh_running_waits_for_it"],
           "a stop with only a refresh running leaves its lock for lock_ttl, the entry stale"),
    # -- proxy/proxy_life.c --
    Mutant("reload_loses_route_figures", "proxy/proxy_life.c",
           "\t\t\t\tmoved[i] = st->route[j];",
           "\t\t\t\t(void)j;",
           ["reload_applies_new_routes_without_dropping_connections"],
           "every reload zeroes the routes' figures in /stats"),
    Mutant("stop_never_abandons", "proxy/proxy_life.c",
           "if (!px->abandoned && now >= px->drain_deadline_us) {",
           "if (0 && !px->abandoned && now >= px->drain_deadline_us) {",
           ["stop_past_deadline_releases_locks_for_the_fleet"],
           "a stop past shutdown_timeout keeps waiting; the fleet waits out lock_ttl"),
    Mutant("stop_keeps_accepting", "proxy/proxy_life.c",
           "\tpx->draining = 1;\n\thttp_stop_accepting(px);",
           "\tpx->draining = 1;",
           ["graceful_stop_finishes_requests_in_progress"],
           "a stopping instance takes new connections it will not serve"),
    Mutant("audit_life_redis_timeout_reloads_live", "proxy/proxy_life.c",
           "\tRF(RK_REDIS_TIMEOUT, FK_NUMBER, redis_timeout_ms),\n",
           "",
           ["restart_pending_clears_when_the_file_goes_back"],
           "a reload that changes [redis] timeout is not kept back nor listed "
           "in restart_pending"),
    Mutant("key_host_warning_not_on_reload", "proxy/proxy_life.c",
           "\t\tlog_warn(\"reload: %s\", warning);", "\t\t(void)warning;",
           ["key_host_without_hosts_is_warned_about"],
           "a reload that turns key_host on with hosts empty says nothing"),
]
