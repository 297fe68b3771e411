# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_health.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("health_status_ignored", "proxy/proxy_health.c",
           "ok = resp->result == UPSTREAM_OK && resp->status == hc->a.status;",
           "ok = resp->result == UPSTREAM_OK;",
           ["health_check_answering_another_status_takes_a_server_out"],
           "a server whose health check answers 503 stays in"),
    Mutant("health_never_repeats", "proxy/proxy_health.c",
           "\ttimer_arm(hc->timer, hc->a.interval_ms);\n\tif (hc->up != NULL",
           "\tif (hc->up != NULL",
           ["dead_server_out_after_max_fails_and_back_after_health_checks"],
           "one health check only: a server out never passes health_rise"),
    Mutant("health_path_dropped", "proxy/proxy_health.c",
           "snprintf(hc->url, len, \"%s%s\", a->url, a->path);",
           "snprintf(hc->url, len, \"%s%.0s\", a->url, a->path);",
           ["dead_server_out_after_max_fails_and_back_after_health_checks"],
           "health checks ask the server's root, not health_path"),
]
