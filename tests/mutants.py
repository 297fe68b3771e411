#!/usr/bin/env python3
"""Mutation tests of the lock protocol and the request flow: make test-mutants.

    python3 tests/mutants.py [-k NAME]... [--list] [--no-baseline]

Each mutant below changes one thing Corral must get right (a token compare,
NX or PX on the lock, a wake-up, ...) by replacing an exact text of one
file, and names the tests that must fail because of it. The runner mirrors
the working tree (the files git tracks or would track) into a scratch copy,
build/mutants/tree, and works only there, so an interrupted run never
leaves the real tree changed. For each mutant it applies the change,
rebuilds build/asan/corral there (incrementally: one object and the link),
runs the named tests, and puts the file back. A mutant is killed when one
of its tests fails, and survives when they all pass.

Before the mutants, the named tests run once on the unchanged copy: a test
that fails there could kill anything, so the run stops. A find-text that is
not in its file exactly once is a stale mutant: an error, never a survivor.

The last line is "N killed, M survived"; the exit status is 0 only when
every mutant was killed (and none was stale or failed to build).

Adding a mutant: append a Mutant(name, file, find, replace, tests, why) to
MUTANTS. find must occur exactly once in file (include a neighbouring line
if it does not); tests are substrings of test names as run.py -k takes
them (a unit binary's name, e.g. "test_upstream", runs that binary); why
says what the change breaks. Run it alone with tests/mutants.py -k NAME.
"""

import argparse
import os
import shutil
import subprocess
import sys
import time
from collections import namedtuple

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRATCH = os.path.join(ROOT, "build", "mutants", "tree")
BUILD_TIMEOUT_S = 600
TESTS_TIMEOUT_S = 1200
REASON_CHARS = 200	# of the failure that killed a mutant

Mutant = namedtuple("Mutant", "name file find replace tests why")

