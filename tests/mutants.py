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
           "\tif (req->waiter.spec == NULL &&\n"
           "\t    forward_unsafe(evhttp_request_get_command(req->ev))) {",
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
           "if (t->op == NULL)\n\t\tt->op = lease_renew(b->px->cache, t->token, lease_ms(b),\n"
           "\t\t    on_renewed, t);",
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
    # -- the fill path's probes (cache/cache_script.c, proxy/proxy_probe.c) -----
    Mutant("fill_message_without_publish_time", "cache/cache_script.c",
           "\t\"redis.call('DEL', KEYS[2], KEYS[3], KEYS[4])\\n\"\n\tFILL_AT(\"ARGV[5]\")\n",
           "\t\"redis.call('DEL', KEYS[2], KEYS[3], KEYS[4])\\n\"\n",
           ["fill_probes_time_a_short_entrys_message_and_its_waiters_wake"],
           "a store's fill message carries no publish time: redis.fill_delay never moves"),
    Mutant("fill_wake_not_timed", "proxy/proxy_flight.c",
           "\tfl->v.woken_us = util_mono_us();\n", "",
           ["fill_probes_time_a_long_entry_named_only_and_read_once"],
           "a flight woken by a fill is not stamped: fill_wake never moves"),
    Mutant("rush_of_one_timed", "proxy/proxy_probe.c",
           "if (n > 1)\n", "if (n > 0)\n",
           ["fill_probes_time_a_short_entrys_message_and_its_waiters_wake"],
           "a flight of one request counts as a hand-out to many"),
    # -- Redis credentials (cache/cache_adapter.c, cache_route.c, cache_sentinel.c,
    # cache_sub.c, conf/conf_secret.c, proxy/proxy_life.c) --------------------------
    Mutant("redis_username_not_sent", "cache/cache_adapter.c",
           "if (a->user[0] == '\\0') {", "if (1) {",
           ["acl_user_with_password_file_or_credential_caches_once_for_the_fleet"],
           "AUTH goes as the default user: an ACL user's password is refused"),
    Mutant("password_file_not_reread_on_reload", "proxy/proxy_life.c",
           "\t\tcache_credentials(px->cache, new);", "\t\t(void)0;",
           ["rotated_password_in_redis_and_file_keeps_working_after_reload",
            "wrong_password_said_once_served_from_origin_and_back_after_reload"],
           "a reload reads the new password but connections keep using the old"),
    Mutant("sentinel_auth_skipped", "cache/cache_sentinel.c",
           "\t(void)adapter_auth(s->ask, &s->auth, on_ask_auth, NULL);\n",
           "\t(void)on_ask_auth;\n",
           ["sentinel_requiring_auth_is_asked_and_listened_to_with_credentials"],
           "the sentinels are asked without AUTH: one that wants it never answers"),
    Mutant("sentinel_feed_without_auth", "cache/cache_sentinel.c",
           "s->auth.user,\n\t    s->auth.pass, NULL, on_feed_reply, s);",
           "s->auth.user,\n\t    NULL, NULL, on_feed_reply, s);",
           ["sentinel_requiring_auth_is_asked_and_listened_to_with_credentials"],
           "+switch-master goes unheard from a sentinel that wants a password"),
    Mutant("auth_refusal_logged_at_each_reconnect", "cache/cache_route.c",
           "if (strcmp(reason, n->down_reason) != 0)\n\t\tlog_error(",
           "if (1)\n\t\tlog_error(",
           ["wrong_password_said_once_served_from_origin_and_back_after_reload"],
           "a wrong password fills the log with one error per reconnect"),
    Mutant("subscriber_auth_refusal_ignored", "cache/cache_sub.c",
           "log_debug(\"redis: subscriber: AUTH refused: %s\", reply->str);\n\t\tlose(s);",
           "log_debug(\"redis: subscriber: AUTH refused: %s\", reply->str);",
           ["wrong_password_said_once_served_from_origin_and_back_after_reload"],
           "a subscriber connection Redis refused stays open, unsubscribed, after "
           "the password is fixed: no fills or purges heard"),
    Mutant("subscriber_unneeded_password_taken_as_refusal", "cache/cache_sub.c",
           "if (reply->type == REDIS_REPLY_ERROR &&\n\t    !adapter_auth_not_needed(reply->str)) {",
           "if (reply->type == REDIS_REPLY_ERROR) {",
           ["password_for_a_redis_that_wants_none_is_only_a_warning"],
           "a password Redis does not ask for loses every subscriber connection"),
    Mutant("secret_file_readable_by_others_accepted", "conf/conf_secret.c",
           "if (st.st_mode & OTHERS_MAY) {", "if (0) {",
           ["password_file_errors_name_the_file_and_line_never_the_secret",
            "test_conf"],
           "a password file anyone on the host can read is used"),
    Mutant("secret_file_newline_kept", "conf/conf_secret.c",
           "while (len > 0 && (buf[len - 1] == '\\n' || buf[len - 1] == '\\r'))",
           "while (0)",
           ["acl_user_with_password_file_or_credential_caches_once_for_the_fleet"],
           "a password file ending in a newline (as editors write it) is refused"),
    Mutant("secret_credentials_prefix_not_understood", "conf/conf_secret.c",
           "\tif (strncmp(name, CREDENTIALS_PREFIX, plen) == 0)\n\t\tname += plen;\n",
           "\tif (0)\n\t\tname += plen;\n",
           ["acl_user_with_password_file_or_credential_caches_once_for_the_fleet"],
           "password_file = $CREDENTIALS_DIRECTORY/name, as systemd writes it, "
           "is refused"),
    Mutant("secret_file_of_two_lines_accepted", "conf/conf_secret.c",
           "strpbrk(buf, \"\\r\\n\") != NULL", "0",
           ["password_file_errors_name_the_file_and_line_never_the_secret"],
           "a file with a second line sends both lines as the password"),

    # -- every module: tests that catch what they claim (issue 26) --------------
    # -- the six the audit found unguarded --
    Mutant("cluster_moved_never_corrects_the_map", "cache/cache_route.c",
           "\tif (rt->slots[slot] != NULL)\n\t\trt->slots[slot]->slots--;\n"
           "\trt->slots[slot] = n;\n\tn->slots++;\n\troute_refresh(rt);",
           "\t(void)n;",
           ["cluster_slot_migrated_while_refresh_holds_lock_fetches_once"],
           "after a completed migration every command is redirected; /stats keeps the old owner"),
    Mutant("sentinel_switch_master_ignored", "cache/cache_sentinel.c",
           "\ts->hooks->primary(host, port, s->arg);", "\t(void)port;",
           ["sentinel_manual_failover_is_followed_at_the_switch"],
           "after a manual failover, writes go to the demoted primary for ~10 s, then are lost"),
    Mutant("stale_if_error_from_the_end_of_staleness", "proxy/proxy_flight.c",
           "return util_now_ms() < fl->prev->fresh_until_ms + f.sie_ms;",
           "return util_now_ms() < fl->prev->stale_until_ms + f.sie_ms;",
           ["stale_if_error_window_runs_from_the_end_of_freshness"],
           "an entry is served on errors stale_while_revalidate past its stale_if_error"),
    Mutant("per_user_answer_streamed_to_waiters", "proxy/proxy_flight.c",
           "if (!stream_wanted(resp, 1) || !hdr_shareable(&resp->headers) ||",
           "if (!stream_wanted(resp, 1) ||",
           ["per_user_answer_long_enough_to_stream_goes_to_its_requester_only"],
           "a long Set-Cookie or private answer streams to every collapsed client"),
    Mutant("stop_ignores_background_refreshes", "proxy/proxy_life.c",
           "if (px->nrequests == 0 && px->nrefreshes == 0 &&",
           "if (px->nrequests == 0 &&",
           ["graceful_stop_with_only_a_refresh_running_waits_for_it"],
           "a stop with only a refresh running leaves its lock for lock_ttl, the entry stale"),
    Mutant("host_wildcard_matches_inside_the_name", "common/host.c",
           "return h->len > sfx && strncasecmp(h->name + h->len - sfx,\n\t\t    p + 1, sfx) == 0;",
           "return h->len > sfx && memmem(h->name, h->len, p + 1, sfx) != NULL;",
           ["test_conf", "hosts_allow_list_answers_421_to_other_names"],
           "*.example.com lets a.example.com.evil in"),
    Mutant("host_name_matches_as_a_prefix", "common/host.c",
           "return h->len == namelen && strncasecmp(h->name, p, namelen) == 0;",
           "return h->len >= namelen && strncasecmp(h->name, p, namelen) == 0;",
           ["test_conf", "hosts_allow_list_answers_421_to_other_names"],
           "app.test lets app.test.evil in"),
    # -- proxy/proxy_frame.c --
    Mutant("frame_two_content_lengths_taken", "proxy/proxy_frame.c",
           "if (++h->lengths > 1)",
           "if (++h->lengths > 2)",
           ["test_frame", "bad_requests_are_refused_and_their_connections_closed"],
           "a request with two Content-Length lines is framed by the second: smuggling"),
    Mutant("frame_length_with_chunked_taken", "proxy/proxy_frame.c",
           '\t\tif (h->lengths > 0)\n\t\t\treturn reject(f, 400,\n\t\t\t    "Content-Length with Transfer-Encoding");\n',
           "",
           ["test_frame", "bad_requests_are_refused_and_their_connections_closed"],
           "Content-Length with chunked passes (the next hop may frame by the length)"),
    Mutant("frame_chunk_size_wraps", "proxy/proxy_frame.c",
           "if (++digits > CHUNK_DIGITS)",
           "if (++digits > CHUNK_DIGITS + 2)",
           ["test_frame"],
           "a 17-digit chunk size wraps to a small one: the rest of the chunk is a smuggled request"),
    Mutant("frame_empty_chunk_size_ends_the_body", "proxy/proxy_frame.c",
           '\tif (s == p)\n\t\treturn reject(f, 400, "bad chunk size");\n',
           "",
           ["test_frame", "bad_requests_are_refused_and_their_connections_closed"],
           "an empty chunk-size line is read as the last chunk: what follows is a new request"),
    Mutant("frame_chunked_in_http10_taken", "proxy/proxy_frame.c",
           '\t\tif (h->minor == 0)\n\t\t\treturn reject(f, 400, "Transfer-Encoding in HTTP/1.0");\n',
           "",
           ["test_frame", "transfer_encoding_not_ending_in_chunked_is_refused"],
           "an HTTP/1.0 request framed by chunked, which a 1.0 next hop reads as no body"),
    Mutant("frame_obs_fold_taken", "proxy/proxy_frame.c",
           '\tif (n > 0 && is_ows((unsigned char)p[0]))\n\t\treturn reject(f, 400, "obs-fold (line starts with whitespace)");\n\tif ((colon = memchr(p, \':\', n)) == NULL)',
           "\tif (n > 0 && is_ows((unsigned char)p[0]))\n\t\treturn 0;\n\tif ((colon = memchr(p, ':', n)) == NULL)",
           ["test_frame", "bad_requests_are_refused_and_their_connections_closed"],
           "a folded field line is let through to libevent, which joins it to the previous field"),
    # -- proxy/proxy_hdr.c --
    Mutant("set_cookie_response_shared", "proxy/proxy_hdr.c",
           '\tif (evhttp_find_header(headers, "Set-Cookie") != NULL) {\n\t\t*why = "set-cookie";',
           '\tif (0) {\n\t\t*why = "set-cookie";',
           ["test_hdr", "per_user_answer_long_enough_to_stream_goes_to_its_requester_only"],
           "a response that sets one user's cookie is stored and served to everyone"),
    Mutant("authorized_response_shared", "proxy/proxy_hdr.c",
           "if (authorized && !cc.public_ && cc.s_maxage < 0 && !cc.must_revalidate)",
           "if (0 && authorized && !cc.public_ && cc.s_maxage < 0 && !cc.must_revalidate)",
           ["test_hdr"],
           "an answer to a request with Authorization, not marked public, is shared"),
    Mutant("age_not_subtracted", "proxy/proxy_hdr.c",
           "\t\tlifetime -= secs(age);",
           "\t\t(void)age;",
           ["test_hdr"],
           "an answer that aged in another cache is kept for its whole max-age again"),
    Mutant("if_none_match_by_prefix", "proxy/proxy_hdr.c",
           "if (n == taglen && n > 0 && strncmp(p, tag, n) == 0)",
           "if (n > 0 && strncmp(p, tag, n) == 0)",
           ["test_hdr"],
           'If-None-Match: "v" gets a 304 for an entry whose ETag is "v1"'),
    Mutant("proxy_authorization_forwarded", "proxy/proxy_hdr.c",
           '"Connection", "Keep-Alive", "Proxy-Authenticate",\n\t"Proxy-Authorization", "Proxy-Connection",',
           '"Connection", "Keep-Alive", "Proxy-Authenticate",\n\t"Proxy-Connection",',
           ["test_hdr"],
           "the client's proxy credentials reach the origin (and a stored response)"),
    # -- proxy/proxy_purge.c --
    Mutant("purge_accepts_get", "proxy/proxy_purge.c",
           "if (evhttp_request_get_command(ev) != EVHTTP_REQ_POST) {",
           "if (0 && evhttp_request_get_command(ev) != EVHTTP_REQ_POST) {",
           ["purge_by_url_and_by_prefix_drops_entries_everywhere"],
           "a link or a crawler's GET purges entries"),
    Mutant("purge_prefix_keeps_port_80", "proxy/proxy_purge.c",
           'if (hl >= 3 && strncmp(p + hl - 3, ":80", 3) == 0 && slash != NULL)',
           'if (0 && hl >= 3 && strncmp(p + hl - 3, ":80", 3) == 0 && slash != NULL)',
           ["purge_by_url_and_by_prefix_drops_entries_everywhere"],
           "a prefix purge of http://host:80/x purges nothing"),
    Mutant("purge_prefix_host_case_kept", "proxy/proxy_purge.c",
           "\t\tout[i] = (char)tolower((unsigned char)out[i]);",
           "\t\t(void)out[i];",
           ["purge_by_url_and_by_prefix_drops_entries_everywhere"],
           "a prefix purge naming HOST in capitals purges nothing"),
    Mutant("purge_url_ignores_upstream_keying", "proxy/proxy_purge.c",
           "if (rt == NULL || !rt->key_host)\t/* keyed on the upstream */",
           "if (rt == NULL)\t/* keyed on the upstream */",
           ["purge_by_path_reaches_upstream_keyed_entries"],
           "a URL purge on a route keyed by the upstream misses its entry"),
    Mutant("purge_tags_hard_by_default", "proxy/proxy_purge.c",
           'soft = soft_arg != NULL ? strcmp(soft_arg, "0") != 0 : tag != NULL;',
           'soft = soft_arg != NULL ? strcmp(soft_arg, "0") != 0 : 0;',
           ["tag_sets_of_the_earlier_format_are_purged_too"],
           "a tag purge deletes every entry under it: a stampede on a popular tag"),
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
           "\t\tevhttp_del_accept_socket(px->http, px->http_bound);\n\t\tpx->http_bound = NULL;\n",
           "",
           ["graceful_stop_finishes_requests_in_progress"],
           "a stopping instance takes new connections it will not serve"),
    Mutant("reload_keeps_the_client_limits", "proxy/proxy_life.c",
           "\tif (px->http != NULL)\n\t\thttp_limits(px->http, new);",
           "\tif (0)\n\t\thttp_limits(px->http, new);",
           ["reload_applies_client_limits"],
           "a reload of max_body_bytes or client_timeout does not take effect"),
    # -- proxy/proxy_http.c --
    Mutant("max_connections_off_by_one", "proxy/proxy_http.c",
           "int full = dict_count(px->conns) >= (size_t)px->conf->max_connections;",
           "int full = dict_count(px->conns) > (size_t)px->conf->max_connections;",
           ["at_most_max_connections_clients_are_accepted"],
           "one client more than max_connections is let in"),
    Mutant("refused_request_served", "proxy/proxy_http.c",
           "\t\treq_refused(px, ev, c->status, c->reason);\n\t\treturn;\n",
           "\t\t;\n",
           ["bad_requests_are_refused_and_their_connections_closed"],
           "a request the door refused goes on as the stand-in GET"),
    Mutant("accept_failures_logged_every_time", "proxy/proxy_http.c",
           "\tif (now - px->accept_logged_ms >= ACCEPT_LOG_MS) {",
           "\tif (1) {",
           ["descriptor_exhaustion_backs_off_quietly_and_recovers"],
           "a descriptor shortage writes a log line per failed accept(): the log floods"),
    Mutant("key_host_bytes_unescaped", "cache/cache_key.c",
           "\t\tif (safe_class(c) & SAFE_HOST)\n\t\t\temit(s, c);",
           "\t\tif (1)\n\t\t\temit(s, c);",
           ["test_key"],
           "a Host of a.test/admin makes the key of a.test's /admin page"),
    Mutant("key_unreserved_escapes_kept", "cache/cache_key.c",
           "\t\t\tif (safe_class(c) & SAFE_UNRESERVED)\n\t\t\t\temit(s, c);",
           "\t\t\tif (0)\n\t\t\t\temit(s, c);",
           ["test_key"],
           "/%61 and /a are two keys and two fetches"),
    Mutant("key_long_urls_collide", "cache/cache_key.c",
           "\th[0] = fmix64(s->h1 ^ (uint64_t)s->len);\n\th[1] = fmix64(s->h2 + (uint64_t)s->len);",
           "\th[0] = fmix64((uint64_t)s->len);\n\th[1] = h[0];",
           ["test_key"],
           "two long URLs with the same prefix and length share one entry: one page served for another"),
    Mutant("key_covers_a_longer_name", "cache/cache_key.c",
           "(key[base_len] == '\\0' || key[base_len] == CACHE_VARIANT_SEP);",
           "1;",
           ["test_key", "test_l1"],
           "a purge of /a drops /ab too"),
    Mutant("key_slot_ignores_the_hash_tag", "cache/cache_key.c",
           "\t    close > open + 1)\n\t\treturn crc16(open + 1",
           "\t    close > open + 1 && 0)\n\t\treturn crc16(open + 1",
           ["test_key"],
           "a key's entry, lock and tags land on different cluster slots: CROSSSLOT"),
    # -- cache/cache_entry.c --
    Mutant("entry_fresh_at_its_end", "cache/cache_entry.c",
           "\tif (now_ms < e->fresh_until_ms)\n\t\treturn ENTRY_FRESH;",
           "\tif (now_ms <= e->fresh_until_ms)\n\t\treturn ENTRY_FRESH;",
           ["test_entry"],
           "an entry is fresh one millisecond past its ttl"),
    Mutant("entry_trailing_bytes_taken", "cache/cache_entry.c",
           "\tif (body_len < r->left) {",
           "\tif (0) {",
           ["test_entry"],
           "a record with bytes after its body (another writer's) is served"),
    Mutant("entry_times_unchecked", "cache/cache_entry.c",
           '\tif (!valid_times(e->stored_ms, e->fresh_until_ms, e->stale_until_ms)) {\n\t\tset_err(err, errlen, "times out of order");',
           '\tif (0) {\n\t\tset_err(err, errlen, "times out of order");',
           ["test_entry"],
           "a corrupt record with times out of order is served"),
    Mutant("entry_version_unchecked", "cache/cache_entry.c",
           "\tif (version != ENTRY_VERSION) {",
           "\tif (0) {",
           ["test_entry"],
           "a record of another format version is read as this one"),
    # -- conf/conf.c --
    Mutant("conf_maximum_off_by_one", "conf/conf.c",
           "\tif (v > k->max) {\n\t\tformat_number(k, k->max, limit, sizeof(limit));",
           "\tif (v > k->max + 1) {\n\t\tformat_number(k, k->max, limit, sizeof(limit));",
           ["test_conf"],
           "a value one above a key's maximum is taken"),
    Mutant("conf_admin_on_the_public_port", "conf/conf.c",
           "if (pline == -1 || aline == -1 || c->admin_port != c->listen_port)",
           "if (1 || pline == -1 || aline == -1 || c->admin_port != c->listen_port)",
           ["test_conf"],
           "admin_listen on the public address is accepted: /purge open to clients"),
    Mutant("conf_route_first_match", "conf/conf.c",
           "\t\tif (len > bestlen &&\n\t\t    strncmp(path, c->routes[i].prefix, len) == 0) {",
           "\t\tif (bestlen == 0 &&\n\t\t    strncmp(path, c->routes[i].prefix, len) == 0) {",
           ["test_conf"],
           "the first route that matches wins, not the longest prefix"),
    Mutant("conf_hosts_first_pattern_only", "conf/conf.c",
           "\t\t\treturn 1;\n\t\tp += len;\n\t}\n\treturn 0;",
           "\t\t\treturn 1;\n\t\tbreak;\n\t}\n\treturn 0;",
           ["test_conf"],
           "only the first name of hosts is served"),
    Mutant("conf_no_authority_allowed_with_a_list", "conf/conf.c",
           "\t\treturn c->hosts[0] == '\\0';\t/* RFC 9112 3.2: no authority */",
           "\t\treturn 1;\t/* RFC 9112 3.2: no authority */",
           ["test_conf"],
           "a request without a Host passes a hosts list"),
    Mutant("conf_sentinel_without_master_name", "conf/conf.c",
           "if (c->redis_mode == REDIS_SENTINEL && c->redis_master_name[0] == '\\0')",
           "if (0 && c->redis_mode == REDIS_SENTINEL && c->redis_master_name[0] == '\\0')",
           ["test_conf"],
           "mode = sentinel without master_name starts and never finds a primary"),
    # -- cache/cache_l1.c --
    Mutant("near_cache_serves_stale", "cache/cache_l1.c",
           "\tif (entry_state(n->e, now_ms) != ENTRY_FRESH) {\n\t\tunlink_node(l, &n);",
           "\tif (entry_state(n->e, now_ms) == ENTRY_EXPIRED) {\n\t\tunlink_node(l, &n);",
           ["test_l1"],
           "a stale entry is served from memory without a refresh"),
    Mutant("near_cache_drop_misses_variants", "cache/cache_l1.c",
           "\t\t    cache_key_covers(key, ki.len, n->key, n->len)) {",
           "\t\t    n->len == ki.len && memcmp(n->key, key, ki.len) == 0) {",
           ["test_l1"],
           "a purge leaves the key's variants served from memory"),
    Mutant("near_cache_never_evicts", "cache/cache_l1.c",
           "\twhile (l->counters.bytes > l->max_bytes &&",
           "\twhile (0 && l->counters.bytes > l->max_bytes &&",
           ["test_l1"],
           "the near cache grows past l1_max_bytes"),
    Mutant("near_cache_keeps_an_older_copy", "cache/cache_l1.c",
           "\tif (n != NULL && (n->e == e ||\n\t    (e->gen[0] != '\\0' && strcmp(n->e->gen, e->gen) == 0))) {",
           "\tif (n != NULL) {",
           ["test_l1"],
           "a refreshed entry does not replace the copy held: the old body is served"),
    Mutant("near_cache_too_large_keeps_the_old", "cache/cache_l1.c",
           "\t\tif (n != NULL) {\n\t\t\tunlink_node(l, &n);\n\t\t\tl->counters.drops++;\n\t\t}\n\t\treturn;",
           "\t\treturn;",
           ["test_l1"],
           "a new version too large to keep leaves the old one served"),
    # -- cache/cache_l2.c --
    Mutant("shared_cache_drop_misses_variants", "cache/cache_l2.c",
           "\t\t    cache_key_covers(key, kh.len, b->key, b->key_len)) {",
           "\t\t    b->key_len == kh.len && memcmp(b->key, key, kh.len) == 0) {",
           ["test_l2"],
           "a purge leaves the key's variants in the shared near cache"),
    Mutant("shared_cache_too_large_keeps_the_old", "cache/cache_l2.c",
           "\tdrop_exact(l, key, &kh);\n\tif (n > sh->max_block) {",
           "\tif (n <= sh->max_block)\n\t\tdrop_exact(l, key, &kh);\n\tif (n > sh->max_block) {",
           ["test_l2"],
           "a new version too large to keep leaves the old one served"),
    Mutant("shared_cache_prefix_drop_misses", "cache/cache_l2.c",
           "\t\tif (b->live && b->key_len >= len &&\n\t\t    memcmp(b->key, prefix, len) == 0) {",
           "\t\tif (b->live && b->key_len == len &&\n\t\t    memcmp(b->key, prefix, len) == 0) {",
           ["test_l2"],
           "a prefix purge leaves the keys under it in the shared near cache"),
    # -- cache/cache_op.c --
    Mutant("cluster_ask_taken_as_moved", "cache/cache_op.c",
           "\t\tif (err[0] == 'M') {",
           "\t\tif (1) {",
           ["cluster_slot_migrated_while_refresh_holds_lock_fetches_once"],
           "an ASK during a migration moves the whole slot: the source's keys are missed"),
    # -- cache/cache_route.c --
    Mutant("sentinel_switch_compares_the_host_only", "cache/cache_route.c",
           "if (old != NULL && old->port == port && strcmp(old->host, host) == 0)",
           "if (old != NULL && strcmp(old->host, host) == 0)",
           ["sentinel_manual_failover_is_followed_at_the_switch"],
           "a new primary on the old one's host (another port) is not followed"),
    # -- proxy/proxy_origin.c --
    Mutant("origin_budget_ignored", "proxy/proxy_origin.c",
           "if (px->conf->max_requests == 0) {\t/* no budget: it goes now */",
           "if (1) {\t/* no budget: it goes now */",
           ["flood_of_cold_keys_never_exceeds_the_fleet_budget"],
           "every fetch goes to the origin at once, past max_requests"),
    Mutant("origin_refused_slot_sent_anyway", "proxy/proxy_origin.c",
           "\tif (a != BUDGET_GRANTED)\n\t\torigin_unsent(",
           "\tif (0)\n\t\torigin_unsent(",
           ["no_slot_within_queue_timeout_answers_stale_or_503_with_retry_after"],
           "a fetch that got no slot within queue_timeout goes to the origin anyway"),
    Mutant("origin_fetches_uncounted", "proxy/proxy_origin.c",
           "\tSTAT_INC(px->stats, f->route, upstream_fetches);\n",
           "",
           ["bad_requests_are_refused_and_their_connections_closed"],
           "upstream_fetches in /stats stays 0"),
    # -- proxy/proxy_hold.c --
    Mutant("lock_wait_setting_ignored", "proxy/proxy_hold.c",
           "\tif (rt->lock_wait_ms > 0)\n\t\treturn rt->lock_wait_ms;",
           "\tif (0)\n\t\treturn rt->lock_wait_ms;",
           ["waiter_past_lock_wait_is_answered_without_a_fetch"],
           "lock_wait has no effect: waiters stay the whole default budget"),
    Mutant("lock_wait_restarted_by_every_poll", "proxy/proxy_hold.c",
           "(same || rt->lock_wait_ms > 0)",
           "((same && 0) || rt->lock_wait_ms > 0)",
           ["waiter_of_a_holder_that_never_finishes_gives_up"],
           "with lock_wait 0, each busy answer from the same holder restarts the wait: no bound"),
    # -- proxy/proxy_budget.c --
    Mutant("budget_local_share_rounds_down", "proxy/proxy_budget.c",
           "\treturn (c->max_requests + n - 1) / n;",
           "\treturn c->max_requests / n;",
           ["redis_down_each_instance_keeps_to_its_local_share"],
           "with Redis down, max_requests 3 over 2 instances gives each 1, not 2"),
    Mutant("budget_queue_timeout_never_armed", "proxy/proxy_budget.c",
           "\tif (px->conf->queue_timeout_ms > 0)\n\t\ttimer_arm(t->timer, px->conf->queue_timeout_ms);",
           "\tif (0)\n\t\ttimer_arm(t->timer, px->conf->queue_timeout_ms);",
           ["no_slot_within_queue_timeout_answers_stale_or_503_with_retry_after"],
           "a request waits for a slot for ever"),
    Mutant("budget_instances_never_counted", "proxy/proxy_budget.c",
           "\t\tb->instances = f->instances;",
           "\t\t(void)f;",
           ["redis_down_each_instance_keeps_to_its_local_share"],
           "with Redis down, every instance takes all of max_requests"),
    # -- cache/cache_lease.c --
    Mutant("lease_one_over_the_budget", "cache/cache_lease.c",
           '"  if redis.call(\'ZCARD\', KEYS[1]) + ahead < max then\\n"',
           '"  if redis.call(\'ZCARD\', KEYS[1]) + ahead <= max then\\n"',
           ["flood_of_cold_keys_never_exceeds_the_fleet_budget"],
           "the fleet sends the origin max_requests + 1 at once"),
    Mutant("lease_dead_tickets_kept", "cache/cache_lease.c",
           '"  redis.call(\'ZREM\', KEYS[2], dead[i])\\n"',
           '""',
           ["instance_killed_holding_slots_gives_them_back_within_the_lease"],
           "a dead instance's queued tickets stay ahead of the living for good"),
    Mutant("lease_dead_instances_counted", "cache/cache_lease.c",
           '\t"redis.call(\'ZREMRANGEBYSCORE\', KEYS[1], \'-inf\', now)\\n"\n\t"redis.call(\'ZADD\', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])\\n"',
           '\t"redis.call(\'ZADD\', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])\\n"',
           ["instance_killed_holding_slots_gives_them_back_within_the_lease"],
           "a dead instance is counted alive: the others' local shares stay small"),
    # -- key rules (cache/cache_keyrule.c, cache_graphql.c, common/sha256.c,
    #    conf/conf_key.c, proxy/proxy_key.c, proxy_refresh.c) -----------------
    Mutant("credential_left_out_of_the_key", "proxy/proxy_key.c",
           "kp.credential_digest = cred_hex[0] != '\\0' ? cred_hex : NULL;",
           "kp.credential_digest = NULL;",
           ["twenty_clients_per_token_cost_one_fetch_per_token"],
           "every token shares one entry: one user's answer served to another"),
    Mutant("credential_cookie_not_keyed", "proxy/proxy_key.c",
           "\t\t\tkeyrule_digest_part(d, \"c\", 1);\n"
           "\t\t\tkeyrule_digest_part(d, p + nlen + 1, end - nlen - 1);\n",
           "",
           ["a_credential_cookie_is_keyed_and_is_the_only_cookie_sent"],
           "sessions in credential_cookie share one entry"),
    Mutant("every_cookie_sent_on_a_shared_fetch", "proxy/proxy_key.c",
           "if (spec == NULL || spec->cookie == NULL)\n\t\treturn;",
           "if (1)\n\t\treturn;",
           ["a_credential_cookie_is_keyed_and_is_the_only_cookie_sent"],
           "a per-credential fetch sends cookies its key ignores"),
    Mutant("long_post_body_cached", "proxy/proxy_key.c",
           "if ((int64_t)len > rt->post_max_body ||", "if (0 ||",
           ["plain_post_is_keyed_on_a_hash_of_its_body"],
           "POST bodies over max_body_bytes are cached (and held in memory)"),
    Mutant("mutation_cached", "cache/cache_graphql.c",
           "if (depth == 0 && (word_is(q + i, n, \"mutation\") ||",
           "if (0 && (word_is(q + i, n, \"mutation\") ||",
           ["identical_graphql_queries_cost_one_fetch_and_mutations_always_go",
            "test_keyrule"],
           "a mutation is coalesced and cached: sent once, answered from the cache"),
    Mutant("graphql_variables_not_keyed", "cache/cache_graphql.c",
           "keyrule_digest_part(d, buf + 2 * len, vlen);",
           "keyrule_digest_part(d, buf + 2 * len, 0 * vlen);",
           ["identical_graphql_queries_cost_one_fetch_and_mutations_always_go",
            "test_keyrule"],
           "queries with other variables get the first one's answer"),
    Mutant("graphql_member_named_twice_accepted", "cache/cache_graphql.c",
           "if (*seen)\n\t\t\treturn -1;", "if (0)\n\t\t\treturn -1;",
           ["test_keyrule"],
           "a body whose two query members two parsers read differently is cached"),
    Mutant("ignored_parameter_left_in_the_key", "cache/cache_keyrule.c",
           "(only != NULL ? listed : !listed)", "(only != NULL ? listed : 1)",
           ["cache_busted_requests_for_one_page_cost_one_fetch", "test_keyrule"],
           "every cache-buster is its own cold miss"),
    Mutant("header_value_not_trimmed", "cache/cache_keyrule.c",
           "\tin += strspn(in, \" \\t\");\n", "",
           ["key_headers_key_on_normalised_header_values", "test_keyrule"],
           "padded header values split one entry in several"),
    Mutant("parts_not_filed_under_the_url", "cache/cache_keyrule.c",
           "\tkeyrule_url_tag(url, tag);\n", "",
           ["purge_by_url_drops_every_credentials_entry", "test_keyrule"],
           "a purge by URL leaves every credential's entry"),
    Mutant("digest_parts_run_together", "cache/cache_keyrule.c",
           "hmac256_update(&d->m, n, sizeof(n));", "hmac256_update(&d->m, n, 0);",
           ["test_keyrule"],
           "two credentials or bodies split otherwise share a digest"),
    Mutant("sha256_padding_bit_lost", "common/sha256.c",
           "s->buf[s->used++] = 0x80;", "s->buf[s->used++] = 0x00;",
           ["test_keyrule"], "not SHA-256: digests no one else can check"),
    Mutant("sha256_round_constant_wrong", "common/sha256.c",
           "0x428a2f98, 0x71374491", "0x428a2f99, 0x71374491",
           ["test_keyrule"], "not SHA-256"),
    Mutant("hmac_outer_pad_wrong", "common/sha256.c",
           "#define HMAC_OPAD\t0x5c", "#define HMAC_OPAD\t0x36",
           ["test_keyrule"], "not HMAC: the outer key equals the inner"),
    Mutant("secret_readable_by_others_accepted", "conf/conf_key.c",
           "if ((st.st_mode & (S_IRWXO | S_IWGRP)) != 0) {", "if (0) {",
           ["per_credential_needs_a_private_secret_file", "test_conf"],
           "a secret any local user can read keys every credential's digest"),
    Mutant("per_credential_without_secret_accepted", "conf/conf_key.c",
           "r->cache_authorized == CONF_AUTHZ_CREDENTIAL &&\n\t    c->key_secret_len == 0",
           "0",
           ["per_credential_needs_a_private_secret_file", "test_conf"],
           "credential digests keyed with nothing: a token can be tested against a key"),
    Mutant("credential_header_in_key_headers_accepted", "conf/conf_key.c",
           "if (fields_name(r->key_headers, credentials[i])) {",
           "if (fields_name(r->key_headers, credentials[i]) && 0) {",
           ["test_conf"], "a token in clear in every Redis key"),
    Mutant("stale_post_refresh_sends_the_requests_body", "proxy/proxy_refresh.c",
           "base != NULL ? base->request :", "base != NULL ? NULL :",
           ["a_stale_post_entry_refreshes_in_the_background_with_its_stored_body"],
           "a refresh does not replay the body stored with the entry"),
    # -- the control plane: admin tokens and gates, refresh, warm-up, /entry,
    #    maintenance (proxy_auth.c, conf_admin.c, proxy_control.c,
    #    proxy_entry.c, proxy_maint.c, cache_control.c) ------------------------
    Mutant("admin_token_check_skipped", "proxy/proxy_auth.c",
           "if (c->nadmin_tokens == 0 || page)", "if (1 || page)",
           ["purge_needs_a_token_with_its_scope"],
           "anyone who reaches the admin listener purges everything"),
    Mutant("admin_scope_ignored", "proxy/proxy_auth.c",
           "if (change && scope != SCOPE_ALL) {", "if (0) {",
           ["purge_needs_a_token_with_its_scope"],
           "a read token (a dashboard's, a scraper's) purges the cache"),
    Mutant("admin_health_needs_a_token", "proxy/proxy_auth.c",
           "if (strcmp(path, \"/health\") == 0 && !change)\n\t\treturn 1;", "",
           ["purge_needs_a_token_with_its_scope"],
           "load balancers' probes of /health get 401 and take the instance out"),
    Mutant("admin_rebinding_host_accepted", "proxy/proxy_auth.c",
           "if (host == NULL || !host_is_ours(c, host, strlen(host)))",
           "if (host == NULL || !(host_is_ours(c, host, strlen(host)) || 1))",
           ["cross_site_and_rebinding_changes_are_refused"],
           "a page whose name was rebound to the admin address purges the cache"),
    Mutant("admin_cross_site_origin_accepted", "proxy/proxy_auth.c",
           "if ((a = authority(from, &n)) == NULL || !same_site(a, n, host))",
           "if ((a = authority(from, &n)) == NULL || !(same_site(a, n, host) || 1))",
           ["cross_site_and_rebinding_changes_are_refused"],
           "any web page an operator opens can purge the cache (CSRF)"),
    Mutant("admin_allow_ignored", "proxy/proxy_auth.c",
           "if (c->nadmin_allow > 0) {", "if (0) {",
           ["cross_site_and_rebinding_changes_are_refused"],
           "admin_allow lets every peer in"),
    Mutant("token_file_mode_unchecked", "conf/conf_admin.c",
           "if ((st.st_mode & TOKEN_MODE_LOOSE) != 0) {", "if (0) {",
           ["bad_token_files_refuse_to_start_and_keep_the_old_tokens"],
           "a world-readable token file is taken: every local user is admin"),
    Mutant("token_read_scope_lost", "conf/conf_admin.c",
           "\t\tt->scope = SCOPE_READ;", "\t\tt->scope = SCOPE_ALL;",
           ["purge_needs_a_token_with_its_scope"],
           "a token marked read may change everything"),
    Mutant("token_short_accepted", "conf/conf_admin.c",
           "if (lens[0] < CONF_TOKEN_MIN ||", "if (lens[0] < 1 ||",
           ["bad_token_files_refuse_to_start_and_keep_the_old_tokens"],
           "a guessable five-letter token is taken without a word"),
    Mutant("refresh_without_the_lock", "proxy/proxy_control.c",
           "a.mode = RF_LOCKED;", "a.mode = RF_DIRECT;",
           ["refresh_of_100_entries_under_load_across_two_instances"],
           "an operator's refresh fetches beside the fleet's own refreshes "
           "and stores nothing: the entries stay stale"),
    Mutant("warm_fetches_what_is_cached", "proxy/proxy_control.c",
           "} else if (r == CACHE_FOUND && job->kind == JOB_WARM) {",
           "} else if (0) {",
           ["warm_fetches_what_is_not_cached"],
           "a warm-up fetches every URL again, cached or not"),
    Mutant("warm_unbounded", "proxy/proxy_control.c",
           "return job->urls <= WARM_URLS_MAX ? 0 : -1;", "return 0;",
           ["warm_fetches_what_is_not_cached"],
           "a warm-up of any size is taken at once"),
    Mutant("refresh_lists_nothing", "cache/cache_purge.c",
           "pg->visit(it->key, pg->arg);\t/* reached, as it is */", "(void)0;",
           ["refresh_of_100_entries_under_load_across_two_instances"],
           "a refresh by prefix only softens: nothing is refreshed until asked"),
    Mutant("entry_state_always_fresh", "proxy/proxy_entry.c",
           "state_name(entry_state(e, util_now_ms()))", "state_name(ENTRY_FRESH)",
           ["entry_shows_what_redis_holds_field_by_field"],
           "/entry calls a stale entry fresh"),
    Mutant("entry_lock_holder_unknown", "proxy/proxy_entry.c",
           "PRId64 \"}\", refresh_running(a->px, a->key) ?",
           "PRId64 \"}\", 0 ?",
           ["entry_shows_what_redis_holds_field_by_field"],
           "/entry cannot tell that this process holds the lock"),
    Mutant("entry_tags_missing", "proxy/proxy_entry.c",
           "hdr_tags(&e->headers, add_tag, tags);", "(void)add_tag;",
           ["entry_shows_what_redis_holds_field_by_field"],
           "/entry hides the tags a purge by tag would reach"),
    Mutant("inspect_lock_unread", "cache/cache_control.c",
           "reply_text(reply->element[2], in.lock_token, sizeof(in.lock_token));",
           "(void)0;",
           ["entry_shows_what_redis_holds_field_by_field"],
           "/entry shows no lock while a fetch holds one"),
    Mutant("maintenance_not_kept", "cache/cache_control.c",
           "\"  redis.call('HSET', KEYS[1], ARGV[1], ARGV[3])\\n\"", "\"\"",
           ["maintenance_serves_what_is_stored_and_spares_the_origin"],
           "a new or restarted instance sends the origin what the fleet avoids"),
    Mutant("maintenance_not_announced", "cache/cache_control.c",
           "\"redis.call('PUBLISH', ARGV[4], ARGV[5])\\n\"\n\t\"return 1\\n\";",
           "\"return 1\\n\";",
           ["maintenance_serves_what_is_stored_and_spares_the_origin"],
           "the other instances never hear that a route went back to normal"),
    Mutant("maintenance_still_refreshes", "proxy/proxy_origin.c",
           "if (maint_avoids_url(px, ur->url)) {", "if (0) {",
           ["maintenance_serves_what_is_stored_and_spares_the_origin"],
           "a route in maintenance still refreshes and fetches from the origin"),
    Mutant("maintenance_serves_nothing_expired", "proxy/proxy_flight.c",
           "if (fl->prev == NULL || maint_avoids(fl->px, fl->uri))",
           "if (fl->prev == NULL || 0)",
           ["maintenance_serves_what_is_stored_and_spares_the_origin"],
           "in maintenance an entry past stale_while_revalidate gets a 503"),
    Mutant("maintenance_route_exact_only", "proxy/proxy_maint.c",
           "if (strncmp(uri, m->list[i].route, strlen(m->list[i].route)) == 0)",
           "if (strcmp(uri, m->list[i].route) == 0)",
           ["maintenance_serves_what_is_stored_and_spares_the_origin"],
           "maintenance of /m/ spares the origin nothing under it"),
    Mutant("maintenance_news_ignored", "proxy/proxy_maint.c",
           "\t\tmaint_load(px->maint);", "\t\t(void)0;",
           ["maintenance_serves_what_is_stored_and_spares_the_origin"],
           "a process never reads the modes: a new instance ignores them"),
    # -- the operator's refresh and per-credential keys (proxy/proxy_control.c) ----
    Mutant("operator_refresh_fetches_credential_entries", "proxy/proxy_control.c",
           "\t} else if (strchr(k->key, KEYRULE_SEP) != NULL) {",
           "\t} else if (0) {",
           ["an_operators_refresh_never_fetches_a_credentials_entry_without_it"],
           "POST /refresh fetches a credential's entry without the credential and stores "
           "the anonymous answer under that credential's key"),

    # -- the audit's survivors --
    # (audit_budget_local_share_rounds_down is budget_local_share_rounds_down above)
    Mutant("audit_frame_length_at_max_body_refused", "proxy/proxy_frame.c",
           "\t\tif (h->length > f->body_max)\n",
           "\t\tif (h->length >= f->body_max)\n",
           ["test_frame", "bad_requests_are_refused_and_their_connections_closed"],
           "a body of exactly max_body_bytes (Content-Length) gets 413"),
    Mutant("audit_life_redis_timeout_reloads_live", "proxy/proxy_life.c",
           "\tRF(RK_REDIS_TIMEOUT, FK_NUMBER, redis_timeout_ms),\n",
           "",
           ["restart_pending_clears_when_the_file_goes_back"],
           "a reload that changes [redis] timeout is not kept back nor listed "
           "in restart_pending"),
    Mutant("audit_hold_new_holder_restarts_lock_wait", "proxy/proxy_hold.c",
           "if (h->expired || (h->started && (same || rt->lock_wait_ms > 0)))",
           "if (h->expired || (h->started && same))",
           ["waiter_with_lock_wait_keeps_its_arrival_budget_across_new_holders"],
           "a set lock_wait starts again for each new holder: a waiter waits "
           "past its client-facing budget"),
    Mutant("audit_origin_queued_fetch_loses_headers", "proxy/proxy_origin.c",
           "\t\tTAILQ_FOREACH(h, ur->headers, next)\n"
           "\t\t\tif (evhttp_add_header(&f->headers, h->key,\n"
           "\t\t\t    h->value) == -1)\n"
           "\t\t\t\treturn -1;\n",
           "\t\t(void)h;\n",
           ["every_kind_of_origin_request_waits_for_a_slot"],
           "with max_requests set, the request goes upstream without its headers "
           "(X-Forwarded-*, Accept, credentials)"),
    Mutant("audit_sentinel_asks_the_same_sentinel_again", "cache/cache_sentinel.c",
           "\tif (!ok)\n\t\ts->ask_at++;\n\ts->hooks->answered(ok, s->arg);\n",
           "\ts->hooks->answered(ok, s->arg);\n",
           ["sentinel_manual_failover_is_followed_at_the_switch"],
           "a sentinel that does not answer is asked again instead of the next"),
    Mutant("sentinel_feed_stays_on_a_hung_sentinel", "cache/cache_sentinel.c",
           "\tevtimer_add(s->feed_timer, &tv);\n",
           "\t(void)tv;\n",
           ["sentinel_manual_failover_is_followed_at_the_switch"],
           "a first sentinel that hangs keeps the +switch-master feed: a manual "
           "failover is not heard"),
    Mutant("audit_tag_snapshot_taken_again", "cache/cache_tag.c",
           "failed |= op_argstr(op, pg->snapped ? \"0\" : \"1\");",
           "failed |= op_argstr(op, \"1\");",
           ["hard_purge_of_a_50000_key_tag_deletes_them_all"],
           "a hard tag purge takes the keys stored during it as a new snapshot "
           "and purges them too"),
    Mutant("audit_conf_cidr_masks_the_low_bits", "conf/conf.c",
           "(0xff << (8 - rest)) & 0xff) == 0)",
           "(0xff >> (8 - rest)) & 0xff) == 0)",
           ["test_conf", "trusted_proxies_off_a_byte_boundary_cover_their_prefix_only"],
           "a trusted_proxies prefix not on a byte boundary (/12, /20) compares "
           "the wrong bits"),
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
