# SPDX-License-Identifier: MIT
"""Mutants of proxy/proxy_upstreams.c (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    Mutant("pool_stats_state_always_up", "proxy/proxy_upstreams.c",
           "\t\t    pool_state_name(f->state));", "\t\t    pool_state_name(POOL_UP));",
           ["hung_server_times_out_its_requests_go_elsewhere_and_it_is_taken_out"],
           "/stats shows a server that is out as up"),
    Mutant("pool_metrics_up_always_one", "proxy/proxy_upstreams.c",
           "sum->s[i].state == POOL_UP);", "1);",
           ["hung_server_times_out_its_requests_go_elsewhere_and_it_is_taken_out"],
           "/metrics shows a server that is out as up"),
    Mutant("pool_metrics_families_shifted", "proxy/proxy_upstreams.c",
           "offsetof(struct pool_figures, taken_out), 0 },",
           "offsetof(struct pool_figures, failures), 0 },",
           ["hung_server_times_out_its_requests_go_elsewhere_and_it_is_taken_out"],
           "/metrics reports failures as times taken out"),
    Mutant("health_checks_metric_shows_the_failed", "proxy/proxy_upstreams.c",
           "\",result=\\\"ok\\\"} %\" PRIu64 \"\\n\",\n\t\t    sum->s[i].health_ok);",
           "\",result=\\\"ok\\\"} %\" PRIu64 \"\\n\",\n\t\t    sum->s[i].health_failed);",
           ["every_metrics_figure_is_the_same_figure_in_stats"],
           "corral_upstream_health_checks_total{result=\"ok\"} counts the failed checks"),
]