MUTANTS = [
    # -- the Redis scripts (cache/cache_script.c) -------------------------------
    Mutant("release_without_token_compare", "cache/cache_script.c",
           "\"if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end\\n\"\n"
           "\t\"redis.call('DEL', KEYS[1])\\n\"",
           "\"redis.call('DEL', KEYS[1])\\n\"",
           ["release_of_a_lost_lock_leaves_the_new_holders_lock"],
           "a fetch that lost its lock deletes the new holder's lock"),
    Mutant("store_without_token_compare", "cache/cache_script.c",
           "\"if redis.call('GET', KEYS[2]) ~= ARGV[1] then return 0 end\\n\"", "",
           ["replaced_lock_token_is_neither_deleted_nor_overwritten"],
           "a fetch that lost its lock overwrites the entry (no fencing)"),
    Mutant("renew_without_token_compare", "cache/cache_script.c",
           "\"if redis.call('GET', KEYS[1]) == ARGV[1] then\\n\"",
           "\"if true then\\n\"",
           ["renewal_never_extends_a_lock_another_fetch_holds"],
           "a renewal extends another fetch's lock"),
    Mutant("lock_without_nx", "cache/cache_script.c",
           "ARGV[1], 'NX', 'PX', ARGV[2]", "ARGV[1], 'PX', ARGV[2]",
           ["cold_miss_fleet_of_three_fetches_once"],
           "every lock attempt wins: no stampede protection"),
    Mutant("lock_without_px", "cache/cache_script.c",
           "ARGV[1], 'NX', 'PX', ARGV[2]", "ARGV[1], 'NX'",
           ["killed_lock_holder_is_taken_over_by_another_instance"],
           "a lock whose holder died is never freed"),
    Mutant("lock_ignores_a_changed_entry", "cache/cache_script.c",
           "\"if g and g ~= ARGV[3]", "\"if false and g ~= ARGV[3]",
           ["cold_miss_fleet_of_three_fetches_once",
            "waiter_sees_by_the_generation_that_another_instance_refreshed"],
           "a woken waiter takes the released lock and fetches again"),
    Mutant("store_without_publish", "cache/cache_script.c",
           "\t\"if not KEYS[5] and #ARGV[2] <= \" STRINGIFY(FILL_ENTRY_MAX) \" then\\n\"\n"
           "\t\"  redis.call('SPUBLISH', ARGV[4], ARGV[5] .. '\\\\0' .. ARGV[2])\\n\"\n"
           "\t\"else\\n\"\n"
           "\t\"  redis.call('SPUBLISH', ARGV[4], ARGV[5])\\n\"\n"
           "\t\"end\\n\"\n", "",
           ["cold_miss_fleet_of_three_fetches_once"],
           "waiters of other instances sleep until their poll"),
    Mutant("release_without_publish", "cache/cache_script.c",
           "\"redis.call('SPUBLISH', ARGV[2], ARGV[3])\\n\"", "",
           ["waiter_elsewhere_gets_the_failed_fetchs_error_at_once"],
           "after a failed fetch, other instances' waiters sleep until their poll"),
    Mutant("store_keeps_the_lock", "cache/cache_script.c",
           "\"redis.call('DEL', KEYS[2], KEYS[3], KEYS[4])\\n\"",
           "\"redis.call('DEL', KEYS[3], KEYS[4])\\n\"",
           ["cold_miss_fleet_of_three_fetches_once"],
           "the key stays locked after its store: the next refresh waits lock_ttl"),
    Mutant("release_sets_no_backoff", "cache/cache_script.c",
           "\"if ARGV[4] ~= '' and max > 0 then\\n\"", "\"if false then\\n\"",
           ["failing_refresh_of_stale_key_backs_off_fleet_wide"],
           "a failing key is fetched again by every request: no backoff"),
    Mutant("lock_ignores_the_backoff", "cache/cache_script.c",
           "\"if b then return {3, b, redis.call('GET', KEYS[4])} end\\n\"", "\"\"",
           ["failing_cold_key_is_answered_from_the_backoff"],
           "a backing-off key is fetched anyway"),
    Mutant("watch_misses_a_fill_that_came_first", "cache/cache_watch.c",
           "strcmp(reply->str, w->holder) != 0)\n\t\tc->on_fill(w->key, NULL, c->fill_arg);",
           "strcmp(reply->str, w->holder) != 0)\n\t\t(void)0;",
           ["fill_missed_while_unsubscribed_wakes_the_waiter_on_resubscribing",
            "fill_that_overtakes_the_lock_reply_wakes_the_waiter_at_once"],
           "a fill published before the waiter subscribed (or while it was "
           "unsubscribed) is lost: the waiter polls"),
    Mutant("noscript_without_eval_fallback", "cache/cache_op.c",
           "argv[1] = op->src;", "argv[1] = \"return nil\";",
           ["flushed_scripts_are_sent_again_as_eval"],
           "after SCRIPT FLUSH or a Redis restart, no lock script runs"),
    # -- the token (common/util.c) -----------------------------------------------
    Mutant("constant_lock_token", "common/util.c",
           "out[i * 2] = hex[raw[i] >> 4];\n\t\tout[i * 2 + 1] = hex[raw[i] & 0xf];",
           "out[i * 2] = hex[10];\n\t\tout[i * 2 + 1] = hex[11];",
           ["waiter_sees_by_the_generation_that_another_instance_refreshed"],
           "an entry's generation no longer tells that someone else refreshed it"),
    # -- one key's flight (proxy/proxy_flight.c) ---------------------------------
    Mutant("fill_wakes_no_waiter", "proxy/proxy_flight.c",
           "if ((fl = dict_get(px->flights, key)) != NULL)\n\t\t\tflight_filled(fl, e);",
           "if ((fl = dict_get(px->flights, key)) != NULL)\n\t\t\t(void)flight_filled;",
           ["cold_miss_fleet_of_three_fetches_once"],
           "waiters are woken by their poll, not by the notification"),
    Mutant("stale_hit_refreshes_while_one_runs", "proxy/proxy_flight.c",
           "if (!refresh_running(px, fl->key))\n\t\t\t(void)flight_refresh",
           "if (1)\n\t\t\t(void)flight_refresh",
           ["stale_burst_makes_one_lock_attempt_per_process"],
           "one lock attempt per stale request instead of one per process"),
    Mutant("stale_entry_not_served", "cache/cache_entry.c",
           "\tif (now_ms < e->stale_until_ms)\n\t\treturn ENTRY_STALE;", "",
           ["stale_key_fleet_of_three_served_stale_then_refreshed_once"],
           "clients of a stale key wait for the refresh"),
    Mutant("no_in_process_coalescing", "proxy/proxy_flight.c",
           "if ((fl = dict_get(px->flights, key)) != NULL) {",
           "if ((fl = dict_get(px->flights, key)) != NULL && 0) {",
           ["cold_burst_in_one_process_is_one_flight"],
           "one Redis lock attempt per request instead of one per process"),
    Mutant("lock_wait_never_runs_out", "proxy/proxy_hold.c",
           "\th->expired = 1;\n\th->cb(h->arg);",
           "\th->cb(h->arg);",
           ["waiter_past_lock_wait_is_answered_without_a_fetch"],
           "a waiter waits for the holder however long it takes"),
    Mutant("vary_every_waiter_shares_the_leads_variant", "proxy/proxy_waitlist.c",
           "return strcmp(id, v->variant) == 0;",
           "return 1;",
           ["cold_stampede_with_different_vary_values_each_gets_its_own_variant"],
           "waiters get the variant of another request's headers"),
    Mutant("per_user_response_shared_with_waiters", "proxy/proxy_waitlist.c",
           "|| (v->partial && v->entry != NULL) ||\n\t\t    (!lead && !v->shareable))",
           "|| (v->partial && v->entry != NULL))",
           ["private_answer_of_a_shared_fetch_goes_to_its_requester_only"],
           "a private or no-store answer goes to every waiter"),
    Mutant("early_refresh_never", "proxy/proxy_flight.c",
           "return fl->early_due || refresh_early_due(&fl->rt, e);",
           "return 0;",
           ["early_refresh_refreshes_a_hot_key_once_before_it_goes_stale"],
           "hot keys go stale at every TTL"),
    Mutant("variant_ignores_header_values", "proxy/proxy_vary.c",
           "h = fnv(h, kv->value, strlen(kv->value), 0);", ";",
           ["vary_stores_one_variant_per_header_value"],
           "one variant is served whatever the headers it varies on say"),
    # -- one fetch (proxy/proxy_refresh.c) ---------------------------------------
    Mutant("renewal_loss_unnoticed", "proxy/proxy_refresh.c",
           "else if (r == FENCE_LOST)\n\t\tmark_lost(rf);",
           "else if (0)\n\t\tmark_lost(rf);",
           ["renewal_never_extends_a_lock_another_fetch_holds"],
           "a fetch whose renewal found the lock taken over goes on as the holder"),
    Mutant("lock_never_renewed", "proxy/proxy_refresh.c",
           "if (rf->rep.mode == RF_LOCKED)\n\t\ttimer_arm(rf->renew_ev",
           "if (0)\n\t\ttimer_arm(rf->renew_ev",
           ["slow_origin_lock_is_renewed"],
           "a fetch slower than lock_ttl lets a second fetcher in"),
    Mutant("lock_never_released", "proxy/proxy_refresh.c",
           "if (rf->rep.mode == RF_DIRECT || rf->lost) {", "if (1) {",
           ["waiters_of_a_failed_fetch_get_its_error_without_a_backoff"],
           "after an unstored fetch the key stays locked until lock_ttl"),
    Mutant("hop_by_hop_headers_stored", "proxy/proxy_refresh.c",
           "hdr_copy(&resp->headers, &e->headers, HDR_DROP_LENGTH);",
           "{ const struct evkeyval *h; TAILQ_FOREACH(h, &resp->headers, next) "
           "if (strcasecmp(h->key, \"Content-Length\") != 0) "
           "evhttp_add_header(&e->headers, h->key, h->value); }",
           ["hop_by_hop_response_headers_are_neither_stored_nor_served"],
           "Connection, the headers it names and Keep-Alive are served on every hit"),
    # -- what goes upstream (proxy/proxy_req.c) ----------------------------------
    Mutant("no_x_forwarded_for", "proxy/proxy_forward.c",
           "if (peer != NULL) {\n\t\tevbuffer_add_printf(xff, \"%s\", peer);",
           "if (0) {\n\t\tevbuffer_add_printf(xff, \"%s\", peer);",
           ["client_forwarded_headers_are_replaced_by_corrals_own"],
           "the origin cannot tell who asked"),
    Mutant("no_x_forwarded_host", "proxy/proxy_forward.c",
           "if (name[0] != '\\0')",
           "if (0)",
           ["client_forwarded_headers_are_replaced_by_corrals_own"],
           "the origin cannot tell which host was asked for"),
    # -- the upstream's framing (upstream/upstream_curl.c) -----------------------
    Mutant("truncated_body_accepted", "upstream/upstream_curl.c",
           "if (rc == CURLE_OK) {", "if (rc == CURLE_OK || rc == CURLE_PARTIAL_FILE) {",
           ["test_upstream"],
           "a body cut short of its Content-Length is stored and served"),
    # -- semantics and large responses ---------------------------------------------
    Mutant("hit_for_miss_never_remembered", "cache/cache_script.c",
           "\"if tonumber(ARGV[9]) > 0 then\\n\"", "\"if false then\\n\"",
           ["an_uncacheable_key_skips_the_lock_fleet_wide"],
           "requests for a per-user key queue on the lock one after another"),
    Mutant("backoff_from_the_first_failure", "cache/cache_script.c",
           "\"  if n >= after then\\n\"", "\"  if true then\\n\"",
           ["one_error_is_not_a_backoff"],
           "one 503 answers the next requests without asking the origin"),
    Mutant("soft_purge_deletes", "proxy/proxy_purge.c",
           "(soft ? cache_soften : cache_invalidate)", "(cache_invalidate)",
           ["hard_tag_and_soft_url_purges"],
           "a soft purge of a URL deletes it: the next request waits for the origin"),
    Mutant("stream_without_back_pressure", "proxy/proxy_stream.c",
           "if (fastest(st) <= st->window)\n\t\treturn 0;\n\tst->paused = 1;",
           "if (1)\n\t\treturn 0;\n\tst->paused = 1;",
           ["a_long_body_streams_with_bounded_memory"],
           "a slow client makes the fetch buffer the whole body"),
    Mutant("cut_stream_ends_as_whole", "proxy/proxy_req.c",
           "if (req->stream_end > 0)\n\t\treturn REQ_DRAIN;",
           "if (1)\n\t\treturn REQ_DRAIN;",
           ["a_body_cut_short_is_never_served_whole"],
           "a client takes a cut body for a whole one"),
    Mutant("near_cache_without_admission", "cache/cache_l1.c",
           "\t\tif (l->counters.bytes + charge > l->max_bytes &&",
           "\t\tif (0 && l->counters.bytes + charge > l->max_bytes &&",
           ["a_loop_over_more_keys_than_the_near_cache_holds"],
           "a loop over more keys than fit evicts every entry before its next hit"),
    Mutant("fill_never_carries_the_entry", "cache/cache_script.c",
           "#define FILL_ENTRY_MAX\t\t16384",
           "#define FILL_ENTRY_MAX\t\t0",
           ["a_fill_brings_a_short_entry"],
           "waiters elsewhere read the entry after every fill"),
    Mutant("fill_entry_not_used_by_the_waiters", "proxy/proxy_flight.c",
           "if (e == NULL || strcmp(e->gen, fl->seen_gen) == 0) {",
           "if (1 || strcmp(e->gen, fl->seen_gen) == 0) {",
           ["a_fill_brings_a_short_entry"],
           "a fill's entry is dropped and the waiters read it again"),
    Mutant("fill_entry_of_any_length", "cache/cache_script.c",
           "\"if not KEYS[5] and #ARGV[2] <= \" STRINGIFY(FILL_ENTRY_MAX) \" then\\n\"",
           "\"if not KEYS[5] then\\n\"",
           ["a_fill_of_a_long_entry"],
           "every fill carries the whole entry, however long, to every waiting process"),
    Mutant("stream_first_piece_not_short", "upstream/upstream_curl.c",
           "\tif (f->streamed && !f->body_handed && !whole && n > FIRST_PIECE_MAX &&",
           "\tif (0 && f->streamed && !f->body_handed && !whole && n > FIRST_PIECE_MAX &&",
           ["test_upstream"],
           "a streamed read is handed over whole: the last waiter's first byte "
           "waits for every other waiter's whole read"),
    Mutant("late_request_waits_for_the_entry", "proxy/proxy_flight.c",
           "\t\tif (fl->stream_state == STREAM_NONE || fl->stream == NULL ||",
           "\t\tif (1 || fl->stream_state == STREAM_NONE || fl->stream == NULL ||",
           ["a_request_that_joins_once_the_body_has_begun"],
           "a request that joins a stream under way waits until the whole body is stored"),
    Mutant("siblings_lead_the_stream", "proxy/proxy_stream.c",
           "stream_join(st, w, resp, w == first) == -1)\n\t\t\t\tcontinue;\n\t\t\tTAILQ_REMOVE(list, w, flight_link);\n\t\t\tw->flight = NULL;\n\t\t\tled |= w == first;",
           "stream_join(st, w, resp, first != NULL && !led) == -1)\n\t\t\t\tcontinue;\n\t\t\tTAILQ_REMOVE(list, w, flight_link);\n\t\t\tw->flight = NULL;\n\t\t\tled |= first != NULL;",
           ["waiters_of_both_workers_get_the_body_as_it_arrives"],
           "the sibling's stream, first in the list, is counted as the fetching request"),
    Mutant("shared_cache_copy_not_checked", "cache/cache_l2.c",
           "\tif (atomic_load_explicit(&sh->tail, memory_order_relaxed) > p) {",
           "\tif (0) {",
           ["test_l2"],
           "a copy of an entry overwritten while it was taken is served, mixed"),
    Mutant("shared_cache_not_emptied_after_a_dead_holder", "cache/cache_l2.c",
           "\t\treset(l);\n\t\tcount(&sh->resets);",
           "\t\tcount(&sh->resets);",
           ["test_l2"],
           "what a worker that died while changing it left half done is served"),
    Mutant("rendered_hit_hides_the_close", "proxy/proxy_reply.c",
           "\t    \"Connection: close\\r\\n\" : \"\");",
           "\t    \"\" : \"\");",
           ["a_hit_head_has_each_field_once"],
           "a hit's head does not say the connection closes after it"),

    # -- peer streaming between workers (proxy/proxy_peer.c, proxy_flight.c) ----
    Mutant("peer_never_asked", "proxy/proxy_flight.c",
           "(fl->peer_slot = peer_find(fl->px, fl->key)) >= 0)",
           "0 && (fl->peer_slot = peer_find(fl->px, fl->key)) >= 0)",
           ["waiters_of_both_workers_get_the_body_as_it_arrives"],
           "the sibling's waiters get the body only once it is stored"),
    Mutant("peer_late_asker_refused", "proxy/proxy_flight.c",
           "if (fl->stream_state != STREAM_ON || fl->stream == NULL)",
           "if (1)",
           ["a_sibling_that_asks_once_the_body_has_begun"],
           "a sibling that asks once the body has begun waits for the entry"),
    Mutant("peer_no_stream_fetches_again", "proxy/proxy_flight.c",
           "\tif (TAILQ_EMPTY(&fl->waiters))\n\t\treturn FL_DONE;\n\treturn after_busy(fl);",
           "\tif (TAILQ_EMPTY(&fl->waiters))\n\t\treturn FL_DONE;\n\treturn FL_DIRECT;",
           ["a_sibling_with_no_stream_leaves_the_waiters_to_the_entry"],
           "a sibling with no stream sends its waiters to the origin"),
    Mutant("peer_cut_stream_ends_as_whole", "proxy/proxy_flight.c",
           "end_streams(fl, fl->peer_ok, OUT_COLLAPSED, -1);",
           "end_streams(fl, 1, OUT_COLLAPSED, -1);",
           ["a_body_cut_during_a_peer_stream_is_cut_in_every_worker"],
           "a sibling's waiters take a cut body for a whole one"),
    Mutant("upstream_listener_unchecked", "upstream/upstream_curl.c",
           "\t\tif (!listener_ok(f)) {", "\t\tif (0 && !listener_ok(f)) {",
           ["test_upstream"],
           "a worker reads a response from whoever took a sibling's socket name"),
    Mutant("peer_socket_open_to_anyone", "proxy/proxy_http.c",
           "\tif (!from_sibling(px, ev)) {",
           "\tif (0 && !from_sibling(px, ev)) {",
           ["a_peer_socket_answers_no_process_but_a_sibling_worker"],
           "any process on the host can read a response in flight"),
    # -- hosts: what the key ignores never reaches the origin (common/host.c,
    #    conf/conf.c, proxy/proxy_forward.c) ------------------------------------
    Mutant("host_client_name_sent_unkeyed", "proxy/proxy_forward.c",
           "const char *name = keyed ? asked : conf->forwarded_host;",
           "const char *name = asked;",
           ["a_clients_host_never_reaches_a_shared_entry",
            "without_key_host_the_origin_hears_the_canonical_name"],
           "one client's Host builds the page every other name is served"),
    Mutant("host_port_unchecked", "common/host.c",
           "return port == NULL ? 0 : port_parse(port, portlen, &h->port);",
           "return 0;",
           ["a_host_with_a_bad_port_is_refused_before_the_origin", "test_frame"],
           "app.test: and app.test:evil are served as app.test"),
    Mutant("host_name_allows_every_port", "common/host.c",
           "if (h->port != HOST_PORT_DEFAULT && h->port != listen_port)\n\t\t\treturn 0;",
           "if (0)\n\t\t\treturn 0;",
           ["a_host_with_a_bad_port_is_refused_before_the_origin",
            "key_host_keys_only_the_ports_the_listener_serves", "test_conf"],
           "a name in hosts lets any port in, and each port makes a key"),
    Mutant("host_wildcard_any_suffix", "common/host.c",
           "return h->len > sfx && strncasecmp(h->name + h->len - sfx,\n\t\t    p + 1, sfx) == 0;",
           "return h->len >= sfx - 1 && strncasecmp(h->name + h->len - sfx + 1,\n"
           "\t\t    p + 2, sfx - 1) == 0;",
           ["a_host_with_a_bad_port_is_refused_before_the_origin",
            "hosts_allow_list_answers_421_to_other_names", "test_conf"],
           "*.example.com lets evilexample.com and example.com in"),
    Mutant("host_trusted_forwarded_host_kept", "proxy/proxy_forward.c",
           "(fwd = hdr_forwarded_without(h->value, \"host\")) != NULL",
           "(fwd = strdup(h->value)) != NULL",
           ["without_key_host_the_origin_hears_the_canonical_name",
            "trusted_proxies_keep_and_extend_forwarded_headers"],
           "a trusted proxy's Forwarded host= reaches the origin past the key"),
    Mutant("host_keyed_raw", "proxy/proxy_forward.c",
           "if (raw[0] == '\\0' || host_parse(raw, strlen(raw), &h) == -1)\n\t\treturn raw;",
           "if (1)\n\t\treturn raw;",
           ["key_host_keys_only_the_ports_the_listener_serves"],
           "A.EXAMPLE:080 and a.example are two keys and two fetches"),
    Mutant("host_keyed_any_port_without_hosts", "conf/conf.c",
           "return !keyed || host_pattern_match(\"*\", 1, &h, c->listen_port);",
           "return 1;",
           ["key_host_keys_only_the_ports_the_listener_serves", "test_conf"],
           "with key_host, every port a client names makes a key and a fetch"),
    # -- late replies, hit-for-miss, the shared near cache's lock ------------------
    Mutant("late_acquire_keeps_its_lock", "cache/cache_store.c",
           "if (!op->finished || op->script != SCRIPT_ACQUIRE ||",
           "if (1 || op->script != SCRIPT_ACQUIRE ||",
           ["redis_stall_past_lock_ttl_leaves_no_lock_behind"],
           "a lock taken by an acquire given up on bars the key for lock_ttl"),
    Mutant("hit_for_miss_outlives_a_shareable_answer", "proxy/proxy_req.c",
           "(void)lock_unpass(req->px->cache, req->key, NULL, NULL);", "",
           ["a_shareable_answer_ends_hit_for_miss"],
           "one per-user answer sends every request upstream for hit_for_miss"),
    Mutant("passed_get_invalidates", "proxy/proxy_req.c",
           "\tif (forward_unsafe(evhttp_request_get_command(req->ev))) {",
           "\tif (1) {",
           ["an_uncacheable_key_skips_the_lock_fleet_wide"],
           "every GET passed upstream drops its key's entry fleet-wide"),
    Mutant("shared_cache_lock_waits_unbounded", "cache/cache_l2.c",
           "#define L2_LOCK_WAIT_US\t\t1000\t", "#define L2_LOCK_WAIT_US\t\t60000000\t",
           ["test_l2"],
           "a worker stalled inside the shared near cache's lock stalls every worker"),
    Mutant("shared_cache_busy_drop_forgotten", "cache/cache_l2.c",
           "\t\t\tatomic_store(&sh->reset_due, 1);",
           "\t\t\tatomic_store(&sh->reset_due, 0);",
           ["test_l2"],
           "a purge made while the lock is busy leaves the purged copy served"),

    # -- purges of many keys and tag sets (cache/cache_purge.c, cache_tag.c) ----
    Mutant("purge_counts_keys_tried", "cache/cache_purge.c",
           "\t\tif (r == FENCE_OK)\n\t\t\tpg->purged++;",
           "\t\tpg->purged++;",
           ["twenty_concurrent_prefix_purges_all_succeed_without_reconnecting"],
           "a purge answers with the keys it tried, twice for a key two purges reach"),
    Mutant("tag_purge_drops_failed_keys", "cache/cache_tag.c",
           "\t\tif (pg->items[i].state == ITEM_DONE)\n\t\t\tfailed |= op_argstr(op, pg->items[i].key);",
           "\t\tif (pg->items[i].state != ITEM_WAITING)\n\t\t\tfailed |= op_argstr(op, pg->items[i].key);",
           ["hard_tag_purge_that_fails_half_way_is_finished_by_a_retry"],
           "a key whose invalidation failed leaves the tag: no retry reaches its entry"),
    Mutant("tag_snapshot_dropped_after_a_batch", "cache/cache_script.c",
           "\t\"if redis.call('EXISTS', KEYS[2]) == 0 then\\n\"",
           "\t\"if redis.call('DEL', KEYS[2]) >= 0 then\\n\"",
           ["hard_tag_purge_that_fails_half_way_is_finished_by_a_retry"],
           "the snapshot goes after one batch: the rest of the tag is never purged"),
    Mutant("tag_store_never_prunes", "cache/cache_tag.c",
           "#define TAG_PRUNE_MAX\t\t\"16\"", "#define TAG_PRUNE_MAX\t\t\"0\"",
           ["tag_sets_drop_members_whose_entries_expired"],
           "a tag's set keeps every key ever stored under it while the tag is in use"),
    Mutant("purges_without_a_limit", "cache/cache_purge.c",
           "\tif (c->npurges >= PURGES_MAX) {", "\tif (0 && c->npurges >= PURGES_MAX) {",
           ["purges_past_the_limit_are_refused_with_retry_after"],
           "purges pile up without bound: each holds its batch in memory"),

    # -- reload and respawn; the admin listener's cap (proxy_life.c, main.c, proxy_http.c) --
    Mutant("reload_takes_restart_only_keys", "proxy/proxy_life.c",
           "\t\tif (changed & (1u << f->key))\n\t\t\tmemcpy(",
           "\t\tif (0 && (changed & (1u << f->key)))\n\t\t\tmemcpy(",
           ["a_worker_respawned_after_a_reload_runs_what_the_instance_runs"],
           "a worker started after a crash listens on the file's new port and "
           "writes under its new prefix"),
    Mutant("master_keeps_the_old_configuration", "proxy/main.c",
           "\t\t\tfree(conf);\n\t\t\tconf = new;",
           "\t\t\tfree(new);",
           ["a_worker_respawned_after_a_reload_runs_what_the_instance_runs"],
           "a worker started after a crash loses the reload's routes and TTLs"),
    Mutant("restart_pending_never_clears", "proxy/proxy_life.c",
           "\tnew->restart_pending = changed;",
           "\tnew->restart_pending = changed | running->restart_pending;",
           ["restart_pending_clears_when_the_file_goes_back"],
           "restart_pending still lists a key the file has put back"),
    Mutant("admin_connections_uncapped", "proxy/proxy_http.c",
           "\tif (px->admin_conns >= px->conf->admin_max_connections) {",
           "\tif (0) {",
           ["idle_admin_connections_are_capped_and_never_starve_the_public_port"],
           "idle admin connections take every descriptor; the public port starves"),
    Mutant("admin_turned_away_left_open", "proxy/proxy_http.c",
           "\tbufferevent_trigger_event(c->bev, BEV_EVENT_READING | BEV_EVENT_EOF,\n"
           "\t    BEV_TRIG_DEFER_CALLBACKS);\n",
           "",
           ["idle_admin_connections_are_capped_and_never_starve_the_public_port"],
           "an admin connection past the cap is answered but keeps its descriptor"),

    # -- a cluster primary that dies (cache/cache_slots.c, cache_op.c, claims) --
    Mutant("cluster_no_replica_reads", "cache/cache_op.c",
           "if ((n == NULL || !n->up) && op->readonly && op->ask == NULL &&",
           "if (0 && (n == NULL || !n->up) && op->readonly && op->ask == NULL &&",
           ["cluster_stale_entry_on_dead_primary_is_read_from_its_replica"],
           "a stale entry on a dead primary's slot is not served until the promotion"),
    Mutant("cluster_dead_node_kept", "cache/cache_slots.c",
           "\tif (owners > 0)\n\t\tdrop_unnamed(rt);",
           "\tif (0 && owners > 0)\n\t\tdrop_unnamed(rt);",
           ["cluster_stale_entry_on_dead_primary_is_read_from_its_replica"],
           "a dead node the map no longer names stays in the table, reconnecting"),
    Mutant("cluster_dead_node_logs_every_connect", "cache/cache_route.c",
           "\t\tif (n->quiet)\n\t\t\tlog_debug(", "\t\tif (0)\n\t\t\tlog_debug(",
           ["cluster_primary_killed_in_cold_stampede_fleet_fetches_once_per_key"],
           "every failed connect to a dead node is logged"),
    Mutant("claim_never_taken", "proxy/proxy_flight.c",
           ".claim = own && mode == RF_DIRECT && fl->degraded,",
           ".claim = 0 && own && mode == RF_DIRECT && fl->degraded,",
           ["cluster_cold_stampede_on_dead_primary_fetches_once_per_instance"],
           "without Redis's lock every worker of an instance fetches the key"),
    Mutant("claim_entry_not_shared", "proxy/proxy_refresh.c",
           "\tif (rf->claimed && why[0] == '\\0' && rf->marker == NULL &&",
           "\tif (0 && rf->claimed && why[0] == '\\0' && rf->marker == NULL &&",
           ["cluster_cold_stampede_on_dead_primary_fetches_once_per_instance"],
           "the claim's holder keeps its entry: the siblings fetch again after it"),
    # -- streams at the fastest client's pace (proxy/proxy_stream.c, -----------
    #    proxy_flight.c, proxy_http.c)
    Mutant("stream_never_detaches_a_laggard", "proxy/proxy_stream.c",
           "\tif (low <= st->window)\n\t\tdetach_laggards(st, len);",
           "\tif (0)\n\t\tdetach_laggards(st, len);",
           ["test_stream", "a_stalled_reader_is_detached",
            "a_stalled_reader_of_a_body_too_long_to_keep_is_cut_alone"],
           "a stalled client is never let go: its share of the body grows without bound"),
    Mutant("stream_laggard_skips_bytes", "proxy/proxy_stream.c",
           "\t\tw->fed += evbuffer_get_length(piece);",
           "\t\tw->fed += 2 * evbuffer_get_length(piece);",
           ["test_stream", "a_stalled_reader_is_detached",
            "a_request_that_joins_once_the_body_has_begun"],
           "a client fed from the kept body misses part of it"),
    Mutant("stream_late_joiners_each_fetch", "proxy/proxy_flight.c",
           "\tif (rep->partial && waitlist_next_round(&fl->waiters, &fl->v)) {",
           "\tif (0 && waitlist_next_round(&fl->waiters, &fl->v)) {",
           ["late_joiners_of_a_body_too_long_to_keep_share_one_fetch"],
           "every request that came once a long body was past what is kept fetches its own"),
    Mutant("client_timeout_reads_during_a_reply", "proxy/proxy_http.c",
           "\tif (replying(c))\n\t\tbufferevent_disable(c->bev, EV_READ);",
           "\tif (0 && replying(c))\n\t\tbufferevent_disable(c->bev, EV_READ);",
           ["a_body_that_waits_on_a_slow_origin_outlasts_client_timeout"],
           "an origin's pause mid-body longer than client_timeout closes the clients"),
    Mutant("client_timeout_writes_with_nothing_queued", "proxy/proxy_http.c",
           "\t\tbufferevent_disable(c->bev, EV_WRITE);\n\t\tbufferevent_trigger",
           "\t\tbufferevent_trigger",
           ["a_body_that_waits_on_a_slow_origin_outlasts_client_timeout"],
           "Corral's own wait for the origin counts as the client's silence"),
    Mutant("client_timeout_never_for_a_stalled_client", "proxy/proxy_http.c",
           "\telse\t/* still sending: restart the write timeout */\n"
           "\t\tbufferevent_enable(c->bev, EV_WRITE);",
           "\telse\n\t\tbufferevent_set_timeouts(c->bev, NULL, NULL);",
           ["client_timeout_still_closes_a_client_that_takes_nothing_or_idles"],
           "a client that takes nothing of its reply holds its connection for ever"),
    # -- waiters stay with a live lock holder (proxy/proxy_flight.c,
    #    proxy/proxy_hold.c, cache/cache_script.c) -------------------------------
    Mutant("waiter_fetches_when_lock_wait_runs_out", "proxy/proxy_flight.c",
           "\t\tif (fl->hold.expired)\n\t\t\treturn flight_give_up(fl);",
           "\t\tif (fl->hold.expired)\n\t\t\treturn FL_DIRECT;",
           ["waiter_past_lock_wait_is_answered_without_a_fetch",
            "waiter_past_lock_wait_gets_the_stale_entry"],
           "a waiter past lock_wait sends the key's second request while the holder fetches"),
    Mutant("lock_wait_default_shorter_than_the_upstream_timeout", "proxy/proxy_hold.c",
           "return fetch_max_ms + rt->lock_ttl_ms + rt->lock_poll_ms;",
           "return 3000;",
           ["slow_query_over_two_instances_of_two_workers_is_fetched_once"],
           "with the defaults, the waiters of a query slower than 3 s give up"),
    Mutant("lock_wait_not_counted_again_for_a_new_holder", "proxy/proxy_hold.c",
           "(same || rt->lock_wait_ms > 0)",
           "(same || 1)",
           ["waiter_counts_its_budget_again_for_a_new_holder"],
           "the waiters of a takeover give up while its fetch runs"),
    Mutant("every_waiter_takes_the_lock_over", "cache/cache_script.c",
           "\"if l == ARGV[1] then return {1} end\\n\"",
           "\"if l == ARGV[1] or ARGV[4] ~= '' then return {1} end\\n\"",
           ["killed_lock_holder_worker_is_taken_over_once_in_the_fleet"],
           "each waiting process takes the lock over (a dead or slow holder): one fetch each"),
    Mutant("waiters_elsewhere_retry_a_failed_fetch", "cache/cache_script.c",
           "\"  if f[1] == ARGV[4] then return {5, f[2], f[3]} end\\n\"",
           "\"  if false then return {5, f[2], f[3]} end\\n\"",
           ["failed_fetch_answers_its_waiters_across_the_fleet",
            "waiter_elsewhere_gets_the_failed_fetchs_error_at_once"],
           "the waiters of a failed fetch in other processes take the lock and fetch again"),
    Mutant("waiters_in_the_process_retry_a_failed_fetch", "proxy/proxy_flight.c",
           "verdict_set(&fl->v, fl->v.not_forwarded ? rest : o, rest, e);\n\treturn FL_DONE;",
           "verdict_set(&fl->v, fl->v.not_forwarded ? rest : o, rest, e);\n"
           "\treturn fl->v.not_forwarded ? FL_DONE : FL_LOCK;",
           ["failed_fetch_answers_its_waiters_across_the_fleet"],
           "a failed fetch's flight fetches again for its waiters"),
    # -- the origin budget (cache/cache_lease.c, proxy/proxy_budget.c) ------------
    Mutant("slot_never_released", "cache/cache_lease.c",
           "\"local n = redis.call('ZREM', KEYS[1], ARGV[1])\\n\"",
           "\"local n = 0\\n\"",
           ["flood_of_cold_keys_never_exceeds_the_fleet_budget"],
           "a finished fetch keeps its slot until its lease runs out"),
    Mutant("slot_lease_never_renewed", "proxy/proxy_budget.c",
           "if (t->op == NULL)\n\t\tt->op = lease_renew(b->px->cache, b->cp->name, t->token,\n"
           "\t\t    lease_ms(b), on_renewed, t);",
           "(void)on_renewed;",
           ["slow_fetches_keep_their_slots_past_the_lease"],
           "a fetch longer than slot_lease loses its slot to another: over budget"),
    Mutant("slot_lease_never_expires", "cache/cache_lease.c",
           "\"local reaped = redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)\\n\"",
           "\"local reaped = 0\\n\"",
           ["instance_killed_holding_slots_gives_them_back_within_the_lease"],
           "a dead instance's slots are lost to the fleet for good"),
    Mutant("slot_priorities_ignored", "cache/cache_lease.c",
           "\"  if redis.call('ZCARD', KEYS[1]) + ahead < max then\\n\"",
           "\"  if redis.call('ZCARD', KEYS[1]) < max then\\n\"",
           ["budget_full_of_pass_through_gives_the_next_slot_to_a_cold_miss"],
           "a freed slot goes to whoever asks first, not to the waiting cold miss"),
    Mutant("slot_ranks_ignored", "proxy/proxy_budget.c",
           "return (int64_t)t->a.cls * RANK_SPAN + (RANK_SPAN - 1 - w);",
           "return 0 * w;",
           ["budget_full_of_pass_through_gives_the_next_slot_to_a_cold_miss"],
           "pass-through traffic queued first keeps the origin from the cold miss"),
    Mutant("lease_release_without_publish", "cache/cache_lease.c",
           "\"  redis.call('SPUBLISH', ARGV[3], 'freed')\\n\"", "\"\"",
           ["budget_full_of_pass_through_gives_the_next_slot_to_a_cold_miss"],
           "other instances' waiters sleep until their re-check, not woken"),
    Mutant("slot_release_without_publish", "cache/cache_lease.c",
           "\"  redis.call('SPUBLISH', ARGV[3], 'freed')\\n\"", "\"\"",
           ["budget_full_of_pass_through_gives_the_next_slot_to_a_cold_miss"],
           "other instances' waiters sleep until their re-check, not woken"),
    Mutant("slot_best_out_of_the_fleets_order", "proxy/proxy_budget.c",
           "(r == top_rank && strcmp(t->name, top->name) < 0)", "(0)",
           ["flood_of_cold_keys_never_exceeds_the_fleet_budget"],
           "the fleet's best ticket is not its process's best: freed slots idle "
           "until a re-check"),
    Mutant("slot_freed_during_an_ask_forgotten", "proxy/proxy_budget.c",
           "if (t->op != NULL)\n\t\tb->rewake = 1;", "if (t->op != NULL)\n\t\t(void)0;",
           ["slot_freed_while_the_waiter_asks_is_not_lost"],
           "a release heard while the best ticket asks is lost: the slot idles "
           "until a re-check"),
    Mutant("slot_local_share_ignored", "proxy/proxy_budget.c",
           "if (sum <= local_share(b))\n\t\treturn 1;",
           "if (1)\n\t\treturn 1;",
           ["redis_down_each_instance_keeps_to_its_local_share"],
           "with Redis down, every instance sends the origin all it gets"),
    # -- upstream pools: choice, health, retries, per-pool budgets
    #    (proxy/proxy_pool.c, proxy_probe.c, proxy_origin.c, proxy_upstreams.c,
    #    conf/conf_pool.c) ------------------------------------------------------
    Mutant("pool_post_resent_after_a_reset", "proxy/proxy_origin.c",
           "\t\treturn f->ur.replayable;", "\t\treturn 1;",
           ["post_reset_after_reaching_a_server_is_never_sent_again"],
           "a POST that reached a server which reset it is sent to another"),
    Mutant("pool_connect_failure_not_retried", "proxy/proxy_origin.c",
           "\tcase UPSTREAM_ERR_CONNECT:\n\t\treturn 1;",
           "\tcase UPSTREAM_ERR_CONNECT:\n\t\treturn 0;",
           ["dead_server_out_after_max_fails_and_back_after_health_checks"],
           "a request to a dead server fails instead of going to a live one"),
    Mutant("pool_first_byte_timeout_ignored", "proxy/proxy_origin.c",
           "if (c->first_byte_timeout_ms > 0 && c->first_byte_timeout_ms < left) {",
           "if (0) {",
           ["hung_server_times_out_its_requests_go_elsewhere_and_it_is_taken_out"],
           "a hung server holds its requests for the whole timeout"),
    Mutant("pool_retry_not_counted", "proxy/proxy_origin.c",
           "\t\t\tSTAT_INC(f->px->stats, f->route, upstream_retries);\n", "",
           ["post_reset_after_reaching_a_server_is_never_sent_again"],
           "/stats upstream_retries stays 0 while requests are sent again"),
    Mutant("pool_failed_server_never_out", "proxy/proxy_pool.c",
           "if (++s->fails < c->max_fails)\n\t\treturn;",
           "if (++s->fails > 0)\n\t\treturn;",
           ["dead_server_out_after_max_fails_and_back_after_health_checks",
            "hung_server_times_out_its_requests_go_elsewhere_and_it_is_taken_out"],
           "a server that keeps failing is never taken out"),
    Mutant("pool_health_never_restores", "proxy/proxy_pool.c",
           "if (s->down && ++s->rise >= c->health_rise)",
           "if (s->down && ++s->rise >= c->health_rise + 1000000)",
           ["dead_server_out_after_max_fails_and_back_after_health_checks"],
           "a server taken out never comes back, healthy or not"),
    Mutant("pool_least_outstanding_ignores_load", "proxy/proxy_pool.c",
           "return (int64_t)a->in_flight * b->weight <\n\t    (int64_t)b->in_flight * a->weight;",
           "return 0;",
           ["least_outstanding_sends_new_requests_to_the_fast_servers"],
           "requests go round to a server busy with slow ones"),
    Mutant("pool_removed_server_still_chosen", "proxy/proxy_pool.c",
           "return (avoid == NULL || strcmp(s->url, avoid) != 0) && !s->removed &&",
           "return (avoid == NULL || strcmp(s->url, avoid) != 0) &&",
           ["reload_that_removes_a_server_drains_its_requests_in_flight"],
           "a server a reload removed keeps taking new requests"),
    Mutant("pool_route_upstream_ignored", "proxy/proxy_pool.c",
           "if (name != NULL && name[0] != '\\0')\n\t\tTAILQ_FOREACH",
           "if (0)\n\t\tTAILQ_FOREACH",
           ["route_with_its_own_pool_never_sends_to_the_default_pool"],
           "a route's own pool is ignored: its requests go to the default pool"),
    Mutant("pool_per_server_cap_ignored", "proxy/proxy_pool.c",
           "return cap == 0 || s->in_flight < cap;", "return cap >= 0;",
           ["origin_budget_and_per_server_cap_apply_to_each_pool"],
           "one server takes more than max_requests_per_server"),
    Mutant("pool_budget_shared_by_every_pool", "proxy/proxy_budget.c",
           "return b->cp->max_requests;", "return b->main->cp->max_requests;",
           ["origin_budget_and_per_server_cap_apply_to_each_pool"],
           "a named pool gets the default pool's max_requests"),
    Mutant("probe_status_ignored", "proxy/proxy_probe.c",
           "ok = resp->result == UPSTREAM_OK && resp->status == pr->a.status;",
           "ok = resp->result == UPSTREAM_OK;",
           ["health_check_answering_another_status_takes_a_server_out"],
           "a server whose health check answers 503 stays in"),
    Mutant("probe_never_repeats", "proxy/proxy_probe.c",
           "\ttimer_arm(pr->timer, pr->a.interval_ms);\n\tif (pr->up != NULL",
           "\tif (pr->up != NULL",
           ["dead_server_out_after_max_fails_and_back_after_health_checks"],
           "one health check only: a server out never passes health_rise"),
    Mutant("probe_path_dropped", "proxy/proxy_probe.c",
           "snprintf(pr->url, len, \"%s%s\", a->url, a->path);",
           "snprintf(pr->url, len, \"%s%.0s\", a->url, a->path);",
           ["dead_server_out_after_max_fails_and_back_after_health_checks"],
           "health checks ask the server's root, not health_path"),
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
    Mutant("conf_weight_ignored", "conf/conf_pool.c",
           "\t*w = (int)n;", "\t*w = 1;",
           ["test_conf"], "weight=N is read and dropped"),
    Mutant("conf_only_the_first_server", "conf/conf_pool.c",
           "\tp->nservers = n;", "\tp->nservers = n > 0 ? 1 : 0;",
           ["test_conf", "route_with_its_own_pool_never_sends_to_the_default_pool"],
           "url keeps its first server only"),
    Mutant("conf_unknown_pool_accepted", "conf/conf_pool.c",
           "if (r->upstream[0] != '\\0' &&\n\t\t    conf_pool_find",
           "if (0 &&\n\t\t    conf_pool_find",
           ["test_conf", "pool_config_errors_name_file_and_line"],
           "a route naming no pool is accepted (its requests go to the default)"),
]


