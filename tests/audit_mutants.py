#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A batch of mutants written from the README, the manual pages and the C
source, spread over the request reader, the header rules, the listeners,
the origin budget, the streams, the near caches, the Redis routing, the
keys, the entries, the tags, the configuration and the host patterns.

    python3 tests/audit_mutants.py [-k NAME]... [--list] [--no-baseline]

The runner is tests/mutants.py's (the same scratch tree, build/mutants/tree,
the same baseline run and verdicts); only the list differs. Each mutant
names the tests of the one or two scenario files (and the unit binary) that
cover its area, so a survivor says the suite does not see that change. It
is a measure of the suite, not a gate: make test-mutants does not run it.
Each mutant runs the tests its list names and every scenario now in the
same files, so that it measures the suite of today. Measured when the
batch was written: 16 of 24 killed; with the tests added since: 24.
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mutants  # noqa: E402
from mutants import Mutant  # noqa: E402

# -- the tests of each area, by scenario file (names as run.py -k takes them) --

EDGES_CLIENT = [
    "transfer_encoding_with_space_before_colon_and_a_length_is_refused",
    "content_length_with_space_before_colon_is_refused",
    "transfer_encoding_not_ending_in_chunked_is_refused",
    "head_body_is_read_and_dropped_before_the_next_request",
    "chunk_extensions_are_accepted_and_the_body_reaches_the_origin",
    "http11_without_host_or_with_two_is_refused",
    "control_bytes_in_the_target_are_refused_before_any_key_is_made",
    "at_most_max_connections_clients_are_accepted",
    "descriptor_exhaustion_backs_off_quietly_and_recovers",
    "idle_admin_connections_are_capped_and_never_starve_the_public_port",
    "a_full_public_port_leaves_the_admin_port_serving",
    "a_head_trickled_slower_than_client_timeout_is_cut",
    "a_slow_chunked_body_is_not_cut_while_it_moves",
    "a_refusal_is_counted_and_logged_without_the_clients_bytes",
    "clients_that_close_after_their_answer_leave_nothing_behind",
    "a_hit_head_has_each_field_once_and_honours_connection_close",
]
EDGES_FLOW = [
    "client_forwarded_headers_are_replaced_by_corrals_own",
    "trusted_proxies_keep_and_extend_forwarded_headers",
    "a_bad_trusted_proxies_entry_is_a_config_error",
    "dot_segments_are_removed_before_routing_and_keying",
    "absolute_form_target_names_the_host",
    "reload_that_removes_a_route_mid_vary_fetch_finishes_every_request",
    "no_fetch_starts_once_a_stop_begins",
    "a_body_that_waits_on_a_slow_origin_outlasts_client_timeout",
    "client_timeout_still_closes_a_client_that_takes_nothing_or_idles",
]
LIMITS = [
    "not_found_is_stored_only_where_ttl_404_says",
    "ttl_status_stores_each_listed_status_for_its_own_ttl",
    "response_over_max_entry_bytes_reaches_every_waiter_but_is_not_stored",
    "sort_query_gives_any_parameter_order_one_entry",
    "bad_requests_are_refused_and_their_connections_closed",
    "ttl_status_durations_are_range_checked_like_ttl",
    "ttl_status_zero_does_not_store_for_the_route_ttl",
    "sort_query_sorts_parameters_after_normalising_them",
]
HTTP_SEMANTICS = [
    "early_refresh_refreshes_a_hot_key_once_before_it_goes_stale",
    "early_refresh_goes_through_the_lock_one_fetch_per_fleet",
    "early_refresh_rolls_xfetch_once_per_hit_with_the_near_cache",
    "early_refresh_and_origin_cache_control_keys_are_checked",
    "origin_freshness_from_s_maxage_max_age_expires_and_age",
    "origin_no_store_private_and_silent_origin_on_ttl_zero_route_are_not_stored",
    "origin_no_cache_is_stored_only_to_revalidate_each_request",
    "origin_must_revalidate_and_s_maxage_forbid_stale_unless_swr_or_sie_allow",
    "conditional_requests_get_304_from_the_cache",
    "stale_refresh_revalidates_with_if_none_match_and_304_keeps_the_body",
    "expired_entry_is_revalidated_with_if_modified_since",
    "vary_stores_one_variant_per_header_value",
    "vary_accept_encoding_does_not_split_and_vary_star_is_not_stored",
    "cold_stampede_with_different_vary_values_each_gets_its_own_variant",
    "authorized_requests_stored_only_when_the_response_allows_sharing",
    "successful_unsafe_methods_invalidate_the_entry_and_its_variants",
    "get_right_after_a_successful_post_is_not_served_from_memory",
    "unsafe_request_invalidates_the_entry_of_a_sort_query_route",
    "purge_by_url_and_by_prefix_drops_entries_everywhere",
    "head_cold_miss_fetches_with_get_and_stores",
    "age_date_and_via_on_cached_and_passed_through_responses",
    "via_keeps_every_via_line_of_the_origin",
]
PURGE_TAGS = [
    "soft_purge_of_a_popular_tag_causes_no_stampede",
    "hard_tag_and_soft_url_purges",
    "hard_purge_of_a_50000_key_tag_deletes_them_all_without_reconnecting",
    "hard_tag_purge_that_fails_half_way_is_finished_by_a_retry",
    "tag_sets_of_the_earlier_format_are_purged_too",
    "tag_sets_drop_members_whose_entries_expired",
    "twenty_concurrent_prefix_purges_all_succeed_without_reconnecting",
    "purges_past_the_limit_are_refused_with_retry_after_and_the_others_finish",
]
LIFECYCLE = [
    "graceful_stop_finishes_requests_in_progress",
    "stop_past_deadline_releases_locks_for_the_fleet",
    "reload_applies_new_routes_without_dropping_connections",
    "reload_with_errors_keeps_the_running_configuration",
    "max_connections_holds_new_clients_until_one_closes",
]
WORKERS = [
    "two_workers_share_the_port_and_sum_their_figures",
    "cold_stampede_across_two_instances_of_two_workers_fetches_once",
    "worker_that_dies_is_restarted",
    "reload_and_stop_reach_every_worker",
    "fresh_entries_are_served_from_memory_even_without_redis",
    "purge_drops_the_memory_copy_in_every_instance",
    "a_loop_over_more_keys_than_the_near_cache_holds_still_hits_it",
    "an_entry_one_worker_stored_answers_every_worker_from_shared_memory",
    "purge_and_a_new_entry_reach_the_shared_near_cache",
    "a_worker_respawned_after_a_reload_runs_what_the_instance_runs",
    "restart_pending_clears_when_the_file_goes_back_and_after_a_restart",
    "a_stale_copy_in_memory_is_served_without_redis_while_its_refresh_runs",
    "stale_hits_while_another_instance_refreshes_ask_redis_once_per_lock_poll",
    "a_stale_copy_whose_refresh_cannot_reach_redis_gives_way_to_a_direct_fetch",
]
BUDGET = [
    "flood_of_cold_keys_never_exceeds_the_fleet_budget",
    "budget_full_of_pass_through_gives_the_next_slot_to_a_cold_miss",
    "stale_refresh_queued_behind_cold_misses_serves_stale_meanwhile",
    "no_slot_within_queue_timeout_answers_stale_or_503_with_retry_after",
    "every_kind_of_origin_request_waits_for_a_slot",
    "slow_fetches_keep_their_slots_past_the_lease",
    "instance_killed_holding_slots_gives_them_back_within_the_lease",
    "redis_down_each_instance_keeps_to_its_local_share",
    "budget_figures_in_stats_metrics_table_and_dashboard",
    "slot_freed_while_the_waiter_asks_is_not_lost",
]
HOLDER = [
    "slow_query_over_two_instances_of_two_workers_is_fetched_once",
    "killed_lock_holder_worker_is_taken_over_once_in_the_fleet",
    "failed_fetch_answers_its_waiters_across_the_fleet",
    "waiter_past_lock_wait_is_answered_without_a_fetch_and_takes_the_entry_later",
    "waiter_past_lock_wait_gets_the_stale_entry_stale_if_error_keeps",
    "waiter_counts_its_budget_again_for_a_new_holder",
]
LOCK_PROTOCOL = [
    "release_of_a_lost_lock_leaves_the_new_holders_lock",
    "renewal_never_extends_a_lock_another_fetch_holds",
    "waiter_sees_by_the_generation_that_another_instance_refreshed",
    "waiter_elsewhere_gets_the_failed_fetchs_error_at_once",
    "fill_that_overtakes_the_lock_reply_wakes_the_waiter_at_once",
    "fill_missed_while_unsubscribed_wakes_the_waiter_on_resubscribing",
    "stale_burst_makes_one_lock_attempt_per_process",
    "cold_burst_in_one_process_is_one_flight",
    "private_answer_of_a_shared_fetch_goes_to_its_requester_only",
]
UPSTREAM = [
    "unanswered_post_and_patch_reach_the_upstream_once_and_get_502",
    "misframed_upstream_answers_are_502_and_never_stored",
    "misframed_refresh_serves_the_stale_entry_under_stale_if_error",
    "upstream_header_lines_over_max_upstream_headers_are_502_counted_and_logged",
    "wrong_redis_password_reports_down_with_the_reason_until_it_is_accepted",
]
LARGE = [
    "sequential_large_hits_on_one_connection_never_wait_for_a_delayed_ack",
    "waiters_get_the_body_as_it_arrives_and_it_is_stored",
    "a_request_that_joins_once_the_body_has_begun_gets_it_from_the_first_byte",
    "a_body_cut_short_is_never_served_whole_nor_stored",
    "a_long_body_streams_with_bounded_memory_to_a_slow_client",
    "large_near_cache_hits_go_out_whole_to_a_slow_reader",
    "a_streamed_answer_gets_its_access_log_line",
    "a_stalled_reader_is_detached_and_later_served_whole_from_the_kept_body",
    "a_stalled_reader_of_a_body_too_long_to_keep_is_cut_alone",
    "late_joiners_of_a_body_too_long_to_keep_share_one_fetch",
]
PEER = [
    "waiters_of_both_workers_get_the_body_as_it_arrives",
    "a_sibling_that_asks_once_the_body_has_begun_gets_it_from_the_first_byte",
    "a_sibling_with_no_stream_leaves_the_waiters_to_the_entry",
    "a_body_cut_during_a_peer_stream_is_cut_in_every_worker",
    "a_peer_socket_answers_no_process_but_a_sibling_worker",
]
DEGRADED = [
    "redis_down_fetches_directly",
    "upstream_down_gives_502",
    "upstream_timeout_gives_504",
    "stale_entry_is_served_while_upstream_is_down",
    "hung_redis_connection_is_dropped_and_reopened",
]
OBSERVABILITY_REDIS = [
    "upstream_and_redis_failures_move_error_metrics",
    "stats_json_has_histogram_buckets_and_quantiles",
]
CLUSTER = [
    "cluster_cold_and_stale_stampedes_fetch_once_per_key_on_every_primary",
    "cluster_slot_migrated_while_refresh_holds_lock_fetches_once",
    "cluster_primary_killed_during_stale_stampede_loses_no_request",
    "cluster_tag_purges_reach_every_primary_in_batches",
    "cluster_primary_killed_in_cold_stampede_fleet_fetches_once_per_key_after_ok",
    "cluster_stale_entry_on_dead_primary_is_read_from_its_replica_until_promotion",
    "cluster_cold_stampede_on_dead_primary_fetches_once_per_instance_until_promotion",
]
SENTINEL = ["sentinel_primary_killed_corral_follows_the_promoted_replica"]
STAMPEDE = [
    "cold_miss_fleet_of_three_fetches_once",
    "stale_key_fleet_of_three_served_stale_then_refreshed_once",
    "slow_origin_lock_is_renewed",
    "replaced_lock_token_is_neither_deleted_nor_overwritten",
]
KEYS = [
    "instances_reached_by_different_names_share_one_entry",
    "made_up_host_names_do_not_fragment_the_cache",
    "key_host_keys_on_the_clients_host_and_sends_it",
    "hosts_allow_list_answers_421_to_other_names",
    "purge_by_path_reaches_upstream_keyed_entries",
    "a_clients_host_never_reaches_a_shared_entry",
    "without_key_host_the_origin_hears_the_canonical_name",
    "a_host_with_a_bad_port_is_refused_before_the_origin",
    "key_host_keys_only_the_ports_the_listener_serves",
]
FAULTS = [
    "failing_refresh_of_stale_key_backs_off_fleet_wide",
    "failing_cold_key_is_answered_from_the_backoff",
    "error_backoff_answers_504_after_timeout_and_502_after_refused",
    "error_backoff_is_capped_and_ended_by_a_store",
    "stale_if_error_serves_an_expired_entry_when_the_origin_fails",
    "waiters_of_a_failed_fetch_get_its_error_without_a_backoff",
    "waiters_of_a_failed_fetch_get_its_error_then_the_backoff_answers",
    "killed_lock_holder_is_taken_over_by_another_instance",
    "clients_that_leave_do_not_stop_the_refresh",
    "redis_down_at_start_fails_open_then_reconnects",
    "redis_killed_mid_run_degrades_then_recovers",
    "slow_redis_past_its_timeout_is_bypassed",
    "redis_stall_past_lock_ttl_leaves_no_lock_behind",
    "unreadable_entry_in_redis_is_replaced_by_a_refresh",
    "killed_subscription_is_restored_and_waiters_are_woken_again",
    "flushed_scripts_are_sent_again_as_eval",
]
CACHING = [
    "per_route_ttls_apply",
    "hit_has_cache_status_ttl_and_age",
    "head_is_served_from_the_get_entry",
    "post_is_proxied_and_never_cached",
    "server_error_is_not_stored",
    "uncacheable_responses_are_not_stored",
    "authorized_requests_bypass_unless_cache_authorized",
    "hop_by_hop_response_headers_are_neither_stored_nor_served",
]

