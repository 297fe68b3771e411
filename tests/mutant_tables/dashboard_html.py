# SPDX-License-Identifier: MIT
"""Mutants of proxy/dashboard.html (tests/mutants.py runs them)."""

from . import Mutant

MUTANTS = [
    # -- the dashboard's quantiles and the histograms' resolution
    #    (proxy/dashboard.html, common/hist.c) ------------------------------------
    Mutant("dashboard_reads_the_buckets_in_object_order", "proxy/dashboard.html",
           "  const bounds = Object.keys(now.buckets).filter(k => k !== \"+Inf\").map(Number)\n"
           "    .sort((a, b) => a - b);\n  const count",
           "  const bounds = Object.keys(now.buckets).filter(k => k !== \"+Inf\").map(Number);\n"
           "  const count",
           ["dashboard_quantiles_in_headless_chromium_are_those_of_stats"],
           "the page walks \"1\", \"5\", \"10\" before \"0.0005\": p50 above p99"),
    Mutant("dashboard_shows_more_than_the_bucket_says", "proxy/dashboard.html",
           "  return v === null ? null : histRound(now, v);",
           "  return v;",
           ["dashboard_quantiles_in_headless_chromium_are_those_of_stats"],
           "a quantile is shown to the millisecond inside a 250 ms bucket"),
    Mutant("dashboard_codings_chart_draws_no_encodes", "proxy/dashboard.html",
           "values: idx.map(i => rate(i, x => x.total.coding_encoded)) },",
           "values: idx.map(i => 0) },",
           ["dashboard_in_headless_chromium_draws_live_charts"],
           "the dashboard's codings chart stays flat while bodies are compressed on store"),
]