# -- the scratch tree -----------------------------------------------------------

def tree_files():
    """The working tree's files as git sees them: tracked, or untracked and
    not ignored (so uncommitted changes are mutated and tested too)."""
    out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                          "--exclude-standard"], cwd=ROOT, capture_output=True,
                         check=True).stdout
    return sorted({p for p in out.decode().split("\0")
                   if p and os.path.isfile(os.path.join(ROOT, p))})


def read(path):
    with open(path, "rb") as f:
        return f.read()


def write(path, data):
    """Writes data with a new mtime, so make rebuilds what depends on it."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def mirror():
    """Makes SCRATCH hold exactly the tree's files (its build/ kept), writing
    only those that differ: objects of unchanged sources stay valid."""
    files = tree_files()
    for rel in files:
        data, dst = read(os.path.join(ROOT, rel)), os.path.join(SCRATCH, rel)
        if not os.path.exists(dst) or read(dst) != data:
            write(dst, data)
            shutil.copymode(os.path.join(ROOT, rel), dst)
    wanted = set(files)
    for dirpath, dirnames, filenames in os.walk(SCRATCH):
        if dirpath == SCRATCH and "build" in dirnames:
            dirnames.remove("build")
        for name in filenames:
            rel = os.path.relpath(os.path.join(dirpath, name), SCRATCH)
            if rel not in wanted:
                os.remove(os.path.join(SCRATCH, rel))


def unit_names(tests):
    return [t for t in tests if t.startswith("test_")]


def build(tests):
    """Builds corral (and the unit binaries tests names) in SCRATCH; returns
    None or the tail of make's output on failure."""
    targets = ["build/asan/corral"] + [f"build/asan/unit/{u}" for u in unit_names(tests)]
    p = subprocess.run(["make", "-s", "-C", SCRATCH, *targets], capture_output=True,
                       text=True, timeout=BUILD_TIMEOUT_S)
    if p.returncode != 0:
        return "\n".join((p.stdout + p.stderr).splitlines()[-20:])
    return None