AUDIT = [
    # -- the request reader (proxy/proxy_frame.c) ------------------------------
    Mutant("audit_frame_length_at_max_body_refused", "proxy/proxy_frame.c",
           "\t\tif (h->length > f->body_max)\n",
           "\t\tif (h->length >= f->body_max)\n",
           ["test_frame"] + EDGES_CLIENT + LIMITS,
           "a body of exactly max_body_bytes (Content-Length) gets 413"),
    Mutant("audit_frame_chunked_in_http10_accepted", "proxy/proxy_frame.c",
           "\t\tif (h->minor == 0)\n"
           "\t\t\treturn reject(f, 400, \"Transfer-Encoding in HTTP/1.0\");\n",
           "",
           ["test_frame"] + EDGES_CLIENT,
           "an HTTP/1.0 request with Transfer-Encoding: chunked is read, not refused"),

    # -- header rules (proxy/proxy_hdr.c) --------------------------------------
    Mutant("audit_hdr_age_subtracted_as_milliseconds", "proxy/proxy_hdr.c",
           "\t\tlifetime -= secs(age);\n",
           "\t\tlifetime -= age;\n",
           ["test_hdr"] + HTTP_SEMANTICS,
           "the origin's Age takes milliseconds, not seconds, off the freshness"),
    Mutant("audit_hdr_ims_equal_date_not_304", "proxy/proxy_hdr.c",
           "return since >= 0 && modified >= 0 && modified <= since;",
           "return since >= 0 && modified >= 0 && modified < since;",
           ["test_hdr"] + HTTP_SEMANTICS,
           "If-Modified-Since equal to Last-Modified gets the body, not 304"),

    # -- purge (proxy/proxy_purge.c) -------------------------------------------
    Mutant("audit_purge_tag_default_is_hard", "proxy/proxy_purge.c",
           "soft = soft_arg != NULL ? strcmp(soft_arg, \"0\") != 0 : tag != NULL;",
           "soft = soft_arg != NULL ? strcmp(soft_arg, \"0\") != 0 : 0;",
           PURGE_TAGS + ["purge_by_url_and_by_prefix_drops_entries_everywhere"],
           "a tag purge without soft= deletes its entries (a stampede) instead of "
           "marking them stale"),

    # -- a worker's life (proxy/proxy_life.c) ----------------------------------
    Mutant("audit_life_redis_timeout_reloads_live", "proxy/proxy_life.c",
           "\tRF(RK_REDIS_TIMEOUT, FK_NUMBER, redis_timeout_ms),\n",
           "",
           LIFECYCLE + WORKERS,
           "a reload that changes [redis] timeout is not kept back nor listed "
           "in restart_pending"),

    # -- listeners (proxy/proxy_http.c) ----------------------------------------
    Mutant("audit_http_max_connections_plus_one", "proxy/proxy_http.c",
           "int full = px->nclients >= px->conf->max_connections;",
           "int full = px->nclients > px->conf->max_connections;",
           EDGES_CLIENT + LIFECYCLE,
           "a worker accepts max_connections + 1 clients"),

    # -- the origin budget (proxy/proxy_budget.c) ------------------------------
    Mutant("audit_budget_local_share_rounds_down", "proxy/proxy_budget_int.h",
           "\treturn (c->max_requests + n - 1) / n;\n",
           "\treturn c->max_requests / n;\n",
           BUDGET,
           "with Redis down, max_requests / instances is rounded down, not up"),

    # -- holding (proxy/proxy_hold.c) ------------------------------------------
    Mutant("audit_hold_new_holder_restarts_lock_wait", "proxy/proxy_hold.c",
           "if (h->expired || (h->started && (same || rt->lock_wait_ms > 0)))",
           "if (h->expired || (h->started && same))",
           HOLDER + LOCK_PROTOCOL,
           "a set lock_wait starts again for each new holder: a waiter waits "
           "past its client-facing budget"),

    # -- a fetch through the budget (proxy/proxy_origin.c) ---------------------
    Mutant("audit_origin_queued_fetch_loses_headers", "proxy/proxy_origin.c",
           "\t\tHL_FOREACH(h, ur->headers)\n\t\t\tif (hl_add(&f->headers, h->key,\n\t\t\t    h->value) == -1)\n\t\t\t\treturn -1;\n",
           "\t\t(void)h;\n",
           BUDGET + UPSTREAM,
           "with max_requests set, the request goes upstream without its headers "
           "(X-Forwarded-*, Accept, credentials)"),

    # -- streams (proxy/proxy_stream.c) ----------------------------------------
    Mutant("audit_stream_detached_client_misses_the_rest", "proxy/proxy_stream.c",
           "\t\telse\n\t\t\t(void)w->ops->data(w, rest);\n",
           "\t\telse\n\t\t\t(void)0;\n",
           ["test_stream"] + LARGE + PEER,
           "a client still detached when the body ends is ended without the rest "
           "of the kept body"),

    # -- Vary (proxy/proxy_vary.c) ---------------------------------------------
    Mutant("audit_vary_accept_encoding_splits_variants", "proxy/proxy_vary.c",
           "\t\tif (*n == 0 || name_is(name, *n, \"Accept-Encoding\"))\n",
           "\t\tif (*n == 0)\n",
           HTTP_SEMANTICS,
           "Vary: Accept-Encoding splits the cache per client encoding"),

    # -- the routing table (cache/cache_route.c) -------------------------------
    Mutant("audit_route_noauth_not_counted", "cache/cache_route.c",
           "\tint auth = strcmp(what, \"AUTH\") == 0 || adapter_auth_refused(err);\n",
           "\tint auth = strcmp(what, \"AUTH\") == 0;\n",
           UPSTREAM + DEGRADED + OBSERVABILITY_REDIS,
           "NOAUTH (Redis wants a password none is configured for) is not "
           "counted in auth_failures"),

    # -- the cluster map (cache/cache_slots.c) ---------------------------------
    Mutant("audit_slots_replica_never_learnt", "cache/cache_slots.c",
           "\tif (e->elements < 4 || node_addr(e->element[3], asked,",
           "\tif (e->elements < 5 || node_addr(e->element[3], asked,",
           CLUSTER,
           "a primary with one replica keeps none: its slots' reads do not go to "
           "the replica while it is away"),

    # -- sentinels (cache/cache_sentinel.c) ------------------------------------
    Mutant("audit_sentinel_asks_the_same_sentinel_again", "cache/cache_sentinel.c",
           "\tif (!ok)\n\t\ts->ask_at++;\n\ts->hooks->answered(ok, s->arg);\n",
           "\ts->hooks->answered(ok, s->arg);\n",
           SENTINEL,
           "a sentinel that does not answer is asked again instead of the next"),

    # -- the near cache (cache/cache_l1.c) -------------------------------------
    # (Written when a memory copy served only while fresh; since the near
    # caches keep stale copies while their refresh runs, the same bug is a
    # stale copy served without starting its refresh.)
    Mutant("audit_l1_serves_a_stale_copy", "proxy/proxy_hit.c",
           "\t\trefresh_stale(px, w, key, uri, route, rt, e);\n",
           "\t\t(void)refresh_stale;\n",
           ["test_l1"] + WORKERS + STAMPEDE,
           "a worker serves its memory copy past fresh-until, without asking "
           "Redis or refreshing"),

    # -- the shared near cache (cache/cache_l2.c) ------------------------------
    Mutant("audit_l2_drop_while_busy_forgotten", "cache/cache_l2.c",
           "\t\tif (dropping)\n\t\t\tatomic_store(&sh->reset_due, 1);\n",
           "",
           ["test_l2"] + WORKERS,
           "a purge that finds the shared cache's lock held leaves the purged "
           "copy to be served"),

    # -- keys (cache/cache_key.c) ----------------------------------------------
    Mutant("audit_key_decodes_reserved_percent", "cache/cache_key.c",
           "\t\t\tif (safe_class(c) & SAFE_UNRESERVED)\n\t\t\t\temit(s, c);",
           "\t\t\tif (safe_class(c) & safe)\n\t\t\t\temit(s, c);",
           ["test_key"] + KEYS + LIMITS,
           "%2F (and other reserved %XX) is decoded: /a%2Fb and /a/b share a key"),

    # -- entries (cache/cache_entry.c) -----------------------------------------
    Mutant("audit_entry_trailing_bytes_accepted", "cache/cache_entry.c",
           "\tif (body_len < r->left && after == 0) {\n"
           "\t\tset_err(err, errlen, \"trailing bytes after body\");\n"
           "\t\treturn -1;\n\t}\n",
           "",
           ["test_entry"] + FAULTS,
           "an entry with bytes after its body decodes as valid"),

    # -- origin slots (cache/cache_lease.c) ------------------------------------
    Mutant("audit_lease_one_slot_over_the_cap", "cache/cache_lease.c",
           "\"  local free = max == 0 or redis.call('ZCARD', KEYS[1]) + ahead < max\\n\"",
           "\"  local free = max == 0 or redis.call('ZCARD', KEYS[1]) + ahead <= max\\n\"",
           BUDGET,
           "the fleet grants max_requests + 1 origin slots"),

    # -- tags (cache/cache_tag.c) ----------------------------------------------
    Mutant("audit_tag_snapshot_taken_again", "cache/cache_tag.c",
           "failed |= op_argstr(op, pg->snapped ? \"0\" : \"1\");",
           "failed |= op_argstr(op, \"1\");",
           PURGE_TAGS,
           "a hard tag purge takes the keys stored during it as a new snapshot "
           "and purges them too"),

    # -- configuration (conf/conf.c, conf_host.c) -------------------------------
    Mutant("audit_conf_first_matching_route_wins", "conf/conf.c",
           "\t\tif (len > bestlen &&\n",
           "\t\tif (bestlen == 0 &&\n",
           ["test_conf"] + CACHING + LIFECYCLE,
           "the first route whose prefix matches is used, not the longest"),
    Mutant("audit_conf_cidr_masks_the_low_bits", "conf/conf_host.c",
           "(0xff << (8 - rest)) & 0xff) == 0)",
           "(0xff >> (8 - rest)) & 0xff) == 0)",
           ["test_conf"] + EDGES_FLOW,
           "a trusted_proxies prefix not on a byte boundary (/12, /20) compares "
           "the wrong bits"),

    # -- hosts (common/host.c) -------------------------------------------------
    Mutant("audit_host_wildcard_without_its_dot", "common/host.c",
           "\t\tsfx = namelen - 1;\n"
           "\t\treturn h->len > sfx && strncasecmp(h->name + h->len - sfx,\n"
           "\t\t    p + 1, sfx) == 0;\n",
           "\t\tsfx = namelen - 2;\n"
           "\t\treturn h->len > sfx && strncasecmp(h->name + h->len - sfx,\n"
           "\t\t    p + 2, sfx) == 0;\n",
           ["test_conf"] + KEYS,
           "*.example.com allows evilexample.com"),
]


def scenarios_by_file():
    """{scenario name: its file} over tests/scenarios/*.py, read as text."""
    where = {}
    folder = os.path.join(os.path.dirname(os.path.abspath(__file__)), "scenarios")
    for name in sorted(os.listdir(folder)):
        if name.startswith("test_") and name.endswith(".py"):
            with open(os.path.join(folder, name)) as f:
                for fn in re.findall(r"^@scenario.*\ndef (\w+)\(", f.read(), re.M):
                    where[fn] = name
    return where


def with_their_files(mutant, where):
    """The mutant's tests and every scenario now in the same files: the
    lists above were those files' scenarios when the batch was written, and
    the suite it measures is the one of today."""
    files = {where[t] for t in mutant.tests if t in where}
    more = [t for t, f in where.items() if f in files and t not in mutant.tests]
    return mutant._replace(tests=list(mutant.tests) + more)


if __name__ == "__main__":
    found = scenarios_by_file()
    mutants.MUTANTS = [with_their_files(m, found) for m in AUDIT]
    sys.exit(mutants.main())