def run_tests(tests):
    """Runs the tests in SCRATCH, stopping at the first failure; returns
    (all passed, the names of the failed ones)."""
    cmd = [sys.executable, os.path.join(SCRATCH, "tests", "run.py"), "-x",
           "--bin", os.path.join(SCRATCH, "build", "asan", "corral")]
    if unit_names(tests):
        cmd += ["--unit", os.path.join(SCRATCH, "build", "asan", "unit")]
    for t in tests:
        cmd += ["-k", t]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, errors="replace",
                           timeout=TESTS_TIMEOUT_S, cwd=SCRATCH)
    except subprocess.TimeoutExpired:
        return False, ["(the tests timed out)"]
    failed = [line[5:][:REASON_CHARS] for line in p.stdout.splitlines()
              if line.startswith("FAIL ")]
    passed = [line for line in p.stdout.splitlines() if line.startswith("PASS ")]
    if p.returncode == 0 and not passed:
        return False, ["(no test matched: " + ", ".join(tests) + ")"]
    return p.returncode == 0, failed or [f"(run.py exited with {p.returncode})"]


# -- the run --------------------------------------------------------------------

def check_mutant(m):
    """None if m applies to the tree, else why it is stale."""
    path = os.path.join(SCRATCH, m.file)
    if not os.path.exists(path):
        return f"{m.file} does not exist"
    n = read(path).decode().count(m.find)
    return None if n == 1 else f"its find-text occurs {n} times in {m.file}, not once"


def run_mutant(m):
    """'killed', 'survived' or 'error', and a note."""
    path = os.path.join(SCRATCH, m.file)
    original = read(path)
    write(path, original.decode().replace(m.find, m.replace).encode())
    try:
        failure = build(m.tests)
        if failure:
            return "error", f"does not build:\n{failure}"
        passed, failed = run_tests(m.tests)
        if passed:
            return "survived", f"{', '.join(m.tests)} passed ({m.why})"
        return "killed", f"by {failed[0]}"
    finally:
        write(path, original)


def main(argv=None):
    ap = argparse.ArgumentParser(description="Mutation tests of Corral's lock protocol.")
    ap.add_argument("-k", dest="keywords", action="append",
                    help="only the mutants whose name contains this (repeatable)")
    ap.add_argument("--list", action="store_true", help="list the mutants and exit")
    ap.add_argument("--no-baseline", action="store_true",
                    help="skip running the tests on the unchanged tree first")
    args = ap.parse_args(argv)

    mutants = [m for m in MUTANTS
               if not args.keywords or any(k in m.name for k in args.keywords)]
    if args.list:
        for m in mutants:
            print(f"{m.name}: {m.file}: {m.why}\n    tests: {', '.join(m.tests)}")
        return 0
    if not mutants:
        print("no mutant matches")
        return 1
    started = time.monotonic()
    mirror()
    stale = [(m, why) for m in mutants for why in [check_mutant(m)] if why]
    for m, why in stale:
        print(f"STALE {m.name}: {why}", flush=True)
    if stale:
        print(f"{len(stale)} stale mutants: update their find-text")
        return 1

    tests = sorted({t for m in mutants for t in m.tests})
    failure = build(tests)
    if failure:
        print(f"the unchanged tree does not build:\n{failure}")
        return 1
    if not args.no_baseline:
        passed, failed = run_tests(tests)
        if not passed:
            print(f"the mutants' tests fail on the unchanged tree: {', '.join(failed)}")
            return 1
        print(f"baseline: {len(tests)} test names pass on the unchanged tree "
              f"({time.monotonic() - started:.0f} s)", flush=True)

    counts = {"killed": 0, "survived": 0, "error": 0}
    for m in mutants:
        t0 = time.monotonic()
        verdict, note = run_mutant(m)
        counts[verdict] += 1
        print(f"{verdict.upper()} {m.name} ({time.monotonic() - t0:.0f} s): {note}",
              flush=True)
    build([])	# leave the copy's binary unmutated
    took = time.monotonic() - started
    errors = f", {counts['error']} errors" if counts["error"] else ""
    print(f"{counts['killed']} killed, {counts['survived']} survived{errors} "
          f"({took:.0f} s)", flush=True)
    return 0 if counts["survived"] == 0 and counts["error"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
